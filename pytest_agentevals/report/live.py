"""The live console's engine: the report of traces that are still growing, kept up to date.

`Watch(paths)` follows each trace with a `TraceTail` (each poll reads the lines written since the
last, never from the start) into a `RunReading` (the report's own one-pass reading), and finds the
traces a folder gains (a marathon in progress: one trace per seed, appearing as seeds start).

- `page()` is the report's page, as `build_report(...).html()` draws it, with the data the script
  needs to ask for updates;
- `update(since)` is what changed since the version the page holds: for each run that grew, or
  whose liveness changed (running → silent for 2 m), its whole section and its data, as the
  static page draws them (drawn again from what changed since the last update: `redraw.py`);
  the overview when there are several runs; `reload` when the set of runs
  changed (a seed started). The all-steps text is not in it: `lines(run)` when the reader opens it.

A run with no `run_end` is "running" while its trace grows and "silent for N" when it has not grown
for `silent_after` seconds. Every text goes through the report's secret check before it is served.
The server is `serve.py`; the engine knows no HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TraceError, TraceFormatError
from ..marathon import VerdictRow
from ..trace.reader import TraceTail
from . import numbers, secrets
from .build import default_title, trace_files
from .html import Fragment, overview, render_page
from .redraw import Redraw
from .run import RunReading, RunView

SILENT_AFTER = 60.0  # seconds without growth before a run that has not ended is called silent
POLL_MS = 1000  # how often the page asks for updates


class LiveRun:
    """One trace followed as it grows."""

    def __init__(self, path: Path, *, context_windows: Mapping[str, int] | None, now: float) -> None:
        self.path = path
        self.tail = TraceTail(path)
        self.reading = RunReading(path, context_windows=context_windows)
        self.problems: list[str] = []
        self.damaged = False
        self.grown_at = now
        self.changed = 0  # the watch's version when this run last changed
        self.liveness: str | None = None
        self.redraw = Redraw(context_windows)  # its section as the last update drew it

    @property
    def ended(self) -> bool:
        return self.reading.end is not None

    def poll(self, now: float) -> int:
        """Read what the trace gained; the number of new events. A damaged line stops the reading
        there, said once (as the static report says it); a first line that is no run_start is a
        `TraceError`."""
        if self.damaged or self.tail.complete:
            return 0
        count = 0
        try:
            while True:
                events = self.tail.poll()
                for event in events:
                    self.reading.add(event)
                count += len(events)
                if not (events and self.tail.behind):  # a backlog is read all at once
                    break
        except TraceFormatError as exc:
            if exc.line <= 1 and self.reading.events == 0:
                raise TraceError(f"{self.path}: not a trace: {exc.problem}") from None
            self.damaged = True
            self.problems.append(
                f"line {exc.line} is damaged ({exc.problem}): shown are the {self.reading.events} "
                "events before it"
            )
            count += 1  # the problem is news
        if count:
            self.grown_at = now
        return count

    def live_text(self, now: float, silent_after: float) -> str | None:
        if self.ended:
            return None
        quiet = now - self.grown_at
        if quiet < silent_after:
            return "running"
        return f"silent for {numbers.duration(quiet)}"

    def view(self, now: float, silent_after: float) -> RunView:
        run = self.reading.view(problems=self.problems, damaged=self.damaged)
        run.live = self.live_text(now, silent_after)
        return run


@dataclass
class Watch:
    """The traces under `paths` (files, or folders searched for `*.trace.jsonl`), followed."""

    paths: Sequence[str | Path]
    title: str | None = None
    verdicts: Sequence[VerdictRow] = ()
    context_windows: Mapping[str, int] | None = None
    silent_after: float = SILENT_AFTER
    poll_ms: int = POLL_MS
    clock: Callable[[], float] = time.monotonic
    runs: list[LiveRun] = field(default_factory=list)
    version: int = 0
    _run_set: int = 0  # the version at which the set of runs last changed
    skipped: dict[Path, str] = field(default_factory=dict)  # found in a folder, not a trace: why
    _overview_checked: secrets.Checked = field(default_factory=secrets.Checked)

    def refresh(self) -> bool:
        """Find new traces and read what every trace gained; whether anything changed."""
        now = self.clock()
        changed = False
        known = {run.path for run in self.runs}
        for path in self._candidates():
            if path in known or path in self.skipped:
                continue
            run = LiveRun(path, context_windows=self.context_windows, now=now)
            try:
                run.poll(now)
            except TraceError as exc:
                if self._named(path):
                    raise
                self.skipped[path] = str(exc)
                continue
            self.runs.append(run)
            changed = True
            self.version += 1
            self._run_set = self.version
            run.changed = self.version
        for run in self.runs:
            grew = run.poll(now) > 0
            liveness = run.live_text(now, self.silent_after)
            if grew or liveness != run.liveness:
                run.liveness = liveness
                self.version += 1
                run.changed = self.version
                changed = True
        return changed

    def _named(self, path: Path) -> bool:
        return any(Path(raw) == path for raw in self.paths)

    def _candidates(self) -> Iterable[Path]:
        """The traces to follow: named files once they have a first line (a run just started may
        not have written it yet), and the traces in named folders, as they appear."""
        for path in trace_files(self.paths):
            try:
                if path.stat().st_size == 0:
                    continue
            except FileNotFoundError:
                if self._named(path):
                    continue  # a named trace may not exist yet: it is shown when it does
                continue
            yield path

    def views(self) -> list[RunView]:
        now = self.clock()
        return [run.view(now, self.silent_after) for run in self.runs]

    def page(self) -> str:
        """The whole page (as the static report draws it), for the version it shows."""
        views = self.views()
        fragments = render_page(
            views,
            title=self.title or default_title(views),
            verdicts=self.verdicts,
            context_windows=self.context_windows,
            live={"version": self.version, "poll_ms": self.poll_ms},
        )
        _check(fragments, "the live console")
        return "".join(fragment.text for fragment in fragments)

    def update(self, since: int, have: Sequence[int] | None = None) -> dict[str, Any]:
        """What changed after version `since`: each such run's section and data, the overview.

        Each run's section is whole (`html`), or, given `have` (the page's script: for each run, the
        `state` of its section the page holds, from an earlier update, or -1), in its parts, sent
        whole only where the page does not hold them already (`Redraw.served`)."""
        if since < self._run_set or since > self.version:
            return {"version": self.version, "reload": True}
        now = self.clock()
        changed = [(index, run) for index, run in enumerate(self.runs) if run.changed > since]
        out: dict[str, Any] = {"version": self.version, "reload": False, "runs": []}
        if not changed:
            return out
        views = [run.view(now, self.silent_after) for run in self.runs]
        what = "the live console's update"
        for index, run in changed:
            # Drawn again from what changed since the last update (`redraw.py`): the same section
            # and data as drawn from scratch (all the steps' text: `lines()`), each text checked.
            held = None if have is None else have[index] if index < len(have) else -1
            out["runs"].append(run.redraw.served(index, views[index], what, held))
        if len(views) > 1:
            every = [run.redraw.draw(view) for run, view in zip(self.runs, views, strict=True)]
            out["overview"] = overview(views, every)
            self._overview_checked.check([secrets.Placed("the overview", out["overview"])], what)
        out["title"] = self.title or default_title(views)
        return out

    def lines(self, index: int) -> list[str]:
        """Every step of a run as one line of text (the page's "all N steps as text"), as it is now."""
        if not 0 <= index < len(self.runs):
            raise IndexError(index)
        run = self.runs[index].view(self.clock(), self.silent_after)
        lines = run.transcript.lines
        where = f"run {index + 1} ({run.path}): all its steps as text"
        secrets.check([secrets.Placed(where, "\n".join(lines))], "the live console's step list")
        return lines


def _check(fragments: Sequence[Fragment], what: str) -> None:
    secrets.check((secrets.Placed(f.place, f.text, f.data, f.packed) for f in fragments), what)


__all__ = ["POLL_MS", "SILENT_AFTER", "LiveRun", "Watch"]
