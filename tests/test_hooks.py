"""`hooks.py`: one hook per question. The replay and marathon layers ask `run_agent(run)` with one
argument saying which layer asks; None means "not mine" everywhere; the 0.1 spellings still work,
warned; a resume hook that took the checkpoint but returned nothing is told so."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals import AgentEvalsDeprecationWarning, AgentRun
from pytest_agentevals.hooks import ask_run_agent

from . import resume_support

pytest_plugins = ["pytester"]

OPTIONS = ("--agentevals-history=off", "--agentevals-sha=c0ffee", "-p", "no:cacheprovider")

MARATHON_TEST = """
import pytest

@pytest.mark.marathon(seeds=2)
def test_marathon(agentevals_marathon):
    assert agentevals_marathon.run_agent() == agentevals_marathon.seed
"""


def test_the_run_says_which_layer_asks() -> None:
    replay = AgentRun("replay", {"n": 1}, layer_run="the replay run", cassette=Path("c.trace.jsonl"))  # type: ignore[arg-type]
    marathon = AgentRun("marathon", {"seed": 3}, layer_run="the seed run", seed=3, workspace=Path("ws"))  # type: ignore[arg-type]
    record = AgentRun("record", None, layer_run="the recorder")  # type: ignore[arg-type]
    assert (replay.replay, replay.marathon) == ("the replay run", None)
    assert (marathon.replay, marathon.marathon) == (None, "the seed run")
    assert (record.replay, record.marathon, record.layer_run) == (None, None, "the recorder")


def test_the_0_x_name_of_the_layer_run_is_warned_and_still_answers() -> None:
    run = AgentRun("replay", {"n": 1}, layer_run="the replay run")  # type: ignore[arg-type]
    with pytest.warns(
        AgentEvalsDeprecationWarning, match=r"AgentRun.session is the 0.x name of AgentRun.layer_run"
    ):
        assert run.session == "the replay run"


def test_none_means_not_mine_and_the_first_answer_wins() -> None:
    asked: list[dict[str, object]] = []

    def hook(**kwargs: object) -> list[object]:
        asked.append(kwargs)
        return ["first", "second"]  # pluggy leaves out the implementations that answered None

    run = AgentRun("marathon", {"seed": 1}, layer_run="seed run", seed=1)  # type: ignore[arg-type]
    assert ask_run_agent(hook, run) == "first"
    assert asked == [{"run": run, "task": {"seed": 1}, "replay": None, "marathon": "seed run"}]
    assert ask_run_agent(lambda **kwargs: [], run) is None


def test_the_one_argument_spelling_runs_a_marathon_without_a_warning(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_agentevals_run_agent(run):
            if run.layer != "marathon":
                return None
            assert run.marathon.seed == run.seed == run.task["seed"] and run.replay is None
            assert run.workspace == run.marathon.workspace and run.cassette is None
            return run.seed
        """
    )
    pytester.makepyfile(test_agent=MARATHON_TEST)
    result = pytester.runpytest(*OPTIONS, "-W", "error::DeprecationWarning")
    result.assert_outcomes(passed=2)


def test_the_0_1_spelling_still_works_and_is_warned_naming_the_new_one(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_agentevals_run_agent(task, marathon):
            if marathon is None:
                return None
            return marathon.seed
        """
    )
    pytester.makepyfile(test_agent=MARATHON_TEST)
    result = pytester.runpytest(*OPTIONS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*AgentEvalsDeprecationWarning: *conftest.py: pytest_agentevals_run_agent(task, marathon) is the "
            "0.1 spelling; write `def pytest_agentevals_run_agent(run):`*",
        ]
    )


def test_a_resume_hook_that_returned_nothing_is_told_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(resume_support=Path(resume_support.__file__).read_text())
    resume_support.make_fixture(pytester.path, continuation=True)
    pytester.makeconftest(
        """
        def pytest_agentevals_resume_agent(checkpoint):
            checkpoint.workspace.joinpath("started").write_text("yes")  # ...and forgot to return
        """
    )
    pytester.makepyfile(
        test_leg="""
        import pytest

        @pytest.mark.resume("counter-2", contract_policy="skip")
        def test_leg(agentevals_resume):
            agentevals_resume.run_agent()
        """
    )
    result = pytester.runpytest(*OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*every pytest_agentevals_resume_agent hook (*conftest.py) returned None for the checkpoint "
            "'counter-2': a hook that starts the agent returns its result*"
        ]
    )
