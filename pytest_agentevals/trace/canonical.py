"""Requests in canonical form, so that two requests asking the same thing compare equal.

Canonicalized once per request: the host is dropped (a replay runs against another port or none),
JSON keys are sorted, and fields that change between identical asks are removed. The fingerprint
(the SHA-256 of the form's `canonical_json`) is the key of the replay index and of the step layer's
decision cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .jsonable import canonical_json
from .scrub import Scrubber

# Body fields that identify a call rather than describe it.
VOLATILE_BODY_FIELDS = frozenset({"metadata"})


def canonical_request(
    method: str, url: str, body: Any, ignore_fields: Iterable[str] = VOLATILE_BODY_FIELDS
) -> dict[str, Any]:
    parts = urlsplit(url)
    query = urlencode(sorted(parse_qsl(parts.query)))
    ignored = frozenset(ignore_fields)
    if isinstance(body, Mapping):
        body = {key: value for key, value in body.items() if key not in ignored}
    return {"method": method.upper(), "path": parts.path + (f"?{query}" if query else ""), "body": body}


def fingerprint(canonical: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(canonical).encode("utf-8")).hexdigest()


def scrubbed_canonical(request: Mapping[str, Any], scrubber: Scrubber) -> dict[str, Any]:
    """The canonical form of a live request (fields as `exchange.request_fields` gives them) once
    scrubbed as the trace writer scrubs what it stores: what a recording of it holds."""
    stored = scrubber.scrub_event({"type": "model_call", "request": dict(request)})["request"]
    body = stored["body"] if "body" in stored else stored.get("body_raw")
    return canonical_request(stored.get("method", "POST"), stored.get("url", ""), body)
