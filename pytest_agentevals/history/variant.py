"""A test's variant: the seed, model and marker parameters it ran with, as one canonical string.

Two attempts are "the same code" for a verdict only when test id, variant and commit all match, so a
marathon run with seed 3 is never judged against one with seed 4.

The variant travels as test properties (`item.user_properties`), so it reaches the xdist controller
inside reports and lands in JUnit XML, where ingest reads it back:

- `agentevals.layer`: the test's layer;
- `agentevals.variant`: the canonical JSON of what the plugin found (layer-marker arguments, and
  `seed` / `model` parameters);
- `agentevals.variant.<name>`: one more entry (its value as text), for a fixture that knows more
  (e.g. the model a run really used):
  `request.node.user_properties.append(("agentevals.variant.model", "claude-x"))`.

One more travels the same way but is no part of the variant: `agentevals.budget_stop`, on a test a
budget stopped (`attempts.mark_budget_stop`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..trace.jsonable import canonical_json

LAYER_PROPERTY: Final = "agentevals.layer"
# Set on a test whose run a budget stopped (`budget_exhausted`), its value the stop: the history files
# such an attempt as `budget_stopped`, and JUnit ingest reads it back from the testcase's properties.
BUDGET_STOP_PROPERTY: Final = "agentevals.budget_stop"
VARIANT_PROPERTY: Final = "agentevals.variant"
VARIANT_PREFIX: Final = VARIANT_PROPERTY + "."


def plain(value: Any) -> Any:
    """`value` if it is JSON made of scalars, lists and string-keyed dicts; else None (left out)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        items = [plain(v) for v in value]
        return None if any(i is None and v is not None for i, v in zip(items, value, strict=True)) else items
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        out = {k: plain(v) for k, v in value.items()}
        return None if any(out[k] is None and value[k] is not None for k in value) else out
    return None


def canonical(fields: Mapping[str, Any]) -> str:
    """The canonical JSON of `fields` ("" when empty): sorted keys, no spaces."""
    if not fields:
        return ""
    return canonical_json(dict(fields))


def from_properties(properties: Iterable[tuple[str, object]]) -> tuple[str | None, str]:
    """(layer, variant) from a test's properties, as the plugin writes them; (None, "") if absent."""
    layer: str | None = None
    fields: dict[str, Any] = {}
    for name, value in properties:
        if name == LAYER_PROPERTY:
            layer = str(value) or None
        elif name == VARIANT_PROPERTY:
            try:
                loaded = json.loads(str(value)) if value not in ("", None) else {}
            except ValueError:
                loaded = {"variant": str(value)}
            if isinstance(loaded, dict):
                fields.update(loaded)
        elif name.startswith(VARIANT_PREFIX):
            # As text, as JUnit XML keeps it, so a live run and its ingested XML agree.
            fields[name[len(VARIANT_PREFIX) :]] = str(value)
    return layer, canonical(fields)
