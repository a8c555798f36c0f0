"""`agentevals resume extract|list|show|verify|bless`: checkpoint fixtures from the command line.

- `extract TRACE --at STEP|latest --name NAME`: a fixture from a recorded run's checkpoint at or
  before STEP, scrubbed of secrets, written whole into `<fixtures_dir>/NAME/`;
- `list`: the fixtures, with their step, progress, workspace size and source run;
- `show NAME`: lineage, contract, state keys, workspace size, and the run up to the checkpoint;
- `verify [NAME...]`: hashes, format and the contract against this environment; exit 1 on any
  problem (the merge gate);
- `bless NAME --reason TEXT`: accept the drift of this environment into the fixture's contract,
  keeping the reason in the manifest's history.

Exit codes: 0 ok, 1 `verify` found problems, 2 bad input (a missing trace, an unknown fixture...).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract import ABSENT, Drift, compare, current, show, table, tolerances
from ..errors import AgentEvalsError, CheckpointError
from ..fileio import write_atomic
from ..resume.extraction import extract
from ..resume.fixture import MANIFEST, TRACE, Fixture, check_name, read_events
from ..resume.store import incomplete, locate, names, open_fixture
from ..settings import Settings
from ..trace.summary import summarize
from .common import add_format, add_setting, settings_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "resume",
        help="checkpoint fixtures: extract one from a trace, list, show, verify, bless a drift",
        description="Checkpoint fixtures for the resume layer (docs/resume.md): a recorded run's mid-run "
        "state, workspace, environment contract and lineage, booted by @pytest.mark.resume tests. "
        "Exit codes: 0 ok, 1 verify found problems, 2 bad input.",
    )
    commands = parser.add_subparsers(dest="resume_command", metavar="ACTION", required=True)

    ext = commands.add_parser(
        "extract",
        help="make a fixture from a recorded run's checkpoint",
        description="Copy the checkpoint at or before STEP of a recorded run into FIXTURES_DIR/NAME/: its "
        "state, its whole workspace, the environment contract, lineage and the run up to it, scrubbed "
        "of secrets. Written into a scratch folder and renamed into place, the manifest last.",
    )
    ext.add_argument("trace", help="the recorded run (.trace.jsonl)")
    ext.add_argument(
        "--at",
        required=True,
        metavar="STEP|latest",
        help="the step: the last checkpoint at or before it is taken; 'latest' takes the run's last",
    )
    ext.add_argument("--name", required=True, help="the fixture's name (letters, digits, - _ .)")
    ext.add_argument(
        "--continuation",
        action="store_true",
        help="keep the recorded rest of the run too, so the fixture can be resumed with "
        'mode="replayed" (offline, against the recording)',
    )
    ext.add_argument(
        "--files-from",
        type=Path,
        metavar="DIR",
        help="a folder holding the workspace as it was at that checkpoint, for the files the trace keeps "
        "only the hash of (over 256 KiB); each is checked against the recorded SHA-256",
    )
    ext.add_argument("--force", action="store_true", help="replace an existing fixture of that name")
    _places(ext)
    add_format(ext, ("text", "json"))
    ext.set_defaults(func=run_extract)

    lst = commands.add_parser(
        "list",
        help="the fixtures and what each holds",
        description="Every fixture under FIXTURES_DIR: its step, verified progress, workspace size, "
        "source run, and whether it can be resumed in replayed mode. Folders without a manifest "
        "(an interrupted extraction) are listed as incomplete.",
    )
    _places(lst)
    add_format(lst, ("text", "json", "markdown"))
    lst.set_defaults(func=run_list)

    shw = commands.add_parser(
        "show",
        help="one fixture: lineage, contract, state, workspace, the run up to it",
        description="One fixture in full: where it comes from (lineage), its environment contract, the "
        "keys of its state, its workspace's size, and a summary of the run up to the checkpoint.",
    )
    shw.add_argument("name", help="the fixture's name (or a path to its folder)")
    _places(shw)
    add_format(shw, ("text", "json"))
    shw.set_defaults(func=run_show)

    ver = commands.add_parser(
        "verify",
        help="check fixtures' hashes, format and contract; exit 1 on any problem",
        description="Check each fixture (every one under FIXTURES_DIR by default): its manifest and "
        "format version, every file against its SHA-256, the state is JSON, every workspace member "
        "against the index, the traces readable, and the contract's Python and package versions "
        "against this environment (the keys the harness declares, and those its requests show, are "
        "checked when a test resumes it). Exit 1 when anything is wrong: the merge gate.",
    )
    ver.add_argument("names", nargs="*", metavar="NAME", help="fixtures to check (default: all)")
    _places(ver)
    _contract_settings(ver)
    add_format(ver, ("text", "json"))
    ver.set_defaults(func=run_verify)

    bls = commands.add_parser(
        "bless",
        help="accept this environment's drift into a fixture's contract, with a reason",
        description="Record in the fixture's contract the values this environment has where they drifted "
        "(Python, package versions) and any --key given, keeping the old values and the reason in "
        "the manifest's history. The fixture's SHA-256 changes; its files do not.",
    )
    bls.add_argument("name", help="the fixture's name (or a path to its folder)")
    bls.add_argument("--reason", required=True, help="why the drift is harmless (kept in the history)")
    bls.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also record this value for a contract key (VALUE as JSON, else text), e.g. a declared key "
        "or model=claude-sonnet-4-6 (repeatable)",
    )
    _places(bls)
    add_format(bls, ("text", "json"))
    bls.set_defaults(func=run_bless)


def _places(parser: argparse.ArgumentParser) -> None:
    add_setting(parser, "fixtures_dir", metavar="DIR")


def _contract_settings(parser: argparse.ArgumentParser) -> None:
    add_setting(parser, "contract_policy", metavar="POLICY")
    add_setting(parser, "contract_tolerate", metavar="KEY[:LEVEL],...")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# -- extract ------------------------------------------------------------------------------------------


def run_extract(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    check_name(args.name)
    fixture, redactions = extract(
        Path(args.trace),
        args.at,
        args.name,
        settings.fixtures_dir,
        continuation=args.continuation,
        files_from=args.files_from,
        force=args.force,
    )
    if args.format == "json":
        print(json.dumps({**_row(fixture), "scrubbed": redactions}, indent=2))
        return 0
    notes = [f"step {fixture.step}", f"{fixture.manifest['workspace']['files']} files"]
    if fixture.has_continuation:
        notes.append("with its continuation")
    if redactions:
        notes.append(f"{redactions} secret(s) scrubbed")
    print(f"agentevals resume: wrote {_shown(fixture.folder)} ({', '.join(notes)})")
    return 0


# -- list ---------------------------------------------------------------------------------------------


def _row(fixture: Fixture) -> dict[str, Any]:
    manifest = fixture.manifest
    workspace = manifest.get("workspace", {})
    return {
        "name": fixture.name,
        "path": _shown(fixture.folder),
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


def run_list(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    rows: list[dict[str, Any]] = []
    broken: list[str] = []
    for name in names(settings.fixtures_dir):
        try:
            rows.append(_row(Fixture.open(settings.fixtures_dir / name)))
        except CheckpointError as exc:
            broken.append(str(exc))
    unfinished = [_shown(settings.fixtures_dir / name) for name in incomplete(settings.fixtures_dir)]
    if args.format == "json":
        print(json.dumps({"fixtures": rows, "broken": broken, "incomplete": unfinished}, indent=2))
        return 0
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
    if args.format == "markdown":
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for cell in cells:
            print("| " + " | ".join(cell) + " |")
    elif not rows:
        print(f"no checkpoint fixtures in {_shown(settings.fixtures_dir)}")
    else:
        widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
        for row in [header, *cells]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    for line in broken:
        print(f"broken: {line}")
    for path in unfinished:
        print(f"incomplete: {path} (no {MANIFEST}: an interrupted extraction?)")
    return 0


# -- show ---------------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    fixture = open_fixture(args.name, settings.fixtures_dir, Path.cwd())
    state = fixture.state()
    run = summarize(fixture.file(TRACE))
    data = {
        **_row(fixture),
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
    if args.format == "json":
        print(json.dumps(data, indent=2))
        return 0
    lineage = fixture.lineage
    workspace = data["workspace"] or {}
    before = data["run_before"]
    replayable = "yes (the recorded continuation is kept)" if fixture.has_continuation else "no (live only)"
    lines = [
        f"fixture    {fixture.name} ({_shown(fixture.folder)}) · sha256 {fixture.sha256[:16]}",
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
    print("\n".join(lines))
    return 0


def _seconds(value: Any) -> str:
    return f"{value:.1f}s" if isinstance(value, int | float) else "?"


def _history_line(entry: dict[str, Any]) -> str:
    if entry.get("action") == "bless":
        keys = ", ".join(str(change.get("key")) for change in entry.get("changes", []))
        return f"{keys} — {entry.get('reason')}"
    return f"from {entry.get('source')} at step {entry.get('step')}"


# -- verify -------------------------------------------------------------------------------------------


def check_fixture(fixture: Fixture, settings: Settings) -> tuple[list[str], list[Drift]]:
    """Every problem of one fixture (empty when it is whole), and its contract's drift."""
    problems: list[str] = []
    for name in fixture.manifest["files"]:
        try:
            fixture.file(name)
        except CheckpointError as exc:
            problems.append(exc.problem)
    if not problems:  # a file that is not what the manifest vouches for is not read any further
        for step in (
            fixture.state,
            lambda: fixture.archive().check(),
            fixture.events,
            _continuation(fixture),
        ):
            try:
                step()
            except CheckpointError as exc:
                problems.append(exc.problem + (f" ({exc.fix})" if exc.fix else ""))
    tolerate = tolerances("contract_tolerate", settings.contract_tolerate)
    drifts = [] if settings.contract_policy == "skip" else fixture.drift(tolerate=tolerate, harness=False)
    if settings.contract_policy == "fail":
        for drift in drifts:
            if not drift.tolerated:
                problems.append(
                    f"contract drift: {drift.key} recorded {show(drift.recorded)}, now {show(drift.now)} "
                    f"({drift.severity})"
                )
    return problems, drifts


