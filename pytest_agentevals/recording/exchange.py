"""One HTTP exchange, as vcrpy hands it over, turned into the fields of a model_call event."""

from __future__ import annotations

import contextlib
import json
import operator
from typing import Any

from ..guards.prices import PriceTable
from .bodies import BodyDecoder
from .providers import anthropic

_SECOND = operator.itemgetter(1)


def _lowered(headers: Any) -> dict[str, Any]:
    """{lower-case name: value} of `headers` (of names that differ only in case, the last).

    vcrpy's request headers are a case-insensitive dict that keeps the names lowered already
    (`lower_items`); walking it as a Mapping instead lowers each name again and looks each value up
    through its `__getitem__`, a quarter of `model_call_fields` (cProfile)."""
    lower_items = getattr(headers, "lower_items", None)
    if callable(lower_items):
        store = getattr(headers, "_store", None)
        if type(store) is dict:  # what lower_items() walks ({lowered: (name, value)}), zipped in C
            return dict(zip(store, map(_SECOND, store.values()), strict=True))
        return dict(lower_items())
    return {key.lower(): value for key, value in headers.items()}


def _first(lowered: dict[str, Any], name: str) -> str:
    value = lowered.get(name)
    if value is None:
        return ""
    return value if isinstance(value, str) else (value[0] if value else "")


def request_fields(vcr_request: Any, bodies: BodyDecoder | None = None) -> dict[str, Any]:
    """method, url, headers (volatile ones dropped) and body of a request. `bodies` decodes JSON
    bodies incrementally across the requests of one run."""
    raw = vcr_request.body
    if raw is not None and not isinstance(raw, bytes):
        raw = b"".join(raw) if not isinstance(raw, str) else raw.encode()
    headers = _lowered(vcr_request.headers)
    fields: dict[str, Any] = {
        "method": vcr_request.method,
        "url": vcr_request.uri,
        "headers": anthropic.request_headers(headers),
    }
    decoded = getattr(vcr_request, "_agentevals_body", None)  # the guards decoded it already
    if isinstance(decoded, dict):
        fields["body"] = decoded
    elif raw:
        content_type = _first(headers, "content-type") or "application/json"
        encoding = _first(headers, "content-encoding")
        stored: dict[str, Any] | None = None
        if bodies is not None and "json" in content_type and not encoding:
            with contextlib.suppress(ValueError):
                stored = {"json": bodies.decode(raw)}
        if stored is None:
            stored = anthropic.decode_body(raw, content_type, encoding)
        if "json" in stored and isinstance(stored["json"], dict) and "decoded" not in stored:
            fields["body"] = stored["json"]
        else:
            fields["body_raw"] = stored
    return fields


def model_call_fields(
    vcr_request: Any,
    vcr_response: dict[str, Any],
    latency_s: float,
    prices: PriceTable,
    bodies: BodyDecoder | None = None,
) -> dict[str, Any]:
    request = request_fields(vcr_request, bodies)
    headers = vcr_response.get("headers", {})
    lowered = _lowered(headers)
    stored = anthropic.decode_body(
        vcr_response.get("body", {}).get("string"),
        _first(lowered, "content-type"),
        _first(lowered, "content-encoding"),
    )
    status = vcr_response.get("status", {}).get("code", 0)
    is_model = anthropic.is_messages_call(request["method"], request["url"])
    body = request.get("body") or {}
    fields: dict[str, Any] = {
        "provider": "anthropic" if is_model else "http",
        "request": request,
        "response": {"status": status, "headers": anthropic.response_headers(lowered), **stored},
        "latency_ms": round(latency_s * 1000, 3),
    }
    # What finds this exchange from elsewhere: the API's id of the answer (a support ticket quotes
    # it) and the W3C trace context the caller sent (a production span carries its trace id).
    request_id = _first(lowered, "request-id")
    if request_id:
        fields["request_id"] = request_id
    traceparent = request["headers"].get("traceparent")
    if traceparent:
        fields["traceparent"] = traceparent
    if is_model:
        usage = anthropic.usage_of(stored)
        raw_model = body.get("model")
        model = raw_model if isinstance(raw_model, str) else ""
        fields["model"] = model
        fields["stream"] = bool(body.get("stream"))
        fields["usage"] = usage
        fields["cost_usd"] = prices.cost(model, usage) if 200 <= status < 300 else 0.0
    return fields


def error_summary(fields: dict[str, Any]) -> str | None:
    """A short description of an error response (429, 529...) for notes and `show`."""
    response = fields["response"]
    status = response["status"]
    if 200 <= status < 300:
        return None
    detail = response.get("json")
    if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
        return f"HTTP {status}: {detail['error'].get('type')}: {detail['error'].get('message')}"
    return f"HTTP {status}: " + json.dumps(detail)[:200] if detail else f"HTTP {status}"
