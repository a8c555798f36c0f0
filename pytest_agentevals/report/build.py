"""The run report, from traces to a file: `build_report(paths)`, then `.html()` or `.markdown()`, and
`write_report`. Used by `agentevals report` and by `pytest --agentevals-report=PATH`.

    report = build_report(["run.trace.jsonl"])
    write_report(report, "report.html")          # refused, naming the place, if it would hold a key
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ReportError
from ..fileio import make_folders, write_atomic
from ..marathon import VerdictRow
from ..trace.naming import trace_files
from . import secrets
from .html import render_page
from .markdown import summary_markdown
from .run import RunView, read_run
from .triage import Triage, triage_markdown

FORMATS = ("html", "markdown")


@dataclass
class Report:
    runs: list[RunView]
    title: str
    verdicts: Sequence[VerdictRow] = ()
    context_windows: Mapping[str, int] | None = None
    problems: list[str] = field(default_factory=list)  # every run's, "file: problem"
    triage: Sequence[Triage] = ()  # triage results shown as their own section

    @property
    def damaged(self) -> bool:
        """A trace had a damaged line in the middle: the page shows what came before it."""
        return any(run.damaged for run in self.runs)

    def html(self) -> str:
        """The page. Raises `ReportError`, naming the place, if it would hold a secret-shaped string."""
        fragments = render_page(
            self.runs,
            title=self.title,
            verdicts=self.verdicts,
            context_windows=self.context_windows,
            triage=self.triage,
        )
        secrets.check(
            (secrets.Placed(f.place, f.text, f.data, f.packed) for f in fragments), "the HTML report"
        )
        return "".join(fragment.text for fragment in fragments)

    def markdown(self) -> str:
        text = summary_markdown(self.runs, title=self.title, verdicts=self.verdicts)
        if self.triage:
            text = text.rstrip("\n") + "\n\n" + triage_markdown(self.triage) + "\n"
        secrets.check([secrets.Placed("the Markdown summary", text)], "the Markdown summary")
        return text

    def render(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise ValueError(f"format {fmt!r}: use one of {', '.join(FORMATS)}")
        return self.html() if fmt == "html" else self.markdown()


def build_report(
    paths: Iterable[str | Path],
    *,
    title: str | None = None,
    verdicts: Sequence[VerdictRow] = (),
    context_windows: Mapping[str, int] | None = None,
    allow_empty: bool = False,
    triage: Sequence[Triage] = (),
) -> Report:
    """Read each trace (a folder stands for the traces in it) into a report. A file that is not a
    trace raises `TraceError`; no trace at all raises `ReportError` unless `allow_empty`. `triage`:
    results of `agentevals triage` (`report.triage.load_triage`), shown as their own section."""
    files = trace_files(paths)
    if not files and not allow_empty:
        raise ReportError(
            "no trace to report on: give .trace.jsonl files, or folders holding them "
            "(`python -m examples` records .agentevals/example/taskrunner.trace.jsonl)"
        )
    runs = [read_run(path, context_windows=context_windows) for path in files]
    return Report(
        runs=runs,
        title=title or default_title(runs),
        verdicts=verdicts,
        context_windows=context_windows,
        problems=[f"{run.path}: {problem}" for run in runs for problem in run.problems],
        triage=tuple(triage),
    )


def default_title(runs: Sequence[RunView]) -> str:
    if len(runs) == 1:
        run = runs[0]
        return f"{run.metrics.agent or 'run'}: {run.status} — agentevals run report"
    return f"{len(runs)} runs — agentevals run report"


def write_report(report: Report, path: str | Path, fmt: str = "html", *, root: Path | None = None) -> int:
    """Write the report atomically (a temporary file beside it, then a rename), so a reader never
    sees half a page; returns its size in bytes. Nothing is written if the report is refused, and
    nothing through a link between `root` (default: the working directory) and it (`LinkRefused`)."""
    data = report.render(fmt).encode("utf-8", "replace")  # a lone surrogate from a trace becomes "?"
    target = Path(path)
    make_folders(target.parent, root)  # a folder made through a committed link lands outside the tree
    write_atomic(target, data, root)
    return len(data)


# What the docs and a user may import from here; the rest is this module's own.
__all__ = [
    "FORMATS",
    "Report",
    "build_report",
    "default_title",
    "trace_files",
    "write_report",
]
