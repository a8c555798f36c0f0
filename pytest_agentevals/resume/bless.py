"""Blessing a drift (`agentevals resume bless`): this environment's values, where they differ from a
fixture's recorded contract, become its contract; the old values and the reason stay in the
manifest's history. The fixture's files are unchanged (its SHA-256, the manifest's, changes)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from ..contract import ABSENT, Drift, compare, current
from ..errors import AgentEvalsError
from ..fileio import write_atomic
from .fixture import MANIFEST, Fixture


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def bless(fixture: Fixture, reason: str, keys: Sequence[str] = ()) -> list[Drift]:
    """Record in the fixture's contract the Python and package versions of this environment that
    drifted, and each `KEY=VALUE` of `keys` (VALUE as JSON, else text). Returns what changed; none
    (and the manifest untouched) when nothing drifted."""
    if not reason.strip():
        raise AgentEvalsError("--reason: say why the drift is harmless; it is kept in the manifest's history")
    recorded = fixture.contract
    now = {k: v for k, v in current(recorded).items() if k == "python" or k.startswith("packages.")}
    for item in keys:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise AgentEvalsError(f"--key {item!r}: write KEY=VALUE, e.g. db.schema=42")
        now[key.strip()] = _value(text)
    drifts = [d for d in compare({**{k: ABSENT for k in now}, **recorded}, now) if d.now is not ABSENT]
    if not drifts:
        return []
    manifest = dict(fixture.manifest)
    manifest["contract"] = {**recorded, **{d.key: d.now for d in drifts}}
    manifest["history"] = [
        *manifest["history"],
        {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "action": "bless",
            "reason": reason.strip(),
            "changes": [d.to_json() for d in drifts],
        },
    ]
    write_atomic(fixture.folder / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return drifts
