"""`agentevals resume extract|list|show|verify|bless`, as a user runs them (a subprocess), and what
`agentevals scan` finds in a fixture."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals.resume import render
from pytest_agentevals.resume.verify import verify
from pytest_agentevals.settings import Settings

from ..conftest import make_fake_key, run_agentevals
from ..resume_support import edit_manifest, record


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a pyproject.toml (the project root) and a recorded run of the counter agent."""
    (tmp_path / "pyproject.toml").write_text("[tool.agentevals]\n")
    record(tmp_path / "runs" / "counter.trace.jsonl", tmp_path / "runs" / "ws")
    return tmp_path


def extract(project: Path, *args: str) -> None:
    result = run_agentevals("resume", "extract", "runs/counter.trace.jsonl", *args, cwd=project)
    assert result.returncode == 0, result.stderr


def test_extract_writes_a_whole_fixture_and_says_so(project: Path) -> None:
    result = run_agentevals(
        "resume", "extract", "runs/counter.trace.jsonl", "--at", "3", "--name", "c3", cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "agentevals resume: wrote fixtures/c3 (step 3, 3 files)"
    folder = project / "fixtures" / "c3"
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json",
        "state.json",
        "trace.jsonl",
        "workspace.index.json",
        "workspace.tar",
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == 1
    assert manifest["step"] == 3
    assert manifest["seed"] == 4
    assert manifest["contract"]["counter.schema"] == 2
    assert manifest["contract"]["packages.anthropic"] is not None
    assert manifest["lineage"]["trace"] == "runs/counter.trace.jsonl"
    assert manifest["history"][0]["action"] == "extract"
    assert json.loads((folder / "state.json").read_text()) == {"done": 3}
    index = json.loads((folder / "workspace.index.json").read_text())["entries"]
    assert [entry["path"] for entry in index] == ["done/task1.txt", "done/task2.txt", "done/task3.txt"]
    assert set(index[0]) == {"path", "type", "mode", "size", "sha256"}
    assert ae.read_trace(folder / "trace.jsonl")[-1]["state"] == {"done": 3}  # the run up to it
    assert [p.name for p in (project / "fixtures").iterdir()] == ["c3"]  # no scratch folder left


def test_extract_json_and_the_latest_checkpoint_with_its_continuation(project: Path) -> None:
    result = run_agentevals(
        "resume", "extract", "runs/counter.trace.jsonl", "--at", "latest", "--name", "last",
        "--continuation", "--json", cwd=project,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["name"], data["step"], data["replayable"], data["scrubbed"]) == ("last", 6, True, 0)
    continuation = ae.read_trace(project / "fixtures" / "last" / "continuation.trace.jsonl")
    assert continuation[0]["type"] == "run_start"
    assert continuation[-1]["type"] == "run_end"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runs/nothing.trace.jsonl", "--at", "1", "--name", "x"], "nothing.trace.jsonl: no such trace"),
        (["runs/counter.trace.jsonl", "--at", "-3", "--name", "x"], "'-3' is not a step"),
        (["runs/counter.trace.jsonl", "--at", "1", "--name", "../x"], "'../x' is not a fixture name"),
    ],
)
def test_extract_bad_input_exits_2(project: Path, args: list[str], message: str) -> None:
    result = run_agentevals("resume", "extract", *args, cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (project / "fixtures").exists() or not any((project / "fixtures").iterdir())


def test_extract_refuses_to_overwrite_without_force(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c")
    again = run_agentevals(
        "resume", "extract", "runs/counter.trace.jsonl", "--at", "4", "--name", "c", cwd=project
    )
    assert again.returncode == 2
    assert "exists (choose another --name, or --force to replace it)" in again.stderr
    extract(project, "--at", "4", "--name", "c", "--force")
    assert json.loads((project / "fixtures/c/manifest.json").read_text())["step"] == 4
    assert [p.name for p in (project / "fixtures").iterdir()] == ["c"]


def test_extract_scrubs_secrets_so_scan_finds_none(project: Path, tmp_path: Path) -> None:
    key = make_fake_key("resume")
    trace = project / "runs" / "leaky.trace.jsonl"
    workspace = project / "runs" / "leaky"
    workspace.mkdir()
    (workspace / "notes.md").write_text(f"the key is {key}\n")
    with ae.Recorder(trace, task={"agent": "counter"}, secrets=()):
        ae.checkpoint({"token": "none"}, workspace=workspace)
    # The recorder scrubbed what it knew to be secret; a trace arriving from elsewhere may not have:
    # write the key back in, as a careless hand would.
    text = trace.read_text().replace("[REDACTED]", key)
    trace.write_text(text)
    unscrubbed = run_agentevals("scan", "runs", cwd=project)
    assert unscrubbed.returncode == 1  # scan sees it in the trace
    result = run_agentevals(
        "resume", "extract", str(trace), "--at", "latest", "--name", "leaky", "--json", cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["scrubbed"] >= 2
    scanned = run_agentevals("scan", "fixtures", cwd=project)
    assert scanned.returncode == 0, scanned.stdout
    assert key not in "".join(
        p.read_bytes().decode("latin-1") for p in (project / "fixtures/leaky").iterdir()
    )


def test_scan_reads_a_fixtures_archive_members(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c")
    key = make_fake_key("member")
    from ..resume_support import Member, craft_archive

    craft_archive(project / "fixtures" / "c", [Member("config.env", f"KEY={key}\n".encode())])
    result = run_agentevals("scan", "fixtures", cwd=project)
    assert result.returncode == 1
    assert "fixtures/c/workspace.tar::config.env:1: API-key pattern" in result.stdout


def test_list_show_and_their_machine_forms(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c2")
    extract(project, "--at", "5", "--name", "c5", "--continuation")
    (project / "fixtures" / "half").mkdir()
    (project / "fixtures" / "half" / "state.json").write_text("{}")  # an interrupted extraction
    listed = run_agentevals("resume", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["name", "step", "progress", "files", "bytes", "replayable", "source", "run"]
    assert lines[1].split()[:6] == ["c2", "2", "33%", "2", "24", "no"]
    assert lines[2].split()[:6] == ["c5", "5", "83%", "5", "60", "yes"]
    assert lines[3] == "incomplete: fixtures/half (no manifest.json: an interrupted extraction?)"
    data = json.loads(run_agentevals("resume", "list", "--json", cwd=project).stdout)
    assert [row["name"] for row in data["fixtures"]] == ["c2", "c5"]
    assert data["incomplete"] == ["fixtures/half"]
    markdown = run_agentevals("resume", "list", "--format", "markdown", cwd=project).stdout
    assert markdown.splitlines()[2].startswith("| c2 | 2 | 33% |")

    shown = run_agentevals("resume", "show", "c5", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "at         step 5 · checkpoint 'task 5'" in shown.stdout
    assert "state      done" in shown.stdout
    assert "workspace  5 files, 60 bytes" in shown.stdout
    assert (
        "run before 5 steps · 0 tool calls · 5 checkpoints · 0 compactions · 5/5 checks passed"
        in shown.stdout
    )
    assert "  counter.schema = 2" in shown.stdout
    data = json.loads(run_agentevals("resume", "show", "--json", "c5", cwd=project).stdout)
    assert data["state_keys"] == ["done"]
    assert data["run_before"]["steps"] == 5
    assert data["lineage"]["progress"] == pytest.approx(5 / 6)


def test_verify_passes_then_fails_naming_the_edited_package_version_then_bless_fixes_it(
    project: Path,
) -> None:
    extract(project, "--at", "2", "--name", "c")
    ok = run_agentevals("resume", "verify", cwd=project)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("ok      fixtures/c (python and packages match;")
    edit_manifest(project / "fixtures" / "c", lambda m: m["contract"].update({"packages.anthropic": "0.9.1"}))
    failed = run_agentevals("resume", "verify", cwd=project)
    assert failed.returncode == 1
    assert "FAILED  fixtures/c" in failed.stdout
    assert "contract drift: packages.anthropic recorded 0.9.1, now" in failed.stdout
    assert "| major" in failed.stdout
    as_json = json.loads(run_agentevals("resume", "verify", "--json", cwd=project).stdout)
    assert as_json["fixtures"][0]["drift"][0]["key"] == "packages.anthropic"
    # Tolerated where declared: a major drift is beyond a patch tolerance, not beyond a key-wide one.
    assert (
        run_agentevals("resume", "verify", "--contract-tolerate", "packages.*:patch", cwd=project).returncode
        == 1
    )
    assert (
        run_agentevals("resume", "verify", "--contract-tolerate", "packages.*", cwd=project).returncode == 0
    )
    assert run_agentevals("resume", "verify", "--contract-policy", "warn", cwd=project).returncode == 0

    blessed = run_agentevals(
        "resume", "bless", "c", "--reason", "the SDK's wire format is unchanged", cwd=project
    )
    assert blessed.returncode == 0, blessed.stderr
    assert "packages.anthropic | 0.9.1" in blessed.stdout
    assert run_agentevals("resume", "verify", "c", cwd=project).returncode == 0
    history = json.loads((project / "fixtures/c/manifest.json").read_text())["history"]
    assert history[-1]["action"] == "bless"
    assert history[-1]["reason"] == "the SDK's wire format is unchanged"
    assert history[-1]["changes"][0]["recorded"] == "0.9.1"
    nothing = run_agentevals("resume", "bless", "c", "--reason", "again", cwd=project)
    assert nothing.stdout.strip() == "c: nothing drifted; the manifest is unchanged"


def test_the_verify_gate_works_from_plain_python_and_the_command_prints_its_rendering(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extract(project, "--at", "2", "--name", "c")
    edit_manifest(project / "fixtures" / "c", lambda m: m["contract"].update({"packages.anthropic": "0.9.1"}))
    monkeypatch.chdir(project)  # paths are shown relative to where the command runs
    settings = Settings.for_command_line()
    (check,) = verify(settings)
    assert (check.name, check.ok) == ("c", False)
    assert [drift.key for drift in check.drifts or []] == ["packages.anthropic"]
    for format in ("text", "json"):
        printed = run_agentevals("resume", "verify", "--format", format, cwd=project)
        assert printed.returncode == 1
        assert printed.stdout == render.verified([check], settings.fixtures_dir, format) + "\n"


def test_bless_records_a_declared_key(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c")
    result = run_agentevals(
        "resume",
        "bless",
        "c",
        "--reason",
        "schema 3 reads schema 2",
        "--key",
        "counter.schema=3",
        cwd=project,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((project / "fixtures/c/manifest.json").read_text())["contract"]["counter.schema"] == 3


def test_verify_of_an_unknown_name_is_bad_input_listing_the_fixtures(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c")
    result = run_agentevals("resume", "verify", "nope", cwd=project)
    assert result.returncode == 2
    assert "nope: no such checkpoint fixture in" in result.stderr
    assert "(the fixtures there: c)" in result.stderr


def test_verify_fails_on_an_incomplete_fixture(project: Path) -> None:
    extract(project, "--at", "2", "--name", "c")
    os.remove(project / "fixtures" / "c" / "manifest.json")
    result = run_agentevals("resume", "verify", cwd=project)
    assert result.returncode == 1
    assert "FAILED  fixtures/c" in result.stdout
    assert "no manifest.json: not a whole fixture" in result.stdout


def test_the_repository_fixtures_verify(repo_root: Path) -> None:
    result = run_agentevals("resume", "verify", cwd=repo_root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok      fixtures/taskrunner-") == 3


@pytest.mark.parametrize("replacing", [False, True])
def test_an_extraction_that_fails_partway_leaves_no_fixture_and_the_old_one_whole(
    project: Path, monkeypatch: pytest.MonkeyPatch, replacing: bool
) -> None:
    extracting = importlib.import_module("pytest_agentevals.resume.extraction")
    fixtures = project / "fixtures"
    if replacing:
        extract(project, "--at", "latest", "--name", "c")
    before = {p.relative_to(fixtures): p.read_bytes() for p in fixtures.rglob("*") if p.is_file()}

    def dies(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the state, archive and traces are written; the manifest is not

    monkeypatch.setattr(extracting, "_manifest", dies)
    with pytest.raises(KeyboardInterrupt):
        extracting.extract(project / "runs" / "counter.trace.jsonl", "latest", "c", fixtures, force=True)
    after = {p.relative_to(fixtures): p.read_bytes() for p in fixtures.rglob("*") if p.is_file()}
    assert after == before  # nothing new, nothing half-replaced, no scratch folder left
    assert sorted(p.name for p in fixtures.iterdir()) == (["c"] if replacing else [])

    # A scratch folder a SIGKILL left behind is never listed or booted as a fixture.
    (fixtures / ".c.extracting-0000abcd").mkdir()
    (fixtures / ".c.extracting-0000abcd" / "state.json").write_text("{}")
    listed = run_agentevals("resume", "list", "--format", "json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [f["name"] for f in data["fixtures"]] == (["c"] if replacing else [])
