"""vcrpy's patching of httpx and httpx2 (the anthropic SDK's transports), driven by a cassette of ours.

vcrpy's transport stubs ask a cassette whether it can play a response, and hand it every real
exchange to append. Any object with that interface works, which lets recording and replay use
vcrpy's well-tested patching while keeping our own storage and matching.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from ..errors import AmbiguousRun
from . import active, vcr_request
from .providers.anthropic import is_messages_call

# Only the httpx family: the anthropic SDK speaks over httpx (1.x) or httpx2 (2.x). Patching
# http.client too would record the same call twice and catch our own loopback servers. Decided
# once: vcrpy would otherwise retry importing a missing httpx at every recording or replay.
PATCHED = tuple(name for name in ("httpx", "httpx2") if importlib.util.find_spec(name) is not None)

# What vcrpy's builder patches in each module of the httpx family (`CassettePatcherBuilder._httpx`,
# `_httpx2`): the transports' request methods. While vcrpy is not loaded, a block sets stand-ins
# there instead, which load vcrpy and hand over to its patches when a request first reaches one: a
# step case or a replay answered at the SDK's own method never does, and loading vcrpy's stubs (a
# dozen HTTP libraries, ~200 modules, 0.15-0.2 s) cost the first of them. A test checks this list
# against vcrpy's builder.
TRANSPORT_METHODS = (
    ("HTTPTransport", "handle_request"),
    ("AsyncHTTPTransport", "handle_async_request"),
    ("WSGITransport", "handle_request"),
    ("ASGITransport", "handle_async_request"),
    ("MockTransport", "handle_request"),
    ("MockTransport", "handle_async_request"),
)
# Transports vcrpy also patches in its httpx group when they are installed: vcrpy is then loaded at
# once, as it always was.
OTHER_TRANSPORTS = tuple(
    name for name in ("httpx_curl_cffi", "pyreqwest") if importlib.util.find_spec(name) is not None
)


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

    def __init__(self, *, wait: bool = False) -> None:
        self.adapter = _Adapter(())
        self.patchers: list[Any] = []
        self.settings: list[tuple[Any, str, Any]] | None = None
        self._news: dict[tuple[int, str], Any] | None = None  # (id of class, method) -> vcrpy's patch
        self._lock = threading.Lock()
        # While the set is entered, whether it holds our request builder in place of vcrpy's
        # (vcr_request.py): None outside a block.
        self._holding: bool | None = None
        if wait:
            self.settings = self._stand_ins()
        else:
            self._build()
            try:
                self.settings = [
                    (patcher.getter(), patcher.attribute, patcher.new) for patcher in self.patchers
                ]
            except AttributeError:  # pragma: no cover - another unittest.mock
                self.settings = None
        self.modules = _modules()
        for _, _, new in self.settings or ():
            _owners[id(new)] = self

    def _build(self) -> None:
        """vcrpy's patchers around this set's adapter."""
        import vcr.patch
        from vcr.patch import PATCHER_NAMES, CassettePatcherBuilder

        self.adapter.skip_patchers = tuple(name for name in PATCHER_NAMES if name not in PATCHED)
        # vcrpy keeps the transports' methods it found when it was loaded, to wrap them: loaded
        # inside a block, it found stand-ins, and must wrap what they stand in for.
        for name, value in list(vars(vcr.patch).items()):
            original = _original_of(value)
            if original is not value:
                setattr(vcr.patch, name, original)
        self.patchers = list(CassettePatcherBuilder(self.adapter).build())

    def _stand_ins(self) -> list[tuple[Any, str, Any]]:
        settings = []
        for module_name in PATCHED:
            module = importlib.import_module(module_name)  # as vcrpy imports them, to patch them
            for class_name, method in TRANSPORT_METHODS:
                target = getattr(module, class_name)
                stand_in = self._stand_in(target, method, getattr(target, method))
                settings.append((target, method, stand_in))
        return settings

    def _stand_in(self, target: Any, method: str, found: Any) -> Any:
        key = (id(target), method)

        @functools.wraps(found)
        def stand_in(transport: Any, request: Any) -> Any:
            return self._patch_for(key)(transport, request)

        _stands_for[id(stand_in)] = (stand_in, found)
        return stand_in

    def _patch_for(self, key: tuple[int, str]) -> Any:
        """vcrpy's patch of one transport method, vcrpy loaded and its patchers built on first use."""
        with self._lock:
            if self._news is None:
                self._build()
                self._news = {
                    (id(patcher.getter()), patcher.attribute): patcher.new for patcher in self.patchers
                }
            if self._holding is False:  # entered before vcrpy was loaded: from now on, as any block
                self._holding = vcr_request.hold()
        return self._news[key]

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
            with self._lock:
                self._holding = vcr_request.hold()
            yield
        finally:
            with self._lock:
                if self._holding:
                    vcr_request.release()
                self._holding = None
            for target, name, original, local in reversed(saved):
                if local:
                    setattr(target, name, original)
                else:
                    delattr(target, name)
                _retire_if_left_behind(original)


_free: list[_Patches] = []  # sets not in use; a block nested in another (or in another thread) takes its own
_free_lock = threading.Lock()
_owners: dict[int, _Patches] = {}  # id of a patched-in function -> its set
# id of a stand-in -> (the stand-in, kept so the id stays its own; what was there when it was set)
_stands_for: dict[int, tuple[Any, Any]] = {}


