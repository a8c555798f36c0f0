"""vcrpy's patching of httpx and httpx2 (the anthropic SDK's transports), driven by a cassette of ours.

vcrpy's transport stubs ask a cassette whether it can play a response, and hand it every real
exchange to append. Any object with that interface works, which lets recording and replay use
vcrpy's well-tested patching while keeping our own storage and matching.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
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
    """The attributes vcrpy's patch builder reads off a cassette, around one of ours (attached for
    the duration of one `patched` block: the patches built around an adapter are reused)."""

    custom_patches = ()

    def __init__(self, skip_patchers: tuple[str, ...]) -> None:
        self._cassette: CassetteLike | None = None
        self._path = "agentevals"
        self.skip_patchers = skip_patchers

    def attach(self, cassette: CassetteLike | None, label: str) -> None:
        self._cassette = cassette
        self._path = label

    def _attached(self) -> CassetteLike:
        if self._cassette is None:  # only the patched block's own requests reach here
            raise RuntimeError("agentevals: a vcrpy patch outlived its patched() block")
        return self._cassette

    def can_play_response_for(self, request: Any) -> bool:
        return self._attached().can_play_response_for(request)

    def play_response(self, request: Any) -> Any:
        return self._attached().play_response(request)

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self._attached().append(request, response)

    def filter_request(self, request: Any) -> Any:
        return self._attached().filter_request(request)

    @property
    def write_protected(self) -> bool:
        return self._attached().write_protected


class _Patches:
    """vcrpy's patchers of httpx and httpx2 around one adapter. Building them (closures, wrapped
    functions, `mock.patch` objects) cost about a millisecond, paid by every step case; the
    patchers wrap vcrpy's saved originals, never what is patched in at build time, so a set built
    once behaves as a fresh one each time it is entered, and is entered again by later blocks.

    Each patcher sets one attribute of one class, so a set is entered by setting them and left by
    putting back what was there, as `mock.patch.object` does it, without its per-entry bookkeeping
    (a quarter of a millisecond per block). A `mock` whose patchers do not say what they set is
    entered its own way."""

    def __init__(self) -> None:
        from vcr.patch import PATCHER_NAMES, CassettePatcherBuilder

        self.modules = _modules()
        self.adapter = _Adapter(tuple(name for name in PATCHER_NAMES if name not in PATCHED))
        self.patchers = list(CassettePatcherBuilder(self.adapter).build())
        self.settings: list[tuple[Any, str, Any]] | None = None
        try:
            self.settings = [(patcher.getter(), patcher.attribute, patcher.new) for patcher in self.patchers]
        except AttributeError:  # pragma: no cover - another unittest.mock
            self.settings = None
        for _, _, new in self.settings or ():
            _owners[id(new)] = self

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        if self.settings is None:  # pragma: no cover - another unittest.mock
            with contextlib.ExitStack() as stack:
                for patcher in self.patchers:
                    stack.enter_context(patcher)
                yield
            return
        saved: list[tuple[Any, str, Any, bool]] = []
        try:
            for target, name, new in self.settings:
                own = vars(target)
                local = name in own  # else inherited: removing ours uncovers it again
                saved.append((target, name, own[name] if local else None, local))
                setattr(target, name, new)
            yield
        finally:
            for target, name, original, local in reversed(saved):
                if local:
                    setattr(target, name, original)
                else:
                    delattr(target, name)
                _retire_if_left_behind(original)


_free: list[_Patches] = []  # sets not in use; a block nested in another (or in another thread) takes its own
_free_lock = threading.Lock()
_owners: dict[int, _Patches] = {}  # id of a patched-in function -> its set


def _retire_if_left_behind(restored: Any) -> None:
    """Blocks left out of order (an outer one before an inner one) leave the outer block's functions
    patched in when the inner one puts back what it found. They keep answering with the outer
    block's cassette, as vcrpy's patches always did; so that set is never handed to another block,
    whose cassette those functions would otherwise start answering for."""
    owner = _owners.get(id(restored))
    if owner is not None:
        with _free_lock:
            if owner in _free:
                _free.remove(owner)


@contextlib.contextmanager
def patched(cassette: CassetteLike, label: str = "agentevals") -> Iterator[None]:
    """Route every httpx/httpx2 request through `cassette` while the block runs."""
    modules = _modules()
    with _free_lock:
        patches = None
        while _free and patches is None:
            patches = _free.pop()
            if patches.modules != modules:
                patches = None  # built with modules since dropped (pytester does between runs)
    if patches is None:
        # vcrpy is imported here, not at the top: its stubs pull in a dozen HTTP libraries (about
        # 0.2 s), which every pytest session with the plugin installed would pay before any test.
        patches = _Patches()
    patches.adapter.attach(cassette, label)
    try:
        with patches.entered():
            yield
    finally:
        # The cassette stays attached until the set is reused: functions left patched in by blocks
        # left out of order still answer with it (see _retire_if_left_behind).
        with _free_lock:
            if not _left_in(patches):
                _free.append(patches)


def _modules() -> tuple[int, ...]:
    """Which vcrpy and httpx modules are loaded now: a set is reused only with the ones it was built
    with (its functions wrap the originals that vcrpy saved when it was imported)."""
    return tuple(id(sys.modules.get(name)) for name in ("vcr.patch", "vcr.stubs.httpx_stubs", *PATCHED))


def _left_in(patches: _Patches) -> bool:
    """Whether some of the set's functions are still patched in after its block (see above)."""
    return any(vars(target).get(name) is new for target, name, new in patches.settings or ())