def _continuation(fixture: Fixture) -> Callable[[], object]:
    def read() -> object:
        return read_events(fixture.continuation(), fixture.where) if fixture.has_continuation else None

    return read


def run_verify(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    folders = (
        [locate(name, settings.fixtures_dir, Path.cwd()) for name in args.names]
        if args.names
        else [settings.fixtures_dir / name for name in names(settings.fixtures_dir)]
    )
    results: list[dict[str, Any]] = []
    for folder in folders:
        try:
            fixture = Fixture.open(folder)
        except CheckpointError as exc:
            results.append({"name": folder.name, "path": _shown(folder), "ok": False, "problems": [str(exc)]})
            continue
        problems, drifts = check_fixture(fixture, settings)
        results.append(
            {
                "name": fixture.name,
                "path": _shown(folder),
                "ok": not problems,
                "problems": problems,
                "drift": [drift.to_json() for drift in drifts],
                "checked_at_resume": [
                    k for k in fixture.contract if not k.startswith(("python", "packages."))
                ],
                "_drifts": drifts,
            }
        )
    if not args.names:
        for name in incomplete(settings.fixtures_dir):
            results.append(
                {
                    "name": name,
                    "path": _shown(settings.fixtures_dir / name),
                    "ok": False,
                    "problems": [f"no {MANIFEST}: not a whole fixture (an interrupted extraction?)"],
                }
            )
    ok = all(result["ok"] for result in results)
    if args.format == "json":
        for result in results:
            result.pop("_drifts", None)
        print(json.dumps({"ok": ok, "fixtures": results}, indent=2))
        return 0 if ok else 1
    if not results:
        print(f"agentevals resume verify: no checkpoint fixtures in {_shown(settings.fixtures_dir)}")
    for result in results:
        if result["ok"]:
            drifted = result.get("_drifts") or []
            here = f"{len(drifted)} drift(s) tolerated or warned" if drifted else "python and packages match"
            later = len(result.get("checked_at_resume", []))
            print(f"ok      {result['path']} ({here}; {later} keys checked at resume)")
        else:
            print(f"FAILED  {result['path']}")
            for problem in result["problems"]:
                print(f"  - {problem}")
        drifted = result.get("_drifts") or []
        if drifted:
            print(table(drifted))
    failed = sum(1 for result in results if not result["ok"])
    if failed:
        print(
            f"agentevals resume verify: {failed} of {len(results)} fixture(s) failed. A changed file: "
            "restore it or re-extract the fixture; a contract drift: re-extract from a run recorded here, "
            "or `agentevals resume bless NAME --reason ...`"
        )
    return 0 if ok else 1


# -- bless --------------------------------------------------------------------------------------------


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_bless(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    fixture = open_fixture(args.name, settings.fixtures_dir, Path.cwd())
    if not args.reason.strip():
        raise AgentEvalsError("--reason: say why the drift is harmless; it is kept in the manifest's history")
    recorded = fixture.contract
    now = {k: v for k, v in current(recorded).items() if k == "python" or k.startswith("packages.")}
    for item in args.key:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise AgentEvalsError(f"--key {item!r}: write KEY=VALUE, e.g. db.schema=42")
        now[key.strip()] = _value(text)
    drifts = [d for d in compare({**{k: ABSENT for k in now}, **recorded}, now) if d.now is not ABSENT]
    if not drifts:
        message = f"{fixture.name}: nothing drifted; the manifest is unchanged"
        print(json.dumps({"name": fixture.name, "blessed": []}) if args.format == "json" else message)
        return 0
    manifest = dict(fixture.manifest)
    manifest["contract"] = {**recorded, **{d.key: d.now for d in drifts}}
    manifest["history"] = [
        *manifest["history"],
        {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "action": "bless",
            "reason": args.reason.strip(),
            "changes": [d.to_json() for d in drifts],
        },
    ]
    write_atomic(fixture.folder / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    if args.format == "json":
        print(json.dumps({"name": fixture.name, "blessed": [d.to_json() for d in drifts]}, indent=2))
    else:
        print(f"agentevals resume: blessed in {_shown(fixture.folder / MANIFEST)}:\n{table(drifts)}")
    return 0
