"""vcrpy's patching of httpx and httpx2 (the anthropic SDK's transports), driven by a cassette of ours.

vcrpy's transport stubs ask a cassette whether it can play a response, and hand it every real
exchange to append. Any object with that interface works, which lets recording and replay use
vcrpy's well-tested patching while keeping our own storage and matching.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from typing import Any, Protocol

# Only the httpx family: the anthropic SDK speaks over httpx (1.x) or httpx2 (2.x). Patching
# http.client too would record the same call twice and catch our own loopback servers. Decided
# once: vcrpy would otherwise retry importing a missing httpx at every recording or replay.
PATCHED = tuple(name for name in ("httpx", "httpx2") if importlib.util.find_spec(name) is not None)


class CassetteLike(Protocol):
    def can_play_response_for(self, request: Any) -> bool: ...

    def play_response(self, request: Any) -> Any: ...

    def append(self, request: Any, response: dict[str, Any]) -> None: ...

    def filter_request(self, request: Any) -> Any: ...

    @property
    def write_protected(self) -> bool: ...


class _Adapter:
    """The attributes vcrpy's patch builder reads off a cassette, around one of ours."""

    custom_patches = ()

    def __init__(self, cassette: CassetteLike, label: str, skip_patchers: tuple[str, ...]) -> None:
        self._cassette = cassette
        self._path = label
        self.skip_patchers = skip_patchers

    def can_play_response_for(self, request: Any) -> bool:
        return self._cassette.can_play_response_for(request)

    def play_response(self, request: Any) -> Any:
        return self._cassette.play_response(request)

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self._cassette.append(request, response)

    def filter_request(self, request: Any) -> Any:
        return self._cassette.filter_request(request)

    @property
    def write_protected(self) -> bool:
        return self._cassette.write_protected


@contextlib.contextmanager
def patched(cassette: CassetteLike, label: str = "agentevals") -> Iterator[None]:
    """Route every httpx/httpx2 request through `cassette` while the block runs."""
    # Imported here, not at the top: vcrpy's stubs pull in a dozen HTTP libraries (about 0.2 s),
    # which every pytest session with the plugin installed would pay before running a test.
    from vcr.patch import PATCHER_NAMES, CassettePatcherBuilder

    skip = tuple(name for name in PATCHER_NAMES if name not in PATCHED)
    with contextlib.ExitStack() as stack:
        for patcher in CassettePatcherBuilder(_Adapter(cassette, label, skip)).build():
            stack.enter_context(patcher)
        yield
