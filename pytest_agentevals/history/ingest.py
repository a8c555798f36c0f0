"""Load JUnit XML files from CI into the history: idempotent, outage-aware, one transaction per file.

- A file is stored under the sha256 of its bytes: ingesting it again adds nothing.
- A file the plugin wrote while it also recorded the session live (its `agentevals_source` suite
  property names a session already in the history) is skipped: those attempts are stored already.
- A run in which nearly every test failed is skipped with a line saying so: an outage, not flakiness.
- A file that cannot be read or parsed is reported (naming it) and left out; the other files go on,
  and nothing stored before is touched.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HistoryError
from ..trace.scrub import Scrubber
from . import junit
from .model import JUNIT, Attempt, Source
from .outage import describe, is_outage, tally
from .store import HistoryStore


def expand(patterns: Sequence[str]) -> list[Path]:
    """The files matching shell patterns (`**` spans folders), sorted; an error for a pattern that
    matches nothing, so a CI step with a wrong path fails instead of ingesting nothing."""
    found: dict[str, None] = {}
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) or ([pattern] if Path(pattern).is_file() else [])
        files = [m for m in matches if Path(m).is_file()]
        if not files:
            raise HistoryError(
                f"{pattern!r}: matches no file; check the path (quote it so the shell leaves ** alone)"
            )
        found.update(dict.fromkeys(files))
    return [Path(name) for name in found]


@dataclass
class IngestSummary:
    files: int = 0
    stored: int = 0  # files stored now
    attempts: int = 0  # attempts stored now
    already: int = 0  # files already in the history (ingested before, or recorded live)
    outage_runs: int = 0  # runs skipped as infrastructure outages
    unlayered: set[str] = field(default_factory=set)  # ids of tests stored now that carry no layer
    errors: list[str] = field(default_factory=list)  # one line per file that could not be read


class Ingester:
    """Ingests JUnit files into one store, mapping test ids against what the store already knows."""

    def __init__(
        self, store: HistoryStore, rootdir: Path, say: Callable[[str], None] = lambda line: None
    ) -> None:
        self.store = store
        self.say = say
        self.ids = junit.TestIds(rootdir, store.known_tests())
        self.scrubber = Scrubber()  # a parametrized test id can hold a value: none is stored
        # (classname, name) -> (scrubbed test id, its layer in the history, secrets in it): the same
        # tests come back in every file. Made with one memo of the scrubber, dropped with it.
        self._resolved: dict[tuple[str, str], tuple[str, str | None, int]] = {}
        self._resolved_by: Callable[[str], str] | None = None

    def ingest(
        self,
        paths: Sequence[Path],
        *,
        sha: str | None,
        run_id: str | None,
        branch: str | None = None,
    ) -> IngestSummary:
        """Ingest `paths` as one run (`run_id`), or each file as a run of its own when it is None."""
        summary = IngestSummary(files=len(paths))
        if run_id is not None:
            self._run(list(paths), sha, run_id, branch, summary)
        else:
            for path in paths:
                self._run([path], sha, None, branch, summary)
        return summary

    def _load(self, path: Path, summary: IngestSummary) -> junit.JUnitFile | None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self._error(summary, f"{path}: cannot be read ({exc.strerror}); check the path and permissions")
            return None
        digest = junit.digest_of(data)
        if self.store.has_source(JUNIT + ":" + digest):
            summary.already += 1
            self.say(f"{path}: already ingested, nothing added")
            return None
        try:
            parsed = junit.parse(path, data, digest)
        except HistoryError as exc:
            self._error(summary, str(exc))
            return None
        if parsed.source and self.store.has_source(parsed.source):
            summary.already += 1
            self.say(f"{path}: recorded live by pytest session {parsed.source} already, nothing added")
            return None
        return parsed

    def _error(self, summary: IngestSummary, line: str) -> None:
        summary.errors.append(line)
        self.say("error: " + line)

    def _run(
        self,
        paths: list[Path],
        sha: str | None,
        run_id: str | None,
        branch: str | None,
        summary: IngestSummary,
    ) -> None:
        files = [f for f in (self._load(path, summary) for path in paths) if f is not None]
        if not files:
            return
        tests, failed = tally(case.outcomes[-1][0] for f in files for case in f.cases if case.outcomes)
        if is_outage(tests, failed):
            summary.outage_runs += 1
            label = run_id or ", ".join(str(f.path) for f in files)
            self.say(f"skipped run {label}: {describe(tests, failed)}")
            return
        for parsed in files:
            source = Source(
                key=JUNIT + ":" + parsed.digest,
                kind=JUNIT,
                run_id=run_id or "junit-" + parsed.digest[:12],
                sha=sha,
                branch=branch,
                path=str(parsed.path),
            )
            attempts = self._attempts(parsed)
            if self.store.ingest(source, attempts):
                summary.stored += 1
                summary.attempts += len(attempts)
                summary.unlayered.update(a.test_id for a in attempts if a.layer is None)
            else:  # another process ingested it meanwhile
                summary.already += 1

    def _attempts(self, parsed: junit.JUnitFile) -> list[Attempt]:
        out: list[Attempt] = []
        scrubber = self.scrubber
        scrub = scrubber.memo()  # the same ids come back in every file: each scrubbed once
        if scrub is not self._resolved_by:  # new secrets: an id may scrub differently now
            self._resolved, self._resolved_by = {}, scrub
        resolved, nodeid_of, layer_of = self._resolved, self.ids.nodeid, self.ids.layer
        append = out.append
        new = tuple.__new__  # Attempt's own __new__ is a Python function: a tenth of this loop
        for case in parsed.cases:
            key = (case.classname, case.name)
            known = resolved.get(key)
            if known is None:
                before = scrubber.redactions
                test_id = scrub(nodeid_of(*key))
                known = resolved[key] = (test_id, layer_of(test_id), scrubber.redactions - before)
            elif known[2]:
                scrubber.redactions += known[2]  # each occurrence counted, as scrub_text would
            test_id = known[0]
            layer = case.layer or known[1]
            variant = scrub(case.variant) if case.variant else ""
            outcomes = case.outcomes
            if len(outcomes) == 1:  # the common case: no rerun
                append(new(Attempt, (test_id, layer, variant, 1, *outcomes[0], None)))
                continue
            for number, (outcome, seconds) in enumerate(outcomes, start=1):
                append(new(Attempt, (test_id, layer, variant, number, outcome, seconds, None)))
        return out
