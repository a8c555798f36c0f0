"""The marathon layer in real pytest runs: seeds as items, each seed recorded under its guards with the seed
handed to the agent, the results file, the verdict over the seeds (and its failing session), seed
selection, xdist, a worker killed mid-night, more seeds while inconclusive, and supervision."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.marathon.results import read_results
from pytest_agentevals.marathon.verdict import judge

from ..conftest import REPO

# A stand-in agent: a seed listed in task["fail"] verifies 40% of its work, the others all of it.
AGENT = """
import pytest_agentevals as ae

def pytest_agentevals_run_agent(run):
    if run.layer != "marathon":
        return None
    task, marathon = run.task, run.marathon
    seed = task["seed"]
    assert seed == marathon.seed
    passed = seed not in task.get("fail", [])
    ae.note("agent ran", seed=seed, workspace_exists=marathon.workspace.is_dir())
    ae.verification("all done", passed, progress=1.0 if passed else 0.4)
    return {"seed": seed}
"""

OPTIONS = ("--agentevals-history=off", "--agentevals-sha=c0ffee", "-p", "no:cacheprovider")


def project(pytester: pytest.Pytester, marker: str, body: str = "agentevals_marathon.run_agent()") -> None:
    pytester.makeconftest(AGENT)
    pytester.makepyfile(
        test_agent=f"""
import pytest

@pytest.mark.marathon({marker})
def test_marathon(agentevals_marathon):
    {body}
