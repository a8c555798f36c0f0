"""Several CI jobs' marathon results and traces, in one folder: `agentevals marathon merge IN... -o OUT`.

Every results file named, or found under the folders named (a downloaded artifact keeps
`.agentevals/marathons/results.jsonl`), is read; every result goes into `OUT/results.jsonl` and its
trace is copied beside it, under the same relative name. Nothing given is lost:

- two copies of one result (the same test, seed and commit, agreeing) are kept once;
- two results of the same test, seed and commit that disagree stop the merge with an error naming
  both (file and line): which one is true is a person's call;
- a result whose trace is missing is kept, and said; a trace that is a link is not followed;
- a merge never overwrites one trace with another: two results naming one trace file get the second a
  name carrying its commit (said in the output), and when that name is taken too the merge stops
  with an error naming both results (file and line) before anything is written.

`OUT` may already hold a merge: its results are read first, so merging again adds what is new.
The results file is written atomically; traces are copied through temporary files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import MarathonError
from ..fileio import atomic_path, write_atomic
from ..trace.terminal import safe
from .results import RESULTS_FILE, SeedResult, latest, read_results, results_in


@dataclass
class Merged:
    """What a merge did."""

    out: Path
    files: list[Path] = field(default_factory=list)
    results: int = 0
    duplicates: int = 0
    traces: int = 0
    missing_traces: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [
            f"merged {self.results} result(s) from {len(self.files)} results file(s) into "
            f"{self.out / RESULTS_FILE}"
            f" ({self.traces} trace(s) copied"
            + (f", {self.duplicates} duplicate(s) kept once" if self.duplicates else "")
            + ")"
        ]
        lines += [f"  renamed: {renamed}" for renamed in self.renamed]
        lines += [f"  no trace: {missing}" for missing in self.missing_traces]
        return lines

    def to_json(self) -> dict[str, object]:
        return {
            "out": str(self.out),
            "files": [str(path) for path in self.files],
            "results": self.results,
            "duplicates": self.duplicates,
            "traces": self.traces,
            "missing_traces": self.missing_traces,
            "renamed": self.renamed,
        }

    def text(self, format: str) -> str:
        """What `agentevals marathon merge` prints: the lines above, or one JSON object."""
        return json.dumps(self.to_json(), indent=2) if format == "json" else safe("\n".join(self.lines()))


def merge(inputs: Sequence[str | Path], out: str | Path) -> Merged:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise MarathonError(f"{out}: --out must be a folder (the merged results and traces go there)")
    files = results_in(inputs, exclude=out)
    if not files:
        raise MarathonError(
            "no marathon results file (results.jsonl) in "
            + ", ".join(str(p) for p in inputs)
            + ": a marathon writes one under .agentevals/marathons/"
        )
    existing = out / RESULTS_FILE
    if existing.is_file():
        files = [existing, *files]
    done = Merged(out, files=files)
    chosen, done.duplicates = gather(files)
    ordered = [pair for _, pair in sorted(chosen.items(), key=lambda item: _order(item[0]))]
    names = _trace_names(ordered, done)  # every collision found before a file is written
    out.mkdir(parents=True, exist_ok=True)
    merged: list[SeedResult] = []
    for result, path in ordered:
        merged.append(_with_trace(result, path, out, names.get(result.key), done))
    done.results = len(merged)
    lines = [json.dumps(r.to_json(), ensure_ascii=False, separators=(",", ":")) for r in merged]
    write_atomic(existing, "".join(line + "\n" for line in lines))
    return done


def gather(
    files: Sequence[Path],
) -> tuple[dict[tuple[str, int, str | None], tuple[SeedResult, Path]], int]:
    """One result per test, seed and commit from several results files (each file's last line for a
    key), with the file it came from, and how many agreeing copies were dropped. Two that disagree are
    a `MarathonError` naming both."""
    chosen: dict[tuple[str, int, str | None], tuple[SeedResult, Path]] = {}
    duplicates = 0
    for path in files:
        for result in latest(read_results(path)):
            held = chosen.get(result.key)
            if held is None:
                chosen[result.key] = (result, path)
            elif held[0].agrees_with(result):
                duplicates += 1
            else:
                raise MarathonError(_disagreement(held[0], result))
    return chosen, duplicates


def _order(key: tuple[str, int, str | None]) -> tuple[str, str, int]:
    return (key[0], key[2] or "", key[1])


def _disagreement(first: SeedResult, second: SeedResult) -> str:
    def said(r: SeedResult) -> str:
        return (
            f"{r.source}: {r.outcome}, {r.status}, verified pass {r.passed}, "
            f"progress-AUC {r.metrics.progress_auc:.3f}, ${r.metrics.cost_usd:.4g}"
        )

    return (
        f"two results of {first.test} seed {first.seed} at commit {first.commit} disagree — {said(first)}; "
        f"{said(second)}. Keep the right one (delete the other line or file) and merge again"
    )


def _trace_names(
    ordered: Sequence[tuple[SeedResult, Path]], done: Merged
) -> dict[tuple[str, int, str | None], str]:
    """The name in OUT of each result's trace, none shared: a name taken by another result gets the
    commit added (reported); when that is taken too, a `MarathonError` naming both results."""
    names: dict[tuple[str, int, str | None], str] = {}
    holder: dict[str, SeedResult] = {}
    for result, _ in ordered:
        if result.trace is None:
            continue
        name = result.trace
        if name in holder:
            stem = name.removesuffix(".trace.jsonl")
            name = f"{stem}-{(result.commit or 'unknown')[:12]}.trace.jsonl"
            if name in holder:
                first = holder[result.trace]
                raise MarathonError(
                    f"{first.source} ({first.test} seed {first.seed}) and {result.source} "
                    f"({result.test} seed {result.seed}) both name the trace {result.trace!r}, "
                    "and a merge never overwrites one trace with another: nothing was written. "
                    "Fix the `trace` of one of them (or merge them into separate folders)"
                )
            done.renamed.append(
                f"{result.source}: trace {result.trace} is another result's name; copied as {name}"
            )
        holder[name] = result
        names[result.key] = name
    return names


def _with_trace(result: SeedResult, path: Path, out: Path, name: str | None, done: Merged) -> SeedResult:
    """The result with its trace copied into `out` under `name` (one no other result has)."""
    if result.trace is None or name is None:
        done.missing_traces.append(f"{result.test} seed {result.seed} at {result.commit}: none recorded")
        return result
    source = path.parent / result.trace
    target = out / name
    problem = _unsafe(source, path.parent)
    if problem is not None:
        done.missing_traces.append(f"{source}: {problem}; the result is kept without it")
        return replace(result, trace=None)
    if not target.resolve().is_relative_to(out.resolve()):
        done.missing_traces.append(f"{source}: would land outside {out}; not copied")
        return replace(result, trace=None)
    if source.resolve() != target.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as temp:
            shutil.copyfile(source, temp)
    done.traces += 1
    return replace(result, trace=name)


def _unsafe(source: Path, folder: Path) -> str | None:
    """Why a trace must not be copied: missing, a link, not a file, or outside its results' folder."""
    if source.is_symlink():
        return "is a link (not followed)"
    if not source.exists():
        return "is missing"
    if not source.is_file():
        return "is not a file"
    if not source.resolve().is_relative_to(folder.resolve()):
        return "lies outside its results file's folder (a link on the way)"
    return None
