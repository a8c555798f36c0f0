"""The judge measured, not trusted (issue 34, item 5): repeats, a majority and its agreement, and a
reply without a verdict counted as unscored — never as a pass or a fail."""

from __future__ import annotations

import random
import statistics

import pytest

from pytest_agentevals.errors import GoldenError
from pytest_agentevals.step import JudgeSpec, JudgeVerdict
from pytest_agentevals.step.decision import Decision
from pytest_agentevals.step.judge import majority, parse_verdict
from pytest_agentevals.step.kinds import parse_expectation
from pytest_agentevals.step.render import explain


def noisy_judge(truth: bool, flip: float, garble: float, seed: int):  # type: ignore[no-untyped-def]
    """A seeded simulated judge: the true verdict, flipped with probability `flip`; a reply with no
    verdict with probability `garble`. Its replies go through the real reply parser."""
    rng = random.Random(seed)

    def judge(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        if rng.random() < garble:
            return parse_verdict("I think it is mostly fine?", "sim-judge")
        said = truth if rng.random() >= flip else not truth
        return parse_verdict(f'{{"pass": {"true" if said else "false"}, "reason": "graded"}}', "sim-judge")

    return judge


def outcome_of(repeats: int, judge):  # type: ignore[no-untyped-def]
    expect = {"keep": ["T004"], "judge": {"rubric": "names the next task", "repeats": repeats}}
    return parse_expectation("compaction", expect, "expect").check(Decision.compaction("Next: T004."), judge)


def test_an_unparseable_reply_is_unscored_never_a_fail() -> None:
    verdict = parse_verdict("Looks good to me!", "sim-judge")
    assert verdict.passed is None
    assert verdict.unscored
    outcome = outcome_of(1, lambda spec, summary: verdict)
    assert outcome.ok  # no fail...
    row = next(row for row in outcome.rows if row.field == "judge")
    assert row.actual.startswith("unscored (judge sim-judge)")  # ...and no pass: the row says so
    text = explain("goldens/x.yaml::case", "compaction", outcome)
    assert "failed it" not in text


def test_repeats_take_the_majority_with_its_agreement() -> None:
    replies = iter([True, False, True, None, True])

    def judge(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        return JudgeVerdict(next(replies), "graded", "sim-judge")

    outcome = outcome_of(5, judge)
    assert outcome.verdict is not None
    assert (outcome.verdict.passed, outcome.verdict.votes) == (True, (True, False, True, None, True))
    assert outcome.verdict.agreement == 0.75  # 3 of the 4 scored replies
    row = next(row for row in outcome.rows if row.field == "judge")
    assert row.actual.startswith(
        "pass, agreement 75% (judge sim-judge): graded (3 pass, 1 fail, 1 unscored of 5)"
    )
    assert outcome.verdict.as_data()["votes"] == [True, False, True, None, True]
    # A tie, or nothing scored, is no majority: unscored.
    tie = majority([JudgeVerdict(True, "a", "m"), JudgeVerdict(False, "b", "m")])
    assert tie.passed is None
    assert "the replies tie" in tie.reason
    none = majority([JudgeVerdict(None, "a", "m")] * 3)
    assert (none.passed, none.agreement) == (None, None)


@pytest.mark.parametrize("flip", [0.1, 0.3])
def test_the_agreement_reported_matches_the_noise_injected(flip: float) -> None:
    """40 cases, each judged 25 times by a judge that flips a share `flip` of its verdicts and
    garbles 10% of its replies: the mean agreement is 1 - flip, and no garbled reply is counted."""
    agreements, unscored, right = [], 0, 0
    for case in range(40):
        verdict = outcome_of(25, noisy_judge(case % 2 == 0, flip, 0.1, seed=case)).verdict
        assert verdict is not None
        right += verdict.passed is (case % 2 == 0)
        assert verdict.agreement is not None
        agreements.append(verdict.agreement)
        unscored += verdict.votes.count(None)
    assert statistics.mean(agreements) == pytest.approx(1 - flip, abs=0.03)
    assert unscored / (40 * 25) == pytest.approx(0.1, abs=0.03)
    assert right >= 36  # the majority finds the truth through the noise (a wrong one is ~2% at 0.3)


def test_repeats_are_checked() -> None:
    for bad in (0, 26, 2.5, True, "5"):
        with pytest.raises(GoldenError, match=r"expect\.judge\.repeats"):
            JudgeSpec.parse({"rubric": "r", "repeats": bad}, "expect.judge")
    assert JudgeSpec.parse({"rubric": "r", "repeats": 5}, "expect.judge").to_data() == {
        "rubric": "r",
        "repeats": 5,
    }