"""
    )


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*OPTIONS, *args)


def results(pytester: pytest.Pytester, folder: str = ".agentevals/marathons") -> list:
    return read_results(pytester.path / folder / "results.jsonl")


def traces(pytester: pytest.Pytester) -> list[Path]:
    return sorted((pytester.path / ".agentevals" / "marathons").glob("*/seed-*.trace.jsonl"))


def test_each_seed_is_an_item_with_its_own_trace_and_the_seed_reaches_the_agent(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, 'seeds=3, task={"agent": "stand-in", "tasks": 2}, max_calls=50')
    result = run(pytester, "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*test_agent.py::test_marathon[[]seed=0[]] PASSED*", "*[[]seed=2[]] PASSED*"]
    )
    found = traces(pytester)
    assert [path.name for path in found] == [f"seed-{n}.trace.jsonl" for n in range(3)]
    assert found[0].parent.name.startswith("test_agent.py--test_marathon-")
    for seed, path in enumerate(found):
        events = read_trace(path)
        start = events[0]
        assert start["seed"] == seed
        assert start["task"] == {"agent": "stand-in", "tasks": 2, "seed": seed}
        # The marker's budget keys are the run's guards: a call budget, and the watchdog it brings.
        assert start["budget"] == {"max_calls": 50, "stall_calls": 10}
        assert "watchdog" in start["guards"]
        assert events[1]["data"] == {"seed": seed, "workspace_exists": True}
    stored = results(pytester)
    assert [(r.test, r.seed, r.commit, r.outcome) for r in stored] == [
        ("test_agent.py::test_marathon", seed, "c0ffee", "passed") for seed in range(3)
    ]
    assert stored[0].trace == f"{found[0].parent.name}/seed-0.trace.jsonl"
    assert stored[0].run_id


def test_an_explicit_list_of_seeds(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=[7, 42]")
    run(pytester, "-v").stdout.fnmatch_lines(["*[[]seed=7[]] PASSED*", "*[[]seed=42[]] PASSED*"])
    assert [r.seed for r in results(pytester)] == [7, 42]


@pytest.mark.parametrize(
    ("marker", "said"),
    [
        ("seeds=0", "@pytest.mark.marathon(seeds=...): 0 seeds run nothing"),
        ("seeds=3, max_cost_usd=-1", "@pytest.mark.marathon(max_cost_usd=...): -1 is below 0"),
        (
            "seeds=3, min_pass_rat=0.5",
            "@pytest.mark.marathon(min_pass_rat=...): unknown keyword (did you mean min_pass_rate=?",
        ),
        (
            "seeds=3, min_pass_rate=1.5",
            "@pytest.mark.marathon(min_pass_rate=...): 1.5 is not a bar (give a rate from 0 to 1)",
        ),
        ("seeds=3, colour='red'", "@pytest.mark.marathon(colour=...): unknown keyword"),
        ("seeds=5, max_seeds=3", "@pytest.mark.marathon(max_seeds=3): is fewer than the 5 seeds planned"),
        ("seeds=3, max_total_cost_usd=5", "max_total_cost_usd=...): bounds the seeds max_seeds adds"),
        (
            "seeds=3, fail_on='crashed'",
            "@pytest.mark.marathon(fail_on=...): 'crashed' is not a list of run statuses",
        ),
    ],
)
def test_a_bad_marker_is_a_usage_error_naming_test_and_keyword(
    pytester: pytest.Pytester, marker: str, said: str
) -> None:
    project(pytester, marker)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*agentevals: test_agent.py::test_marathon*{said}*"])
    assert not traces(pytester)


def test_a_bad_marker_stops_an_xdist_run_too(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    project(pytester, "seeds=0")
    result = run(pytester, "-n", "2")
    assert result.ret != 0
    assert "0 seeds run nothing" in result.stdout.str() + result.stderr.str()


def test_a_selection_runs_some_seeds_and_its_verdict_is_partial(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=5, task={'fail': [1, 3]}, min_pass_rate=0.99")
    result = run(pytester, "-v", "--agentevals-seeds", "1,3")
    result.assert_outcomes(passed=2, deselected=3)
    assert result.ret == 0  # below the bar on this job's share only: the night's verdict is after merge
    result.stdout.fnmatch_lines(
        [
            "*n=2 seeds (1, 3) at c0ffee: BELOW THE BAR (partial: a seed selection)*",
            "*the marathon's verdict is over every seed: agentevals marathon merge*",
        ]
    )
    shard = run(pytester, "-v", "--agentevals-seeds", "2/2", "--agentevals-rerun-seeds")
    shard.stdout.fnmatch_lines(["*[[]seed=1[]] PASSED*", "*[[]seed=3[]] PASSED*"])
    shard.assert_outcomes(passed=2, deselected=3)
    bad = run(pytester, "--agentevals-seeds", "4-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--agentevals-seeds: '4-1' is an empty range*"])


def test_a_verdict_below_the_bar_fails_the_session_naming_metric_interval_and_seeds(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, "seeds=6, task={'fail': [1, 2, 3, 4, 5]}, min_pass_rate=0.8, min_progress_auc=0.2")
    result = run(pytester)
    # Every seed's item did its job; the verdict over the seeds is the failure the session counts.
    result.assert_outcomes(passed=6, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    folder = traces(pytester)[0].parent.relative_to(pytester.path)
    result.stdout.fnmatch_lines(
        [
            "*test_agent.py::test_marathon: n=6 seeds (0-5) at c0ffee: BELOW THE BAR*",
            "*verified-pass rate*0.17*0.03 to 0.56*>= 0.80*BELOW*",
            "*progress-AUC (mean)*0.50*>= 0.20*met*",
            "*BELOW THE BAR: verified-pass rate = 0.17, 95% interval 0.03 to 0.56, entirely below "
            "min_pass_rate=0.8*",
            f"*seed 1 (ok): agentevals promote {folder}/seed-1.trace.jsonl --name test_marathon-seed-1*",
            f"*seed 5 (ok): agentevals promote {folder}/seed-5.trace.jsonl --name test_marathon-seed-5*",
            "*marathon failed: 1 verdict(s) below the bar*test_agent.py::test_marathon*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= FAILURES =*",
            "*_ test_marathon _*",
            "BELOW THE BAR: verified-pass rate = 0.17, 95% interval 0.03 to 0.56, entirely below "
            "min_pass_rate=0.8 over n=6 seeds",
            "seed(s) that missed it: 1-5; the agentevals marathon section below*",
            "*agentevals pyramid*",
            "marathon         6       1        0*(1 of the failed: a verdict below its bar)",
            "*short test summary info*",
            "FAILED test_agent.py::test_marathon - BELOW THE BAR: verified-pass rate = 0.1*",
            "*= 1 failed, 6 passed in *",
        ]
    )


def test_the_summary_line_of_a_session_below_the_bar_is_red_as_pytest_shows_failures(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, "seeds=3, task={'fail': [0, 1, 2]}, min_pass_rate=0.9")
    result = run(pytester, "--color=yes")
    red, reset = "\x1b[31m", "\x1b[0m"
    last = result.stdout.lines[-1]
    assert f"{red}{chr(27)}[1m1 failed{reset}" in last, last
    assert "3 passed" in last
    pyramid = next(line for line in result.stdout.lines if line.removeprefix(red).startswith("marathon "))
    assert pyramid.startswith(red), pyramid


def test_an_inconclusive_verdict_is_loud_and_does_not_fail(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=4, task={'fail': [1]}, min_pass_rate=0.6")
    result = run(pytester)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*: INCONCLUSIVE*",
            "*INCONCLUSIVE: verified-pass rate 0.30 to 0.95 holds the bar >= 0.60; 4 seed(s) cannot tell*",
            "marathon         4       0        0*(1 verdict(s) inconclusive)",
            "*= 4 passed, 1 inconclusive in *",  # never "4 passed" alone
        ]
    )


def test_a_seed_with_a_result_at_this_commit_is_kept_and_rerun_on_request(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=3")
    run(pytester).assert_outcomes(passed=3)
    again = run(pytester, "-rs")
    again.assert_outcomes(skipped=3)
    again.stdout.fnmatch_lines(
        ["*n=3 seeds*", "*seed 0 has a result at this commit from an earlier session: kept*"]
    )
    run(pytester, "--agentevals-rerun-seeds").assert_outcomes(passed=3)
    other = run(pytester, "--agentevals-sha=beef")  # another commit: its own seeds
    other.assert_outcomes(passed=3)
    assert sorted({r.commit or "" for r in results(pytester)}) == ["beef", "c0ffee"]


def test_max_seeds_adds_seeds_on_the_next_run_while_inconclusive(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=3, max_seeds=6, task={'fail': [1]}, min_pass_rate=0.5")
    first = run(pytester, "-v")
    first.assert_outcomes(passed=3)
    first.stdout.fnmatch_lines(["*run the same command again to add seed(s) 3-5 (max_seeds=6)*"])
    second = run(pytester, "-v")
    second.assert_outcomes(passed=3, skipped=3)
    second.stdout.fnmatch_lines(["*[[]seed=5[]] PASSED*", "*n=6 seeds (0-5)*"])
    assert sorted(r.seed for r in results(pytester)) == list(range(6))


def test_the_verdict_under_xdist_equals_the_verdict_without(pytester: pytest.Pytester) -> None:
    """The example agent against the simulated model (deterministic per seed), 4 seeds, with -n 0 and -n 2."""
    pytest.importorskip("xdist")
    pytester.syspathinsert(REPO)
    pytester.makeconftest((REPO / "marathons" / "conftest.py").read_text())
    pytester.makepyfile(
        test_example="""
