"""The environment contract (`contract.py`): one drift comparison and one set of declared tolerances
for both layers that hold a recording against this environment — a replay's staleness check and a
resume's boot. One `contract_tolerate` entry in pyproject.toml applies to both."""

from __future__ import annotations

import importlib.metadata
import json
import warnings
from pathlib import Path
from typing import Any

import anthropic
import pytest

import pytest_agentevals as ae
from pytest_agentevals import contract as contract_module
from pytest_agentevals.contract import ABSENT, compare_request, request_contract, tolerances

from . import replay_support, resume_support

pytest_plugins = ["pytester"]

CONFTEST = """
import replay_support
import resume_support

def pytest_agentevals_run_agent(run):
    return replay_support.run_agent(replay_support.client(), run.task)

def pytest_agentevals_resume_agent(checkpoint):
    return resume_support.run_counter(checkpoint.state, checkpoint.workspace)

def pytest_agentevals_contract():
    return {"counter.schema": 2}
"""

TESTS = """
import pytest

@pytest.mark.replay("fix")
def test_replay(agentevals_replay):
    assert agentevals_replay.run_agent() == "Fixed: add() now adds."

@pytest.mark.resume("counter-2")
def test_resume(agentevals_resume):
    assert agentevals_resume.run_agent() == {"done": 6}
"""

INSTALLED = anthropic.__version__
_MAJOR, _MINOR = (int(part) for part in INSTALLED.split(".")[:2])
OLDER_MINOR = f"{_MAJOR}.{_MINOR - 1 if _MINOR else _MINOR + 1}.0"  # an older minor release if any
OLDER_MAJOR = f"{_MAJOR - 1 if _MAJOR else _MAJOR + 1}.{_MINOR}.0"


def recorded_under(pytester: pytest.Pytester, anthropic_version: str, tolerate: list[str]) -> None:
    """A project with a cassette (`cassettes/fix`) and a checkpoint fixture (`fixtures/counter-2`)
    whose contracts say they were recorded with `anthropic_version`, and `tolerate` declared in
    `[tool.agentevals] contract_tolerate`."""
    pytester.makepyfile(
        replay_support=Path(replay_support.__file__).read_text(),
        resume_support=Path(resume_support.__file__).read_text(),
        test_both=TESTS,
    )
    pytester.makeconftest(CONFTEST)
    cassette = replay_support.record(pytester.path / "cassettes" / "fix.trace.jsonl")
    events = ae.read_trace(cassette)
    events[0]["contract"]["packages"]["anthropic"] = anthropic_version
    cassette.write_text("".join(json.dumps(event) + "\n" for event in events))
    manifest_path = resume_support.make_fixture(pytester.path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["contract"]["packages.anthropic"] = anthropic_version
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'addopts = "-p no:cacheprovider --agentevals-history=off --agentevals-collect-cassettes=false"\n'
        "[tool.agentevals]\n"
        f"contract_tolerate = {json.dumps(tolerate)}\n"
    )


def test_one_declared_tolerance_lets_a_replay_and_a_resume_pass_a_minor_drift(
    pytester: pytest.Pytester,
) -> None:
    recorded_under(pytester, OLDER_MINOR, ["packages.anthropic:minor"])
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*- Captured agentevals replay call -*",
            "replayed */cassettes/fix.trace.jsonl (strict): served 4 of 4 recorded HTTP exchanges, 3 of 3 "
            "tool calls; no divergence; contract drift tolerated (contract_tolerate): packages.anthropic "
            "(minor)",
            f"  packages.anthropic | {OLDER_MINOR}*| {INSTALLED} | minor (tolerated)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*- Captured agentevals resume call -*",
            "contract drift:",
            "*key *| recorded | now *| severity",
            f"  packages.anthropic | {OLDER_MINOR}*| {INSTALLED} | minor (tolerated)",
        ]
    )
    # Not only in the report section: a tolerated drift is a warning in the session's summary too.
    result.stdout.fnmatch_lines(
        [
            "*ContractDriftWarning: */cassettes/fix.trace.jsonl: the contract drifted, tolerated by "
            "contract_tolerate:"
        ]
    )