def _original_of(value: Any) -> Any:
    """What a stand-in stands for (through stand-ins of nested blocks), or `value` itself."""
    while True:
        entry = _stands_for.get(id(value))
        if entry is None or entry[0] is not value:
            return value
        value = entry[1]


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


# One set of patches is in while any block is open, whichever context opened it: blocks open side
# by side (runs in threads or tasks) would otherwise stack their patches and, left in another order
# than entered, put back each other's. Each request is routed to the cassette of its own context's
# innermost block (`active.current(HTTP)`).
_depth = 0
_installed: tuple[_Patches, contextlib.ExitStack] | None = None


@contextlib.contextmanager
def patched(cassette: CassetteLike, label: str = "agentevals") -> Iterator[None]:
    """Route every httpx/httpx2 request of this context (and of its tasks and bound threads) through
    `cassette` while the block runs."""
    frame = active.push(active.HTTP, cassette, label)
    try:
        _enter(label)
        try:
            yield
        finally:
            _leave()
    finally:
        active.pop(frame)


def _enter(label: str) -> None:
    global _depth, _installed
    with _free_lock:
        if _depth == 0:
            patches = _take()
            patches.adapter.attach(_ROUTED, label)
            stack = contextlib.ExitStack()
            stack.enter_context(patches.entered())
            _installed = (patches, stack)
        _depth += 1


def _leave() -> None:
    global _depth, _installed
    with _free_lock:
        _depth -= 1
        if _depth or _installed is None:
            return
        patches, stack = _installed
        _installed = None
        stack.close()
        # The set stays attached until reused: functions left patched in by another library's
        # blocks left out of order still route through it (see _retire_if_left_behind).
        if not _left_in(patches):
            _free.append(patches)


def _take() -> _Patches:
    """A free set built with the modules loaded now, or a new one (under `_free_lock`)."""
    modules = _modules()
    patches = None
    while _free and patches is None:
        patches = _free.pop()
        if patches.modules != modules:
            patches = None  # built with modules since dropped (pytester does between runs)
    if patches is None:
        # vcrpy is imported here, not at the top: its stubs pull in a dozen HTTP libraries (about
        # 0.2 s), which every pytest session with the plugin installed would pay before any test;
        # and not even here while no request reaches a transport (see TRANSPORT_METHODS).
        patches = _Patches(wait="vcr.patch" not in sys.modules and not OTHER_TRANSPORTS)
    return patches


class _Routed:
    """The cassette vcrpy's patches talk to: the one of the requesting context's innermost block."""

    @staticmethod
    def _cassette() -> CassetteLike:
        cassette: CassetteLike | None = active.current(active.HTTP)
        if cassette is None:  # only a patched block's own requests reach here
            raise RuntimeError("agentevals: a vcrpy patch outlived its patched() block")
        return cassette

    def can_play_response_for(self, request: Any) -> bool:
        # The cassette is chosen once per request, in the context that sends it, and kept on the
        # request: vcrpy hands the same request to append() later, maybe from another frame.
        try:
            cassette: CassetteLike = self._cassette()
        except AmbiguousRun:
            if is_messages_call(request.method, request.uri):
                raise  # a model call of no run, runs side by side: refused (active.py)
            # Any other request of a context of no run (a service's health check, its own inbound
            # test traffic) is no run's event: it goes on, filed under none.
            cassette = _UNFILED
        request._agentevals_cassette = cassette
        return cassette.can_play_response_for(request)

    def _of(self, request: Any) -> CassetteLike:
        cassette = getattr(request, "_agentevals_cassette", None)
        return cassette if cassette is not None else self._cassette()

    def play_response(self, request: Any) -> Any:
        return self._of(request).play_response(request)

    def append(self, request: Any, response: dict[str, Any]) -> None:
        self._of(request).append(request, response)

    def filter_request(self, request: Any) -> Any:
        return self._of(request).filter_request(request)

    @property
    def write_protected(self) -> bool:
        # vcrpy asks this right after can_play_response_for, in the same context and without the
        # request: a context of no run sends what it sends (see above).
        try:
            return self._cassette().write_protected
        except AmbiguousRun:
            return False


class _Unfiled:
    """What a non-model request of a context of no run meets while runs are open side by side."""

    write_protected = False

    def can_play_response_for(self, request: Any) -> bool:
        return False

    def play_response(self, request: Any) -> Any:  # pragma: no cover - never asked: nothing plays
        raise RuntimeError("agentevals: nothing to play for a request of no run")

    def append(self, request: Any, response: dict[str, Any]) -> None:
        pass

    def filter_request(self, request: Any) -> Any:
        return request


_UNFILED = _Unfiled()


_ROUTED = _Routed()


def _modules() -> tuple[int, ...]:
    """Which vcrpy and httpx modules are loaded now: a set is reused only with the ones it was built
    with (its functions wrap the originals that vcrpy saved when it was imported)."""
    return tuple(id(sys.modules.get(name)) for name in ("vcr.patch", "vcr.stubs.httpx_stubs", *PATCHED))


def _left_in(patches: _Patches) -> bool:
    """Whether some of the set's functions are still patched in after its block (see above)."""
    return any(vars(target).get(name) is new for target, name, new in patches.settings or ())
