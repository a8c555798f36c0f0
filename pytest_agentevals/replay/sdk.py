"""Strict replay at the anthropic SDK's own request method, below the cost of building the request.

Every Messages call of the SDK — `messages.create` and `messages.stream`, sync and async, their
`with_raw_response` / `with_streaming_response` forms and the `beta.messages` variants — reaches
`SyncAPIClient.request` / `AsyncAPIClient.request` with the caller's body as given, before the SDK
prepares it (a walk of the whole history) and serializes it (another). While a replay runs those two
methods are patched: a request is answered from here when it provably equals the recorded request
expected next, and otherwise goes on into the SDK unchanged, through the HTTP transport path
(`transport.py`), which decides as it always has — so a divergence has the same message, the same
diff and the same report whichever path saw the request first.

"Provably equals" is checked per step, without serializing or parsing anything that is not new
(`same_body`): the body's small fields (model, system, tools, parameters) are compared with the
recording's as given when they equal them (plain data, as a harness passes them), and prepared as
the SDK prepares them first when they do not (a model object, a tuple); so are the messages the step
appended; the unchanged prefix is compared object by object with the recorded one at C speed, so a
message edited in place, by a harness that rewrites its history, is still a divergence.

The answer is built by the SDK itself: the recorded response becomes an `httpx2.Response` handed to
the client's own `_process_response`, so the caller gets the SDK's `Message`, `Stream` (events in
recorded order; `MessageStream.text_stream` and `get_final_message()` work on top of it),
`LegacyAPIResponse` or `APIResponse`, exactly as from the network.

Anything the fast check does not cover goes the HTTP way: the first model request (it carries the
stale-cassette check), extra query or body, files, a recorded error status, metadata, an active
recorder, a record mode that lets requests go live, normalization rules, middleware or tracing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..recording import active

if TYPE_CHECKING:
    from .cassette import Interaction

Serve = Callable[[str, Mapping[str, Any], Callable[[Any], Any]], "Interaction | None"]

_lock = threading.Lock()
_serving: list[Serve] = []  # the running replays' `serve` (the newest answers)
_original: dict[str, Any] = {}
# (client class, base URL, path) -> (URL, path and query): what the client's own `_prepare_url`
# gives, which depends on nothing else, so kept across replays (a step case is one of 1,000); cleared
# when it grows past a few clients' worth.
_urls: dict[tuple[type, Any, str], tuple[Any, str]] = {}
_URLS_KEPT = 64


def answers(expected: Interaction, path: str, body: Mapping[str, Any], prepare: Callable[[Any], Any]) -> bool:
    """Whether the recorded exchange expected next may answer this Messages request here: a model
    POST to the same path and query, recorded as a success (the SDK's own retry and error handling
    see a recorded failure), whose body provably is this one (`same_body`)."""
    if not expected.is_model:
        return False
    canonical = expected.canonical
    if canonical["method"] != "POST" or canonical["path"] != path:
        return False
    if not 200 <= expected.served_response()["status"]["code"] < 300:
        return False
    return same_body(body, canonical.get("body"), prepare)


def same_body(live: Mapping[str, Any], recorded: Any, prepare: Callable[[Any], Any]) -> bool:
    """Whether a live Messages body (as the caller passed it, `Omit` values included) is, once the
    SDK prepares and sends it, the recorded canonical body. False means "not proven": the caller
    then lets the HTTP path decide, so a False is never a verdict and a True must never be wrong.

    Equality of Python values stands for equality of what is sent because both sides compare the
    way the HTTP path compares a parsed body (`1 == 1.0`, key order ignored), and anything that is
    not plain data (a model object, a tuple) never equals parsed JSON, so it is prepared first."""
    if not isinstance(recorded, dict):
        return False
    messages = live.get("messages")
    recorded_messages = recorded.get("messages")
    if type(messages) is not list or type(recorded_messages) is not list:
        return False
    if len(messages) != len(recorded_messages):
        return False
    sent = 1  # the fields the SDK sends: `messages`, and each one not omitted
    for key, value in live.items():
        if key == "messages" or type(value).__name__ in _OMITTED:
            continue  # preparing drops an omitted field, so it is not sent
        if key == "metadata" or key not in recorded:
            return False
        sent += 1
        if recorded[key] == value:  # plain data, as the common case: nothing to prepare
            continue
        if not _rereadable(value) or prepare(value) != recorded[key]:
            return False
    if sent != len(recorded):
        return False
    if messages == recorded_messages:  # the common case: one C-level walk, nothing serialized
        return True
    for live_message, recorded_message in zip(messages, recorded_messages, strict=True):
        if live_message == recorded_message:
            continue
        if not _rereadable(live_message) or prepare(live_message) != recorded_message:
            return False
    return True


_PLAIN = (str, int, float, bool, type(None))
_OMITTED = ("Omit", "NotGiven")  # the SDK's markers of a parameter not given


def _rereadable(value: Any) -> bool:
    """Whether preparing `value` leaves it as it was: no one-shot iterator or file to consume, which
    the SDK would then find empty when the request goes on into it."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, dict):
        return all(_rereadable(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return all(_rereadable(item) for item in value)
    return hasattr(value, "model_dump") or type(value).__name__ in _OMITTED


def install(serve: Serve) -> Callable[[], None]:
    """Answer the SDK's Messages requests with `serve` until the returned function is called.

    `serve(path, body, prepare)` returns the recorded exchange to answer with (taken), or None to
    let the request go on into the SDK. Does nothing when the SDK is not installed."""
    try:
        from anthropic import _base_client as base
    except ImportError:  # no SDK, nothing to answer at its methods: the HTTP path stays
        return lambda: None
    with _lock:
        if not _serving:
            try:
                _patch(base)
            except (ImportError, AttributeError):  # an SDK without these private parts: the HTTP path
                _original.clear()
                return lambda: None
        _serving.append(serve)
    frame = active.push(active.SDK, serve, "a replay answering at the SDK")

    def uninstall() -> None:
        active.pop(frame)
        with _lock:
            if serve in _serving:
                _serving.remove(serve)
                if not _serving:
                    base.SyncAPIClient.request = _original["sync"]  # type: ignore[method-assign]
                    base.AsyncAPIClient.request = _original["async"]  # type: ignore[method-assign]
                    _original.clear()

    return uninstall


def _patch(base: Any) -> None:
    import httpx2
    from anthropic._compat import model_copy
    from anthropic._models import FinalRequestOptions
    from anthropic._utils._prepare import prepare_request_data

    for client in (base.SyncAPIClient, base.AsyncAPIClient):  # what an answer here is built with
        for name in ("request", "_process_response", "_maybe_override_cast_to", "_prepare_url"):
            getattr(client, name)
    sync_request = _original["sync"] = base.SyncAPIClient.request
    async_original = _original["async"] = base.AsyncAPIClient.request

    def prepare(value: Any) -> Any:
        return prepare_request_data(value, location="body")

    def recorded(client: Any, options: FinalRequestOptions) -> tuple[Any, FinalRequestOptions] | None:
        """The httpx2 response to answer with, and the options to parse it with; None to go on."""
        if not _serving or not _covered(client, options):
            return None
        serve = _serve_here()
        if serve is None:
            return None
        key = (type(client), client._base_url, options.url)
        found = _urls.get(key)
        if found is None:
            if len(_urls) >= _URLS_KEPT:
                _urls.clear()
            url = client._prepare_url(options.url)
            found = _urls[key] = (url, url.raw_path.decode("ascii"))
        url, path = found
        body = options.json_data
        assert isinstance(body, Mapping)
        interaction = serve(path, body, prepare)
        if interaction is None:
            return None
        served = interaction.served_response()
        headers = [(name, value) for name, values in served["headers"].items() for value in values]
        given = options.headers if isinstance(options.headers, Mapping) else {}
        request = httpx2.Request(
            "POST", url, headers={k: v for k, v in given.items() if isinstance(v, str) and k[:4] != "____"}
        )
        response = httpx2.Response(
            served["status"]["code"], headers=headers, content=served["body"]["string"], request=request
        )
        return response, model_copy(options)

    def request(
        self: Any, cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
    ) -> Any:
        answer = recorded(self, options)
        if answer is None:
            return sync_request(self, cast_to, options, stream=stream, stream_cls=stream_cls)
        response, options = answer
        cast_to = self._maybe_override_cast_to(cast_to, options)
        return self._process_response(
            cast_to=cast_to, options=options, response=response, stream=stream, stream_cls=stream_cls
        )

    async def async_request(
        self: Any, cast_to: Any, options: Any, *, stream: bool = False, stream_cls: Any = None
    ) -> Any:
        answer = recorded(self, options)
        if answer is None:
            return await async_original(self, cast_to, options, stream=stream, stream_cls=stream_cls)
        response, options = answer
        cast_to = self._maybe_override_cast_to(cast_to, options)
        return await self._process_response(
            cast_to=cast_to, options=options, response=response, stream=stream, stream_cls=stream_cls
        )

    base.SyncAPIClient.request = request
    base.AsyncAPIClient.request = async_request


def _serve_here() -> Serve | None:
    """The `serve` installed in this context (`recording.active`): a request of a run beside it (a
    recording, another replay, another step case) is never answered from this one's recordings."""
    serve: Serve | None = active.current(active.SDK)
    return serve if serve is not None and serve in _serving else None


def _covered(client: Any, options: Any) -> bool:
    """Whether the fast check may answer this request: a JSON Messages POST with nothing the SDK
    would add to it afterwards (extra body or query, files, middleware, tracing)."""
    return (
        options.method == "post"
        and isinstance(options.url, str)
        and options.url.rstrip("/").endswith("/v1/messages")
        and isinstance(options.json_data, Mapping)
        and options.extra_json is None
        and not options.params
        and options.files is None
        and options.content is None
        and not client._custom_query
        and not getattr(client, "_middleware", None)
        and (getattr(client, "_tracer", None) is None or not _tracing())
    )


def _tracing() -> bool:
    """Whether OpenTelemetry spans would record: a provider is set up (the SDK's tracer is then a
    real one and its call spans are the user's to see, so such calls take the SDK's own way)."""
    import sys

    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return False
    provider = otel.get_tracer_provider()
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")