def test_without_the_tolerance_a_minor_drift_fails_both(pytester: pytest.Pytester) -> None:
    recorded_under(pytester, OLDER_MINOR, [])
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)  # both before the test body: the cassette and the fixture boot
    result.stdout.fnmatch_lines(
        [
            "E*StaleCassette: *fix.trace.jsonl: the cassette is stale*",
            f"E*  - package anthropic: recorded with {OLDER_MINOR}, now {INSTALLED}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E*ContractDrift: */fixtures/counter-2: the environment drifted from the checkpoint's contract:",
            "E*key *| recorded | now *| severity",
            "E*-+-*",
            f"E*packages.anthropic | {OLDER_MINOR}*| {INSTALLED} | minor",
        ]
    )


def test_a_major_drift_fails_both_despite_the_minor_tolerance(pytester: pytest.Pytester) -> None:
    recorded_under(pytester, OLDER_MAJOR, ["packages.anthropic:minor"])
    result = pytester.runpytest()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"E*  - package anthropic: recorded with {OLDER_MAJOR}, now {INSTALLED}"])
    result.stdout.fnmatch_lines([f"E*packages.anthropic | {OLDER_MAJOR}*| {INSTALLED} | major"])


BODY: dict[str, Any] = {
    "model": "m",
    "max_tokens": 64,
    "system": "s",
    "tools": [{"name": "read", "input_schema": {}}, {"name": "write", "input_schema": {}}],
    "messages": [{"role": "user", "content": "go"}],
}


def test_two_requests_compare_by_their_contract_keys() -> None:
    changed = {**BODY, "max_tokens": 128, "tools": [{"name": "read", "input_schema": {}}], "temperature": 0}
    drifts = compare_request(
        request_contract(BODY), request_contract(changed), tolerances("t", ["request.*"])
    )
    assert [(d.key, d.recorded, d.now, d.severity, d.tolerated) for d in drifts] == [
        ("request.max_tokens", 64, 128, "changed", True),
        ("request.temperature", ABSENT, 0, "added", True),
        ("tools.write", request_contract(BODY)["tools.write"], ABSENT, "missing", False),
    ]
    assert compare_request(request_contract(BODY), request_contract(dict(BODY))) == []


def test_package_versions_read_every_installed_distribution_as_importlib_metadata_does() -> None:
    # The versions are read off the metadata's headers, not through the email parser: every
    # distribution of this environment must read the same both ways.
    dists = list(importlib.metadata.distributions())
    assert len(dists) > 20
    for dist in dists:
        assert contract_module._version(dist) == dist.version, dist.metadata["Name"]


@pytest.mark.parametrize(
    "metadata",
    [
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.2.3\n\nVersion: 9.9.9 in the body\n",
        "Metadata-Version: 2.1\r\nName: demo\r\nVersion: 1.2.3\r\n\r\nbody\r\n",
        "Metadata-Version: 2.1\nName: demo\nversion:\t 1.2.3  \n",
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.2.3",
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.2\n  .3\nSummary: folded\n",
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nVersion: 2.0\n",
        "Metadata-Version: 2.1\nName: demo\nSummary: none here\n\nVersion: 9.9.9\n",
    ],
    ids=["body", "crlf", "case-and-space", "no-newline", "folded", "twice", "only-in-body"],
)
def test_a_crafted_metadata_file_reads_as_importlib_metadata_reads_it(tmp_path: Path, metadata: str) -> None:
    info = tmp_path / "demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(metadata.encode())
    dist = importlib.metadata.PathDistribution(info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a missing key's None is deprecated
        expected = dist.version
    assert contract_module._version(dist) == expected
