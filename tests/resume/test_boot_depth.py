"""Booting a fixture costs the same at any depth (issue 34, item 4): counted, not timed.

A trace stores each checkpoint's state as a delta against the one before, and its workspace as a
delta too; a fixture extracted from it holds the whole state and the whole workspace, so a boot —
contract, workspace, state, the leg's recorder — reads no trace event and applies no delta, whether
the checkpoint is at step 100 or at step 3,000 of its run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.lifecycle import RunSpec
from pytest_agentevals.resume import ResumeRun, extract
from pytest_agentevals.resume import fixture as fixture_module
from pytest_agentevals.resume.fixture import Fixture
from pytest_agentevals.trace import delta, reader
from pytest_agentevals.trace.writer import TraceWriter

START = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "2026-01-01", "contract": {}}
FILES = {f"notes/{n}.txt": {"size": 6, "text": f"note {n}"} for n in range(20)}


def deep_trace(path: Path, steps: int) -> Path:
    """A run of `steps` checkpoints: the state changes at each (stored as deltas), the workspace
    never (stored whole once, then as empty deltas)."""
    with TraceWriter(path) as writer:
        writer.write(START)
        for step in range(1, steps + 1):
            workspace = (
                {"root": "/w", "files": FILES}
                if step == 1
                else {"root": "/w", "base": "previous", "files": {}}
            )
            state = {"step": step, "plan": ["read", "write", "check"], "notes": "x" * 200}
            writer.write(
                {
                    "type": "checkpoint",
                    "seq": step,
                    "t": 0.0,
                    "step": step,
                    "state": state,
                    "workspace": workspace,
                }
            )
        writer.write({"type": "run_end", "seq": steps + 1, "t": 0.0, "status": "ok", "totals": {}})
    return path


class Work:
    """Counts what a boot reads: trace events, state deltas applied, request deltas applied, bytes hashed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = dict.fromkeys(("trace_events", "state_deltas", "request_deltas", "hashed_bytes"), 0)
        real_iter, real_state, real_apply, real_hash = (
            reader.TraceReader.__iter__,
            delta.apply_state,
            delta.apply,
            fixture_module.sha256_of,
        )

        def iterate(this: Any) -> Iterator[Any]:
            # The fixture's own trace (the source run), not the leg's, which the leg writes and reads.
            source = "fixtures" in Path(this.path).parts
            for event in real_iter(this):
                self.counts["trace_events"] += source
                yield event

        def apply_state(*args: Any, **kwargs: Any) -> Any:
            self.counts["state_deltas"] += 1
            return real_state(*args, **kwargs)

        def apply(*args: Any, **kwargs: Any) -> Any:
            self.counts["request_deltas"] += 1
            return real_apply(*args, **kwargs)

        def sha256_of(path: Path) -> str:
            self.counts["hashed_bytes"] += path.stat().st_size
            return real_hash(path)

        monkeypatch.setattr(reader.TraceReader, "__iter__", iterate)
        monkeypatch.setattr(delta, "apply_state", apply_state)
        monkeypatch.setattr(delta, "apply", apply)
        monkeypatch.setattr(fixture_module, "sha256_of", sha256_of)

    def reset(self) -> dict[str, int]:
        counted = dict(self.counts)
        self.counts.update(dict.fromkeys(self.counts, 0))
        return counted


def boot(folder: Path, scratch: Path) -> dict[str, Any]:
    """What `agentevals_resume` does before the agent: open the fixture, boot the leg, hand the
    resume hook its checkpoint; the agent here only reads the state."""
    seen: dict[str, Any] = {}

    def runner(checkpoint: Any) -> dict[str, Any]:
        seen.update(checkpoint.state)
        return seen

    spec = RunSpec("depth leg", workspace=scratch / "ws", trace=scratch / "leg.trace.jsonl", runner=runner)
    run = ResumeRun(spec, Fixture.open(folder))
    run.start()
    try:
        run.run_agent()
    finally:
        run.close()
    return seen


def test_booting_at_step_3000_does_the_work_of_booting_at_step_100(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = deep_trace(tmp_path / "deep.trace.jsonl", 3000)
    folders = {at: extract(trace, at, f"at-{at}", tmp_path / "fixtures")[0].folder for at in (100, 3000)}
    work = Work(monkeypatch)
    done = {}
    for at, folder in folders.items():
        assert boot(folder, tmp_path / f"boot-{at}")["step"] == at  # the whole state, at its step
        done[at] = work.reset()
    # The same work at both depths; the bytes hashed differ by the digits of the step in state.json.
    hashed = {at: counts.pop("hashed_bytes") for at, counts in done.items()}
    assert done[100] == done[3000], done
    assert abs(hashed[3000] - hashed[100]) <= 8, hashed
    assert done[3000]["trace_events"] == 0  # the source trace is never read at boot
    assert done[3000]["state_deltas"] == 0  # the fixture's state is whole: no chain walked
    assert done[3000]["request_deltas"] == 0
    # The fixture keeps the savings of the trace it came from: a state delta per checkpoint in the
    # trace, one whole state (and one whole workspace) in the fixture.
    lines = trace.read_text().splitlines()
    assert all("state_delta" in json.loads(line) for line in lines[2:-1])
    assert json.loads((folders[3000] / "state.json").read_text())["step"] == 3000
