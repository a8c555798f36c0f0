"""Checkpoint fixtures as people and programs read them: what `agentevals resume extract | list | show
| verify | bless` print, as text, JSON or Markdown. Each function returns the whole output, without
its last newline; paths are shown relative to the current directory when they are below it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..contract import Drift, show, table
from ..trace.summary import TraceSummary
from ..trace.terminal import safe
from .fixture import MANIFEST, Fixture
from .store import Survey
from .verify import FixtureCheck


def shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def row(fixture: Fixture) -> dict[str, Any]:
    """A fixture's line of `list`, as JSON: where it is, its step and progress, its workspace's size,
    the run it comes from."""
    manifest = fixture.manifest
    workspace = manifest.get("workspace", {})
    return {
        "name": fixture.name,
        "path": shown(fixture.folder),
        "sha256": fixture.sha256,
        "step": fixture.step,
        "progress": fixture.progress,
        "checkpoint": manifest.get("checkpoint"),
        "files": workspace.get("files"),
        "bytes": workspace.get("bytes"),
        "run_id": fixture.lineage.get("run_id"),
        "source": fixture.lineage.get("trace"),
        "replayable": fixture.has_continuation,
        "created_at": manifest.get("created_at"),
    }


# -- extract ------------------------------------------------------------------------------------------


def extracted(fixture: Fixture, redactions: int, format: str) -> str:
    if format == "json":
        return json.dumps({**row(fixture), "scrubbed": redactions}, indent=2)
    notes = [f"step {fixture.step}", f"{fixture.manifest['workspace']['files']} files"]
    if fixture.has_continuation:
        notes.append("with its continuation")
    if redactions:
        notes.append(f"{redactions} secret(s) scrubbed")
    return safe(f"agentevals resume: wrote {shown(fixture.folder)} ({', '.join(notes)})")


# -- list ---------------------------------------------------------------------------------------------


def listing(survey: Survey, format: str) -> str:
    rows = [row(fixture) for fixture in survey.fixtures]
    unfinished = [shown(path) for path in survey.incomplete]
    if format == "json":
        return json.dumps({"fixtures": rows, "broken": survey.broken, "incomplete": unfinished}, indent=2)
    header = ("name", "step", "progress", "files", "bytes", "replayable", "source run")
    cells = [
        (
            r["name"],
            str(r["step"]),
            f"{r['progress']:.0%}",
            str(r["files"]),
            f"{r['bytes']:,}",
            "yes" if r["replayable"] else "no",
            str(r["run_id"])[:12],
        )
        for r in rows
    ]
    lines: list[str] = []
    if format == "markdown":
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" for _ in header) + "|")
        lines.extend("| " + " | ".join(cell) + " |" for cell in cells)
    elif not rows:
        lines.append(f"no checkpoint fixtures in {shown(survey.fixtures_dir)}")
    else:
        widths = [max(len(cells_of[i]) for cells_of in [header, *cells]) for i in range(len(header))]
        for cells_of in [header, *cells]:
            padded = (cell.ljust(width) for cell, width in zip(cells_of, widths, strict=True))
            lines.append("  ".join(padded).rstrip())
    lines.extend(f"broken: {problem}" for problem in survey.broken)
    lines.extend(f"incomplete: {path} (no {MANIFEST}: an interrupted extraction?)" for path in unfinished)
    return safe("\n".join(lines))  # names and values come from fixtures in pull requests


# -- show ---------------------------------------------------------------------------------------------


def details(fixture: Fixture, state: dict[str, Any], run: TraceSummary, format: str) -> str:
    """One fixture in full: lineage, contract, the keys of its `state`, its workspace, and `run`, the
    summary of the run up to its checkpoint."""
    data = {
        **row(fixture),
        "task": fixture.task,
        "seed": fixture.seed,
        "lineage": fixture.lineage,
        "contract": fixture.contract,
        "state_keys": sorted(state),
        "workspace": fixture.manifest.get("workspace"),
        "run_before": {
            "steps": run.steps,
            "model_calls": run.model_calls,
            "tool_calls": run.tool_calls,
            "tokens": run.tokens,
            "cost_usd": run.cost_usd,
            "checkpoints": run.checkpoints,
            "compactions": run.compactions,
            "verifications_passed": run.verifications_passed,
            "verifications_failed": run.verifications_failed,
            "progress": run.last_progress,
            "duration_s": run.duration_s,
        },
        "history": fixture.manifest.get("history"),
    }
    if format == "json":
        return json.dumps(data, indent=2)
    lineage = fixture.lineage
    workspace = data["workspace"] or {}
    before = data["run_before"]
    replayable = "yes (the recorded continuation is kept)" if fixture.has_continuation else "no (live only)"
    lines = [
        f"fixture    {fixture.name} ({shown(fixture.folder)}) · sha256 {fixture.sha256[:16]}",
        f"source     {lineage.get('trace')} (sha256 {str(lineage.get('sha256'))[:16]}) · run "
        f"{lineage.get('run_id')} · agent {fixture.agent} · seed {fixture.seed}",
        f"at         step {fixture.step} · checkpoint {fixture.manifest.get('checkpoint')!r} · "
        f"{_seconds(lineage.get('t'))} into the run",
        f"spent      {lineage.get('total_tokens', 0):,} tokens · ${lineage.get('cost_usd', 0):.4f} · "
        f"{lineage.get('model_calls')} model calls · {lineage.get('compactions')} compactions · "
        f"{lineage.get('restarts')} restarts",
        f"verified   progress {fixture.progress:.0%}",
        f"state      {', '.join(sorted(state)) or '(empty)'}",
        f"workspace  {workspace.get('files')} files, {workspace.get('bytes', 0):,} bytes",
        f"run before {before['steps']} steps · {before['tool_calls']} tool calls · "
        f"{before['checkpoints']} checkpoints · {before['compactions']} compactions · "
        f"{before['verifications_passed']}/{before['verifications_passed'] + before['verifications_failed']}"
        " checks passed",
        f"replayable {replayable}",
        "contract",
        *(f"  {key} = {show(value)}" for key, value in fixture.contract.items()),
        "history",
        *(
            f"  {entry.get('at')} {entry.get('action')}: {_history_line(entry)}"
            for entry in data["history"] or []
        ),
    ]
    return safe("\n".join(lines))  # names and values come from fixtures in pull requests


def _seconds(value: Any) -> str:
    return f"{value:.1f}s" if isinstance(value, int | float) else "?"


def _history_line(entry: dict[str, Any]) -> str:
    if entry.get("action") == "bless":
        keys = ", ".join(str(change.get("key")) for change in entry.get("changes", []))
        return f"{keys} — {entry.get('reason')}"
    return f"from {entry.get('source')} at step {entry.get('step')}"


# -- verify -------------------------------------------------------------------------------------------


def _check_json(check: FixtureCheck) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": check.name,
        "path": shown(check.folder),
        "ok": check.ok,
        "problems": check.problems,
    }
    if check.drifts is not None:  # a fixture that opened: what its contract says, and when
        data["drift"] = [drift.to_json() for drift in check.drifts]
        data["checked_at_resume"] = check.checked_at_resume
    return data


def verified(checks: Sequence[FixtureCheck], fixtures_dir: Path, format: str) -> str:
    """The verdict of each fixture checked; with text, what to do about a failure."""
    ok = all(check.ok for check in checks)
    if format == "json":
        return json.dumps({"ok": ok, "fixtures": [_check_json(check) for check in checks]}, indent=2)
    lines: list[str] = []
    if not checks:
        lines.append(f"agentevals resume verify: no checkpoint fixtures in {shown(fixtures_dir)}")
    for check in checks:
        drifted = check.drifts or []
        if check.ok:
            here = f"{len(drifted)} drift(s) tolerated or warned" if drifted else "python and packages match"
            later = len(check.checked_at_resume or [])
            lines.append(f"ok      {shown(check.folder)} ({here}; {later} keys checked at resume)")
        else:
            lines.append(f"FAILED  {shown(check.folder)}")
            lines.extend(f"  - {problem}" for problem in check.problems)
        if drifted:
            lines.append(table(drifted))
    failed = sum(1 for check in checks if not check.ok)
    if failed:
        lines.append(
            f"agentevals resume verify: {failed} of {len(checks)} fixture(s) failed. A changed file: "
            "restore it or re-extract the fixture; a contract drift: re-extract from a run recorded here, "
            "or `agentevals resume bless NAME --reason ...`"
        )
    return safe("\n".join(lines))  # names and values come from fixtures in pull requests


# -- bless --------------------------------------------------------------------------------------------


def blessed(fixture: Fixture, drifts: Sequence[Drift], format: str) -> str:
    """What a bless changed in the fixture's contract (`drifts`), or that nothing drifted."""
    if not drifts:
        if format == "json":
            return json.dumps({"name": fixture.name, "blessed": []})
        return safe(f"{fixture.name}: nothing drifted; the manifest is unchanged")
    if format == "json":
        return json.dumps({"name": fixture.name, "blessed": [d.to_json() for d in drifts]}, indent=2)
    return safe(f"agentevals resume: blessed in {shown(fixture.folder / MANIFEST)}:\n{table(drifts)}")
