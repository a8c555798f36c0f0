"""Finding a recorded exchange for a live request in O(1) amortized, whatever order requests come in.

A request is canonicalized once (`recording/canonical.py`: host dropped, query sorted, volatile
body fields such as `metadata` removed; headers, `x-stainless-*` among them, play no part). Recorded
requests are keyed by a cheap shape — method, path, model, number of messages and a hash of the
last message — so a look-up hashes one message, not the whole history, and equal candidates are
confirmed by comparing canonical forms (a C-level deep comparison; dict key order is irrelevant).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ..recording.exchange import request_fields
from ..trace.canonical import canonical_request
from ..trace.jsonable import canonical_json
from .cassette import Interaction

ShapeKey = tuple[Any, ...]


def incoming_request(vcr_request: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A live request (as vcrpy hands it over) as the trace would store it, and its canonical form."""
    fields = request_fields(vcr_request)
    body = fields["body"] if "body" in fields else fields.get("body_raw")
    return fields, canonical_request(fields["method"], fields["url"], body)


def shape_key(canonical: dict[str, Any]) -> ShapeKey:
    """A key equal for equal canonical requests, cheap to compute however long the history is."""
    body = canonical.get("body")
    route = (canonical.get("method"), canonical.get("path"))
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        messages = body["messages"]
        last = canonical_json(messages[-1]) if messages else ""
        model = body.get("model")
        digest = hashlib.blake2b(last.encode("utf-8"), digest_size=16).digest()
        return (*route, model if isinstance(model, str) else repr(model), len(messages), digest)
    text = canonical_json(body)
    return (*route, hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest())


class RequestIndex:
    """Recorded exchanges not yet served, found by request.

    `take(canonical)` returns the earliest unused exchange whose request equals `canonical` (an
    identical request recorded twice, as a retry is, is served twice in recorded order) and marks
    it used; `find` looks without taking. `next_unused()` is the exchange strict replay expects next.
    """

    def __init__(self, interactions: Iterable[Interaction]) -> None:
        self._all = list(interactions)
        self._used = [False] * len(self._all)
        self._position = {id(interaction): i for i, interaction in enumerate(self._all)}
        self._keys: dict[ShapeKey, list[int]] | None = None
        self._head = 0

    def __len__(self) -> int:
        return len(self._all)

    def _index(self) -> dict[ShapeKey, list[int]]:
        if self._keys is None:
            keys: dict[ShapeKey, list[int]] = {}
            for i, interaction in enumerate(self._all):
                keys.setdefault(shape_key(interaction.canonical), []).append(i)
            self._keys = keys
        return self._keys

    def next_unused(self) -> Interaction | None:
        while self._head < len(self._all) and self._used[self._head]:
            self._head += 1
        return self._all[self._head] if self._head < len(self._all) else None

    def find(self, canonical: dict[str, Any]) -> Interaction | None:
        """The earliest unused recorded exchange whose request equals `canonical`, or None."""
        expected = self.next_unused()
        if expected is not None and expected.canonical == canonical:
            return expected  # the common case: in order, no hashing of the history at all
        for i in self._index().get(shape_key(canonical), ()):
            if not self._used[i] and self._all[i].canonical == canonical:
                return self._all[i]
        return None

    def take(self, canonical: dict[str, Any]) -> Interaction | None:
        found = self.find(canonical)
        if found is not None:
            self.mark_used(found)
        return found

    def mark_used(self, interaction: Interaction) -> None:
        self._used[self._position[id(interaction)]] = True

    def unused(self) -> list[Interaction]:
        return [interaction for i, interaction in enumerate(self._all) if not self._used[i]]
