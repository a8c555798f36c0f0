"""What travels over the endpoint's sockets: the request as the recorder and replay engine read it, the
API's error bodies, and the headers a proxy must not pass on."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Hop-by-hop headers (RFC 9110 section 7.6.1) and those the endpoint sets itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


class Request:
    """A request the endpoint received, in the shape vcrpy hands the recorder and the replay engine
    (`method`, `uri`, `headers`, `body`): both read it unchanged. `uri` is where it goes upstream
    (record) or the endpoint's own address (replay); the host plays no part in matching."""

    def __init__(self, method: str, uri: str, headers: Mapping[str, str], body: bytes) -> None:
        self.method = method
        self.uri = uri
        self.headers = dict(headers)
        self.body = body


def error_body(error_type: str, message: str) -> bytes:
    """The Messages API's error body: what every client parses into its error class."""
    return json.dumps({"type": "error", "error": {"type": error_type, "message": message}}).encode("utf-8")


def vcr_response(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """A response in vcrpy's serialized form, as the recorder's `record_http` takes it."""
    grouped: dict[str, list[str]] = {}
    for name, value in headers:
        grouped.setdefault(name, []).append(value)
    return {"status": {"code": status, "message": reason}, "headers": grouped, "body": {"string": body}}


def header_items(headers: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A stored response's headers (a value or a list of values each) as (name, value) pairs."""
    items: list[tuple[str, str]] = []
    for name, value in headers.items():
        for one in value if isinstance(value, list) else [value]:
            items.append((str(name), str(one)))
    return items