import pytest

@pytest.mark.marathon(seeds=4, task={"agent": "taskrunner", "tasks": 5}, max_calls=60, stall_calls=6,
                      max_restarts=1, min_pass_rate=0.5, min_progress_auc=0.6)
def test_example(agentevals_marathon):
    agentevals_marathon.run_agent()
"""
    )
    env = {"PYTHONPATH": str(REPO)}
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)  # the subprocess imports the example agent
    plain = pytester.runpytest_subprocess(*OPTIONS, "--agentevals-marathons-dir=plain")
    spread = pytester.runpytest_subprocess(*OPTIONS, "-n", "2", "--agentevals-marathons-dir=spread")
    plain.assert_outcomes(passed=4)
    spread.assert_outcomes(passed=4)
    alone = judge("t", results(pytester, "plain")).to_json()
    shared = judge("t", results(pytester, "spread")).to_json()
    assert alone == shared
    assert alone["n"] == 4
    assert alone["restarts"] == {"1": 1}
    assert alone["statuses"] == {"ok": 3, "stalled": 1}
    table = [line for line in plain.stdout.lines if "verified-pass rate" in line]
    assert table == [line for line in spread.stdout.lines if "verified-pass rate" in line]


def test_xdist_workers_are_handed_the_seeds_longest_first(pytester: pytest.Pytester) -> None:
    """By each seed's duration in its latest result (a seed without one first: it may be long), so a
    short seed is left to fill in at the end; a plain session keeps the seeds' order."""
    pytest.importorskip("xdist")
    project(pytester, "seeds=5")
    run(pytester).assert_outcomes(passed=5)
    path = pytester.path / ".agentevals" / "marathons" / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    took = {0: 1.0, 1: 5.0, 3: 0.1, 4: 3.0}  # seed 2: no result
    for line in lines:
        line["metrics"]["duration_s"] = took.get(line["seed"])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines if line["seed"] in took))

    def order(result: pytest.RunResult) -> list[int]:
        result.assert_outcomes(passed=5)
        return [int(line.split("[seed=")[1][0]) for line in result.stdout.lines if " PASSED " in line]

    # One worker runs its items in the order it collected them, which is the order all workers collect.
    spread = pytester.runpytest_subprocess(*OPTIONS, "--agentevals-rerun-seeds", "-v", "-n", "1")
    assert order(spread) == [2, 1, 4, 0, 3]
    assert order(run(pytester, "--agentevals-rerun-seeds", "-v")) == [0, 1, 2, 3, 4]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_worker_killed_mid_night_keeps_finished_seeds_and_a_rerun_continues(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    pytester.makeconftest(
        AGENT.replace(
            '    seed = task["seed"]\n',
            '    seed = task["seed"]\n'
            "    import os, pathlib, signal\n"
            "    flag = pathlib.Path(task['flag'])\n"
            "    if seed == 2 and not flag.exists():\n"
            "        flag.write_text('killed once')\n"
            "        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-seed\n",
        )
    )
    flag = pytester.path / "killed"
    pytester.makepyfile(
        test_agent=f"""
import pytest

@pytest.mark.marathon(seeds=5, task={{"flag": {str(flag)!r}}})
def test_marathon(agentevals_marathon):
    agentevals_marathon.run_agent()
"""
    )
    first = pytester.runpytest_subprocess(*OPTIONS, "-n", "2")
    assert flag.exists()
    assert first.ret != 0
    first.stdout.fnmatch_lines(["*no result for seed(s) 2*run the same command again*"])
    assert sorted(r.seed for r in results(pytester)) == [0, 1, 3, 4]
    names = {path.name for path in traces(pytester)}
    assert {f"seed-{n}.trace.jsonl" for n in (0, 1, 3, 4)} <= names
    second = pytester.runpytest_subprocess(*OPTIONS, "-n", "2")
    second.assert_outcomes(passed=1, skipped=4)
    second.stdout.fnmatch_lines(
        ["*n=5 seeds (0-4)*", "*(1 new; 4 kept from an earlier session at this commit)*"]
    )
    assert sorted(r.seed for r in results(pytester)) == [0, 1, 2, 3, 4]


# -- supervision ------------------------------------------------------------------------------------------

CRASHING = """
import json
import pytest_agentevals as ae

def work(done, total, workspace, crash_at=None):
    for n in range(done, total):
        if n == crash_at:
            raise ConnectionError(f"the harness crashed at task {n}")
        (workspace / f"t{n}.txt").write_text("ok")
        ae.verification(f"t{n}", True, progress=(n + 1) / total)
        ae.checkpoint({"done": n + 1}, workspace=workspace)
    return {"done": total}

def pytest_agentevals_run_agent(run):
    if run.marathon is None:
        return None
    return work(0, 4, run.workspace, crash_at=run.task.get("crash_at"))

RESUME_HOOK
"""
RESUME = """
def pytest_agentevals_resume_agent(checkpoint):
    assert checkpoint.name is None and sorted(p.name for p in checkpoint.workspace.iterdir()) == [
        f"t{n}.txt" for n in range(checkpoint.state["done"])
    ]
    return work(checkpoint.state["done"], 4, checkpoint.workspace)
"""


def supervised(pytester: pytest.Pytester, marker: str, resume: bool = True) -> None:
    pytester.makeconftest(CRASHING.replace("RESUME_HOOK", RESUME if resume else ""))
    pytester.makepyfile(
        test_agent=f"""
import pytest

@pytest.mark.marathon({marker})
def test_marathon(agentevals_marathon):
    agentevals_marathon.run_agent()
"""
    )


def test_a_crashed_seed_restarts_from_its_last_checkpoint(pytester: pytest.Pytester) -> None:
    supervised(pytester, "seeds=2, task={'crash_at': 2}, max_restarts=1, min_pass_rate=0.1")
    result = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*statuses: ok 2; restarts: 2 (seed 0: 1, seed 1: 1)*"])
    events = read_trace(traces(pytester)[0])
    (restart,) = [e for e in events if e["type"] == "note"]
    assert restart["message"] == "restarting from the last checkpoint"
    assert restart["data"]["checkpoint_step"] == 0
    assert restart["data"]["restarts"] == 1
    assert [e["name"] for e in events if e["type"] == "verification"] == ["t0", "t1", "t2", "t3"]
    stored = results(pytester)
    assert all(r.passed and r.metrics.restarts == 1 for r in stored)


def test_restarts_are_bounded_and_a_crash_past_them_fails_the_seed(pytester: pytest.Pytester) -> None:
    supervised(pytester, "seeds=1, task={'crash_at': 2}, max_restarts=0")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ConnectionError: the harness crashed at task 2*", "*statuses: crashed 1*"])
    (stored,) = results(pytester)
    assert (stored.outcome, stored.status, stored.passed) == ("failed", "crashed", False)
    assert read_trace(traces(pytester)[0])[-1]["error"]["type"] == "ConnectionError"


def test_without_a_resume_hook_a_crashed_seed_says_how_to_add_one(pytester: pytest.Pytester) -> None:
    supervised(pytester, "seeds=1, task={'crash_at': 2}, max_restarts=2", resume=False)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*no pytest_agentevals_resume_agent hook resumed it from its checkpoint*", "*statuses: crashed 1*"]
    )


