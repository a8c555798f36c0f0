"""Our builder of vcrpy's request (vcr_request.py) stands in for vcrpy's own only inside a patched()
block, and makes exactly the request vcrpy's would, for headers of every awkward kind."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
import vcr.stubs.httpx_stubs as stubs

from pytest_agentevals.recording import vcr_request
from pytest_agentevals.recording.patching import patched

from .test_patching import Answering

VCRPY_BUILDER = stubs._make_vcr_request

# (name, value) pairs as a client may send them: names in mixed case, repeated (in either case),
# values in Latin-1 or UTF-8 bytes, empty, or with commas of their own.
AWKWARD: dict[str, list[tuple[Any, Any]]] = {
    "plain": [("Host", "example.com"), ("Content-Type", "application/json"), ("x-api-key", "k" * 12)],
    "mixed case and repeats": [
        ("Accept", "text/plain"),
        ("ACCEPT", "application/json"),
        ("X-Trace", "a, b"),
        ("x-trace", ""),
        ("Set-Cookie", "one=1"),
        ("set-cookie", "two=2"),
        ("X-Stainless-Retry-Count", "0"),
    ],
    "latin-1 value": [("X-Name", b"caf\xe9"), ("X-Other", "plain")],
    "utf-8 value": [("X-Name", "café".encode()), ("x-name", "naïve".encode())],
    "non-ascii name": [(b"X-\xc4hnlich", b"1"), ("Accept", "*/*")],
    "none": [],
}


def _request(module: Any, pairs: list[tuple[Any, Any]]) -> Any:
    return module.Request("POST", "http://127.0.0.1:9/v1/messages?beta=true", headers=pairs, content=b"{}")


def _built(builder: Any, real: Any) -> tuple[str, Any]:
    """What a builder made of `real`, as comparable data: its attributes and its headers' store in
    order, or the error it raised."""
    try:
        made = builder(real, b'{"a":1}')
    except Exception as exc:
        return "raised", (type(exc), str(exc))
    attributes = {key: value for key, value in vars(made).items() if key != "_headers"}
    headers = made.headers
    return "built", (
        type(made),
        type(headers),
        attributes,
        list(headers._store.items()),
        list(headers.items()),
        made.body,
        made.uri,
    )


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("case", list(AWKWARD))
def test_ours_makes_what_vcrpys_makes(module: Any, case: str) -> None:
    real = _request(module, AWKWARD[case])
    expected = _built(VCRPY_BUILDER, real)
    with patched(Answering("x")):
        builder = stubs._make_vcr_request
        assert builder is vcr_request.make_vcr_request  # else this would compare vcrpy with itself
        # A fresh request each time: httpx's headers remember their encoding once asked for it.
        assert _built(builder, _request(module, AWKWARD[case])) == expected
    assert expected[0] == ("raised" if case == "non-ascii name" else "built")


def test_vcrpys_builder_is_back_after_every_block_nested_or_left_out_of_order() -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, text="live")))
    first, inner = Answering("first"), Answering("inner")
    with patched(first):
        with patched(inner):
            assert client.get("http://127.0.0.1:9/a").text == "inner"
            assert stubs._make_vcr_request is vcr_request.make_vcr_request
        assert stubs._make_vcr_request is vcr_request.make_vcr_request
        assert client.get("http://127.0.0.1:9/b").text == "first"
    assert stubs._make_vcr_request is VCRPY_BUILDER
    # Holds are counted, not saved and restored: whichever of two overlapping holds ends first,
    # vcrpy's is back only when both have ended (blocks in two threads, or left out of order).
    assert vcr_request.hold()
    assert vcr_request.hold()
    vcr_request.release()
    assert stubs._make_vcr_request is vcr_request.make_vcr_request
    vcr_request.release()
    assert stubs._make_vcr_request is VCRPY_BUILDER
    assert [uri.rsplit("/", 1)[1] for uri in first.seen + inner.seen] == ["b", "a"]


def test_a_block_left_by_an_error_puts_vcrpys_builder_back() -> None:
    held = []
    try:
        with patched(Answering("failing")):
            held.append(stubs._make_vcr_request)
            raise KeyError("boom")
    except KeyError:
        pass
    assert held == [vcr_request.make_vcr_request]
    assert stubs._make_vcr_request is VCRPY_BUILDER


def test_the_exchange_reads_vcrpys_headers_as_lower_items_gives_them() -> None:
    from vcr.request import HeadersDict

    from pytest_agentevals.recording.exchange import _lowered

    headers = HeadersDict({"Content-Type": "application/json", "X-Api-Key": "k" * 12})
    headers["content-type"] = "text/plain"  # the first name's case kept, the last value
    assert list(_lowered(headers).items()) == list(headers.lower_items())
    assert _lowered(headers) == {"content-type": "text/plain", "x-api-key": "k" * 12}
