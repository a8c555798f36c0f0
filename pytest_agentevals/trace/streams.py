"""The streamed content of a stored response, joined.

A streamed answer arrives as pieces, one per SSE `content_block_delta` event, so a key the model
writes out is split over several pieces and shows in none of them. This joins the pieces of each
content block into the text the client assembles, and edits that text back into its pieces, so a
scrubbed stream still renders to a valid SSE stream the SDK parses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

# The delta types whose pieces join into one text, and the field each piece is in.
PIECE_FIELDS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}

Spans = Callable[[str], list[tuple[int, int]]]


class Piece(NamedTuple):
    event: int  # its position in the list of stored SSE events
    field: str  # the delta field that holds it
    text: str


# An index that cannot key a block (a hostile stream's): named once, as `dict | list` in the loop
# built a union object for every event of every streamed answer.
_UNHASHABLE = (dict, list)


def blocks(events: Sequence[Any]) -> list[list[Piece]]:
    """The pieces of each streamed content block, in order."""
    by_block: dict[tuple[Any, str], list[Piece]] = {}
    for position, event in enumerate(events):
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(data, dict) or data.get("type") != "content_block_delta":
            continue
        delta = data.get("delta")
        if not isinstance(delta, dict):
            continue
        field = PIECE_FIELDS.get(delta.get("type"))  # type: ignore[arg-type]
        piece = delta.get(field) if field is not None else None
        index = data.get("index")
        if not isinstance(piece, str) or isinstance(index, _UNHASHABLE):
            continue
        by_block.setdefault((index, field), []).append(Piece(position, field, piece))  # type: ignore[arg-type]
    return list(by_block.values())


def joined(pieces: Sequence[Piece]) -> str:
    return "".join(piece.text for piece in pieces)


def redact(events: list[Any], spans: Spans, replacement: str) -> list[Any] | None:
    """`events` with every span that `spans` finds in a block's joined text replaced by
    `replacement` (in the piece where the span starts; the span's rest is cut from the pieces it
    runs over), or None when nothing was found. `events` itself is not changed."""
    edited: dict[int, dict[str, str]] = {}
    for pieces in blocks(events):
        found = spans(joined(pieces))
        if not found:
            continue
        start = 0
        for piece in pieces:
            end = start + len(piece.text)
            cuts = [(max(s, start), min(e, end), s >= start) for s, e in found if s < end and e > start]
            text = piece.text
            for cut_start, cut_end, starts_here in sorted(cuts, reverse=True):
                text = (
                    text[: cut_start - start] + (replacement if starts_here else "") + text[cut_end - start :]
                )
            if cuts:
                edited.setdefault(piece.event, {})[piece.field] = text
            start = end
    if not edited:
        return None
    result = list(events)
    for position, fields in edited.items():
        event = result[position]
        data = event["data"]
        result[position] = {**event, "data": {**data, "delta": {**data["delta"], **fields}}}
    return result
