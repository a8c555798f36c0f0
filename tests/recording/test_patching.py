"""vcrpy's patching driven by our cassettes: the patchers are built once and reused, so each block
must still route to its own cassette, nested blocks included, and leave nothing patched behind."""

from __future__ import annotations

from typing import Any

import httpx2

from pytest_agentevals.recording.patching import patched


class Answering:
    """A cassette that answers every request with its own name, and counts what it saw."""

    write_protected = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[str] = []

    def can_play_response_for(self, request: Any) -> bool:
        self.seen.append(request.uri)
        return True

    def play_response(self, request: Any) -> dict[str, Any]:
        return {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/plain"]},
            "body": {"string": self.name.encode()},
        }

    def append(self, request: Any, response: dict[str, Any]) -> None:  # pragma: no cover - never live
        raise AssertionError("nothing goes live here")

    def filter_request(self, request: Any) -> Any:
        return request


def _get(client: httpx2.Client, path: str) -> str:
    return client.get(f"http://127.0.0.1:9/{path}").text


def test_each_block_answers_with_its_own_cassette_nested_or_one_after_another() -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, text="live")))
    first, second, inner = Answering("first"), Answering("second"), Answering("inner")
    with patched(first):
        assert _get(client, "a") == "first"
        with patched(inner):
            assert _get(client, "b") == "inner"
        assert _get(client, "c") == "first"
    assert _get(client, "d") == "live"
    with patched(second):  # the set the first block used, entered again
        assert _get(client, "e") == "second"
    assert _get(client, "f") == "live"
    assert [uri.rsplit("/", 1)[1] for uri in first.seen] == ["a", "c"]
    assert [uri.rsplit("/", 1)[1] for uri in inner.seen] == ["b"]
    assert [uri.rsplit("/", 1)[1] for uri in second.seen] == ["e"]


def test_a_block_left_by_an_error_unpatches_and_frees_its_patches() -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, text="live")))
    try:
        with patched(Answering("failing")):
            raise KeyError("boom")
    except KeyError:
        pass
    assert _get(client, "a") == "live"
    after = Answering("after")
    with patched(after):
        assert _get(client, "b") == "after"


TRANSPORTS = [
    (transport, name)
    for transport in (
        httpx2.HTTPTransport,
        httpx2.AsyncHTTPTransport,
        httpx2.MockTransport,
        httpx2.WSGITransport,
        httpx2.ASGITransport,
    )
    for name in ("handle_request", "handle_async_request")
]


def test_leaving_a_block_puts_back_exactly_what_was_there_inherited_attributes_included() -> None:
    from pytest_agentevals.recording.patching import _Patches

    before = [vars(transport).get(name) for transport, name in TRANSPORTS]
    with patched(Answering("once")):
        assert vars(httpx2.HTTPTransport)["handle_request"] is not before[0]
    assert [vars(transport).get(name) for transport, name in TRANSPORTS] == before

    class Base:
        def method(self) -> str:
            return "base"

    class Child(Base):
        pass

    patches = _Patches()
    patches.settings = [(Child, "method", lambda self: "patched")]
    with patches.entered():
        assert Child().method() == "patched"
    assert Child().method() == "base"
    assert "method" not in vars(Child)  # inherited again, not a copy of the base's


def test_the_stand_ins_sit_where_vcrpy_patches() -> None:
    # A block sets stand-ins on what vcrpy's builder patches, until a request reaches one: the same
    # methods of the same classes, or a request could get past the cassette before vcrpy loads.
    import importlib

    from vcr.patch import PATCHER_NAMES, CassettePatcherBuilder

    from pytest_agentevals.recording.patching import OTHER_TRANSPORTS, PATCHED, TRANSPORT_METHODS, _Adapter

    assert not OTHER_TRANSPORTS  # else vcrpy loads at once, and the stand-ins are not used
    adapter = _Adapter(tuple(name for name in PATCHER_NAMES if name not in PATCHED))
    built = {(patcher.getter(), patcher.attribute) for patcher in CassettePatcherBuilder(adapter).build()}
    expected = {
        (getattr(importlib.import_module(module), name), method)
        for module in PATCHED
        for name, method in TRANSPORT_METHODS
    }
    assert built == expected


# Run in a fresh interpreter: the suite's own process loaded vcrpy long ago.
NOT_LOADED = """
import asyncio, sys
import httpx2
sys.path.insert(0, {tests!r})
from recording.test_patching import Answering, _get
from pytest_agentevals.recording.patching import patched

live = httpx2.MockTransport(lambda request: httpx2.Response(200, text="live"))
client = httpx2.Client(transport=live)
before = {{name: vars(httpx2.MockTransport)[name] for name in ("handle_request", "handle_async_request")}}
first, inner, later = Answering("first"), Answering("inner"), Answering("later")
with patched(first):
    pass
assert "vcr" not in sys.modules, "vcrpy loaded by a block no request left"
with patched(first):
    with patched(inner):  # vcrpy loads inside two blocks: it must wrap the transports, not stand-ins
        assert _get(client, "b") == "inner"
        assert "vcr" in sys.modules
        from vcr.stubs import httpx_stubs
        from pytest_agentevals.recording.vcr_request import make_vcr_request
        assert httpx_stubs._make_vcr_request is make_vcr_request  # held from the request that loaded vcrpy
    assert _get(client, "c") == "first"
    # One set of patches for nested blocks: ours stays held until the outermost block leaves.
    assert httpx_stubs._make_vcr_request is make_vcr_request
assert httpx_stubs._make_vcr_request.__module__ == "vcr.stubs.httpx_stubs"

async def fetch(path):
    async with httpx2.AsyncClient(transport=live) as aclient:
        return (await aclient.get("http://127.0.0.1:9/" + path)).text

assert _get(client, "d") == "live"
with patched(later):
    assert httpx_stubs._make_vcr_request is make_vcr_request  # vcrpy loaded: held from the start
    assert _get(client, "e") == "later"
    assert asyncio.run(fetch("f")) == "later"
assert asyncio.run(fetch("g")) == "live"
assert {{name: vars(httpx2.MockTransport)[name] for name in before}} == before
assert httpx_stubs._make_vcr_request.__module__ == "vcr.stubs.httpx_stubs"
assert [uri.rsplit("/", 1)[1] for uri in first.seen] == ["c"]
assert [uri.rsplit("/", 1)[1] for uri in inner.seen] == ["b"]
assert [uri.rsplit("/", 1)[1] for uri in later.seen] == ["e", "f"]
print("ok")
"""


def test_vcrpy_loads_with_the_first_request_that_reaches_a_transport() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = NOT_LOADED.format(tests=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "ok"
