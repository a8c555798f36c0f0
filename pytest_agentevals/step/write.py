"""Writing extracted step cases: a new goldens file, or cases appended to one, with the recorded
model exchanges seeded into its decisions file so the cases replay at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import GoldenError
from ..fileio import write_atomic
from ..trace.scrub import Scrubber
from .extract import DecisionPoint, case_data, shared_request, unique_ids
from .loader import load_goldens
from .store import DecisionStore, store_path, write_store
from .yamlio import SafeLoader, dump_yaml, load_yaml

HEADER = """\
# Golden step cases, extracted by `agentevals step extract` from {trace}.
# Each case freezes the context at one decision and expects the decision that was recorded there:
# edit the expectations (matchers, facts, escalation kinds) to say what must hold. See docs/step.md.
"""


@dataclass(frozen=True)
class Written:
    path: Path
    case_ids: list[str]
    store: Path
    exchanges: int


def default_out(trace: Path, goldens_dir: Path) -> Path:
    """Where `agentevals step extract` writes a trace's cases without --out: named after the trace."""
    name = trace.name
    for suffix in (".trace.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return goldens_dir / f"{name[: -len(suffix)]}.yaml"
    return goldens_dir / f"{trace.stem}.yaml"


def write_cases(
    out: Path,
    points: Sequence[DecisionPoint],
    trace_label: str,
    scenario: str | None = None,
    append: bool = False,
    description: str | None = None,
) -> Written:
    """Write the points as step cases to `out` (appending when asked), and seed their recordings."""
    display = str(out)
    existing = load_goldens(out, display) if out.exists() else None
    if existing is not None and not append:
        raise GoldenError(
            display, "exists already", "pass --append to add the cases to it, or choose another --out"
        )
    taken = [case.id for case in existing.cases] if existing else []
    ids = unique_ids(points, taken)
    cases = [case_data(point, trace_label, case_id) for point, case_id in zip(points, ids, strict=True)]
    cases = Scrubber().scrub_value(cases)  # the trace may come from anywhere: no secret is copied on
    if existing is None:
        text = _new_file(cases, scenario or out.stem, trace_label, description)
    else:
        text = _appended(out.read_text(encoding="utf-8"), cases, display)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    goldens = load_goldens(out, display)  # what was written loads, or this raises naming the problem
    return Written(
        out, ids, store_path(out), _seed(out, goldens.scenario, [c.id for c in goldens.cases], points, ids)
    )


def _new_file(cases: list[dict[str, Any]], scenario: str, trace_label: str, description: str | None) -> str:
    shared = shared_request(cases)
    for case in cases:
        request = case["context"].get("request")
        if request is not None:
            case["context"]["request"] = {k: v for k, v in request.items() if k not in shared}
    data: dict[str, Any] = {"scenario": scenario}
    if description:
        data["description"] = description
    if shared:
        data["defaults"] = {"request": shared}
    data["cases"] = cases
    return HEADER.format(trace=trace_label) + dump_yaml(data)


def _appended(text: str, cases: list[dict[str, Any]], display: str) -> str:
    root = yaml.compose(text, Loader=SafeLoader)
    keys = [key.value for key, _ in root.value] if isinstance(root, yaml.MappingNode) else []
    if root is None or not keys or keys[-1] != "cases":
        raise GoldenError(
            display, "cannot be appended to: `cases:` is not its last top-level key", "move it last"
        )
    defaults = load_yaml(text, display).get("defaults") or {}
    shared = defaults.get("request") or {}
    for case in cases:
        request = case["context"].get("request")
        if request is not None:
            case["context"]["request"] = {
                k: v for k, v in request.items() if k not in shared or shared[k] != v
            }
    items = dump_yaml(cases)
    indent = (
        " " * root.value[-1][1].start_mark.column if isinstance(root.value[-1][1], yaml.SequenceNode) else ""
    )
    block = "".join(indent + line if line.strip() else line for line in items.splitlines(keepends=True))
    return text + ("" if text.endswith("\n") else "\n") + block


def _seed(
    out: Path, scenario: str, order: list[str], points: Sequence[DecisionPoint], ids: Sequence[str]
) -> int:
    store = store_path(out)
    by_case: dict[str, list[Mapping[str, Any]]] = {
        case: [exchange.fields for exchange in items]
        for case, items in DecisionStore(store).by_case().items()
    }
    for point, case_id in zip(points, ids, strict=True):
        if point.exchange is not None:
            by_case[case_id] = [point.exchange.fields]
    return write_store(store, by_case, order, scenario)
