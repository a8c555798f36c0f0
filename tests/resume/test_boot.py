"""Booting from a recorded run's checkpoint: `resume_point_from_trace` and the resume hook.

The marathon layer's supervisor restarts a crashed seed from its own last checkpoint through the same
hook a checkpoint fixture uses, so both are tested here against real recorded traces.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals.errors import CheckpointError
from pytest_agentevals.resume import ResumePoint, resume_point_from_trace

pytest_plugins = ["pytester"]


def record_run(path: Path, workspace: Path, *, crash: bool = False) -> Path:
    """A run with three checkpoints (steps stay 0: no model calls), its workspace growing."""
    workspace.mkdir(parents=True, exist_ok=True)
    with ae.Recorder(path, agent="demo", seed=5, task={"goal": "three files"}):
        for n in range(1, 4):
            (workspace / f"f{n}.txt").write_text(f"file {n}\n")
            (workspace / "notes").mkdir(exist_ok=True)
            (workspace / "notes" / "log.md").write_text("done: " + ", ".join(map(str, range(1, n + 1))))
            ae.verification(f"f{n}", True, progress=n / 3)
            ae.checkpoint({"done": n}, workspace=workspace, name=f"f{n}")
    if crash:  # as a crash leaves a trace: no run_end, and a torn last line
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:-1]) + '{"type": "note", "seq": 99, "t"')
    return path


def test_a_run_boots_from_its_latest_checkpoint(tmp_path: Path) -> None:
    trace = record_run(tmp_path / "run.trace.jsonl", tmp_path / "live")
    point = resume_point_from_trace(trace, "latest", tmp_path / "restored")
    assert isinstance(point, ResumePoint)
    assert point.name is None
    assert point.state == {"done": 3}
    assert (point.task, point.seed, point.step) == ({"goal": "three files"}, 5, 0)
    assert sorted(p.relative_to(point.workspace).as_posix() for p in point.workspace.rglob("*")) == [
        "f1.txt",
        "f2.txt",
        "f3.txt",
        "notes",
        "notes/log.md",
    ]
    assert (point.workspace / "notes" / "log.md").read_text() == "done: 1, 2, 3"
    assert point.events[0]["type"] == "run_start"
    assert point.events[-1]["type"] == "checkpoint"
    assert point.events[-1]["name"] == "f3"
    lineage = point.lineage
    assert lineage["trace"] == str(trace)
    assert len(lineage["sha256"]) == 64
    assert lineage["checkpoint"] == "f3"
    assert lineage["progress"] == pytest.approx(1.0)
    assert lineage["run_status"] == "ok"
    assert lineage["total_tokens"] == 0


def test_a_step_picks_the_last_checkpoint_at_or_before_it(tmp_path: Path) -> None:
    trace = record_run(tmp_path / "run.trace.jsonl", tmp_path / "live")
    # All three checkpoints are at step 0 (no model call): the last one at or before step 0 wins.
    point = resume_point_from_trace(trace, 0, tmp_path / "restored")
    assert point.state == {"done": 3}


def test_a_crashed_run_boots_from_what_it_wrote(tmp_path: Path) -> None:
    trace = record_run(tmp_path / "run.trace.jsonl", tmp_path / "live", crash=True)
    assert not trace.read_text().endswith("\n")  # torn, no run_end
    point = resume_point_from_trace(trace, "latest", tmp_path / "restored")
    assert point.state == {"done": 3}
    assert point.lineage["run_status"] is None


def test_no_checkpoint_is_an_error_naming_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "none.trace.jsonl"
    with ae.Recorder(trace):
        ae.note("nothing to resume")
    with pytest.raises(CheckpointError, match=r"none.trace.jsonl: no checkpoint at or before step latest"):
        resume_point_from_trace(trace, "latest", tmp_path / "ws")
    assert not (tmp_path / "ws").exists()


def test_a_workspace_that_is_not_empty_is_refused(tmp_path: Path) -> None:
    trace = record_run(tmp_path / "run.trace.jsonl", tmp_path / "live")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="is not empty"):
        resume_point_from_trace(trace, "latest", tmp_path / "busy")
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["mine.txt"]


def test_a_large_file_without_content_is_named_with_the_fix(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    big = os.urandom(300 * 1024)
    (live / "model.bin").write_bytes(big)
    trace = tmp_path / "big.trace.jsonl"
    with ae.Recorder(trace):
        ae.checkpoint({"n": 1}, workspace=live)
    with pytest.raises(CheckpointError, match=r"no content for model.bin \(307200 bytes\).*--files-from"):
        resume_point_from_trace(trace, "latest", tmp_path / "ws")
    assert not (tmp_path / "ws").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ws")] == []
    # With the file given, checked against its recorded hash, the restore is whole.
    point = resume_point_from_trace(trace, "latest", tmp_path / "ws", files_from=live)
    assert (point.workspace / "model.bin").read_bytes() == big
    (live / "model.bin").write_bytes(b"another file")
    with pytest.raises(CheckpointError, match=r"is not the file 'model\.bin' the checkpoint recorded"):
        resume_point_from_trace(trace, "latest", tmp_path / "ws2", files_from=live)


def _trace_with_workspace(path: Path, files: dict[str, object]) -> Path:
    start = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "x", "contract": {}}
    checkpoint = {
        "type": "checkpoint",
        "seq": 1,
        "t": 0.1,
        "step": 0,
        "state": {"n": 1},
        "workspace": {"root": "/w", "files": files},
    }
    path.write_text(json.dumps(start) + "\n" + json.dumps(checkpoint) + "\n")
    return path


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"up": {"link": "../../etc"}}, "is a link to '../../etc', outside the workspace"),
        ({"abs": {"link": "/etc/passwd"}}, "an absolute target"),
        (
            # Each link stays inside on its own; followed through the first, the second leaves.
            {"a/l1": {"link": ".."}, "l2": {"link": "a/l1/.."}, "a/x.txt": {"text": "x"}},
            "'l2' is a link to 'a/l1/..', which leaves the workspace through its other links",
        ),
        ({"lnk": {"link": "sub"}, "lnk/f.txt": {"text": "through the link"}}, "lies below 'lnk'"),
        ({"loop1": {"link": "loop2/x"}, "loop2": {"link": "loop1/y"}}, "leaves the workspace"),
    ],
)
def test_hostile_links_in_a_trace_are_refused_before_anything_is_written(
    tmp_path: Path, files: dict[str, object], message: str
) -> None:
    trace = _trace_with_workspace(tmp_path / "bad.trace.jsonl", files)
    with pytest.raises(CheckpointError, match=message) as raised:
        resume_point_from_trace(trace, "latest", tmp_path / "ws")
    assert "bad.trace.jsonl:2" in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.trace.jsonl"]


def test_a_link_inside_the_workspace_is_restored_as_a_link(tmp_path: Path) -> None:
    trace = _trace_with_workspace(
        tmp_path / "ok.trace.jsonl", {"docs/a.md": {"text": "a"}, "latest.md": {"link": "docs/a.md"}}
    )
    point = resume_point_from_trace(trace, "latest", tmp_path / "ws")
    assert os.readlink(point.workspace / "latest.md") == "docs/a.md"
    assert (point.workspace / "latest.md").read_text() == "a"


def test_the_resume_hook_is_registered_whenever_the_plugin_loads(pytester: pytest.Pytester) -> None:
    trace = record_run(pytester.path / "run.trace.jsonl", pytester.path / "live")
    pytester.makeconftest(
        """
        def pytest_agentevals_resume_agent(checkpoint):
            if checkpoint.task != {"goal": "three files"}:
                return None
            return sorted(p.name for p in checkpoint.workspace.iterdir()), checkpoint.state

        def pytest_agentevals_resume_agent(checkpoint):  # noqa: F811 - the last one is registered
            return ("restarted", checkpoint.state["done"], checkpoint.name)
        """
    )
    pytester.makepyfile(
        f"""
        from pathlib import Path
        from pytest_agentevals.resume import resume_point_from_trace

        def test_a_supervisor_restarts_through_the_hook(request, tmp_path):
            point = resume_point_from_trace(Path({str(trace)!r}), "latest", tmp_path / "ws")
            result = request.config.hook.pytest_agentevals_resume_agent(checkpoint=point)
            assert result == ("restarted", 3, None)  # firstresult: one value, not a list
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