def test_fail_on_fails_a_seed_a_guard_stopped(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import anthropic
import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimServer

def pytest_agentevals_run_agent(run):
    if run.marathon is None:
        return None
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        for _ in range(5):
            client.messages.create(
                model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "q"}]
            )
    return True
"""
    )
    pytester.makepyfile(
        test_agent="""
import pytest

@pytest.mark.marathon(seeds=1, max_calls=2)
def test_counted(agentevals_marathon):
    agentevals_marathon.run_agent()

@pytest.mark.marathon(seeds=1, max_calls=2, fail_on=["budget_exhausted"])
def test_failed(agentevals_marathon):
    agentevals_marathon.run_agent()
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*SeedFailed*the run ended budget_exhausted*fail_on*", "*statuses: budget_exhausted 1*"]
    )


def test_what_the_agent_raises_after_a_stop_ends_the_seed_as_stopped(pytester: pytest.Pytester) -> None:
    """A client process meets a stop as the endpoint's final 500 and its SDK raises an error of its own,
    nothing chained to the stop: the seed ends as the guard stopped it, neither crashed nor restarted."""
    pytester.makeconftest(
        """
import anthropic
from pytest_agentevals.sim import Reply, SimServer

def pytest_agentevals_run_agent(run):
    if run.marathon is None:
        return None
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        client = anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)
        try:
            for _ in range(5):
                client.messages.create(
                    model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "q"}]
                )
        except Exception:
            raise RuntimeError("API Error: 500 (the client gave up)") from None
    return True
"""
    )
    pytester.makepyfile(
        test_agent="""
import pytest

@pytest.mark.marathon(seeds=1, max_calls=2, max_restarts=1)
def test_stopped(agentevals_marathon):
    assert agentevals_marathon.run_agent() is None
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*statuses: budget_exhausted 1*"])
    (stored,) = results(pytester)
    assert (stored.status, stored.metrics.restarts) == ("budget_exhausted", 0)
    events = read_trace(traces(pytester)[0])
    (note,) = [e for e in events if e["type"] == "note"]
    assert note["message"] == "the agent raised after the guard's stop"
    assert note["data"]["reason"] == "RuntimeError: API Error: 500 (the client gave up)"
    assert events[-1]["status"] == "budget_exhausted"
    assert "error" not in events[-1]


def test_without_a_run_hook_the_seed_says_what_to_add(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest

@pytest.mark.marathon(seeds=1)
def test_marathon(agentevals_marathon):
    agentevals_marathon.run_agent()

def test_plain(agentevals_marathon):
    pass
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the agentevals_marathon fixture belongs to a test marked @pytest.mark.marathon*",
            "*no pytest_agentevals_run_agent hook started the agent**def pytest_agentevals_run_agent(run)*",
        ]
    )


def test_a_test_may_run_its_agent_itself_with_the_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest
import pytest_agentevals as ae

@pytest.mark.marathon(seeds=2)
def test_marathon(agentevals_seed):
    ae.verification("done", agentevals_seed == 0)
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=2)
    assert [(r.seed, r.passed) for r in results(pytester)] == [(0, True), (1, False)]


def test_the_session_report_shows_the_verdicts(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=3, min_pass_rate=0.2")
    result = run(pytester, "--agentevals-report=report.html")
    assert result.ret == 0
    page = (pytester.path / "report.html").read_text()
    assert 'data-metric="test_marathon: verified-pass rate" data-verdict="met"' in page
    assert "<title>3 runs — agentevals run report</title>" in page  # every seed's run


CHECKED = """
def pytest_agentevals_run_agent(run):
    if run.layer != "marathon":
        return None
    seed = run.task["seed"]  # the agent leaves its work in the workspace: right for even seeds only
    (run.marathon.workspace / "answer.txt").write_text("42" if seed % 2 == 0 else "41")
    return {"seed": seed}
"""


def test_a_marathons_verify_check_runs_in_each_seeds_workspace_and_is_its_verification(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CHECKED)
    check = "import pathlib, sys; sys.exit(pathlib.Path('answer.txt').read_text() != '42')"
    pytester.makepyfile(
        test_agent=f"""
import pytest

@pytest.mark.marathon(seeds=2, verify=["python", "-c", {check!r}])
def test_marathon(agentevals_marathon):
    agentevals_marathon.run_agent()
"""
    )
    run(pytester).assert_outcomes(passed=2)
    checks = [[e for e in read_trace(path) if e["type"] == "verification"] for path in traces(pytester)]
    assert [[(c["passed"], c["exit_code"]) for c in found] for found in checks] == [[(True, 0)], [(False, 1)]]
    assert [r.metrics.verified_pass for r in results(pytester)] == [True, False]


def test_a_marathons_verify_that_is_no_command_is_a_usage_error(pytester: pytest.Pytester) -> None:
    project(pytester, "seeds=1, verify=3")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*@pytest.mark.marathon(verify=...)*is 3*"])
