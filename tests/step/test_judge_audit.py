"""`agentevals judge audit` (issue 34, point 3): the example's recorded compaction summaries graded
again and again by a seeded noisy simulated judge; the agreement reported is the noise injected."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.cli import main
from pytest_agentevals.sim import NoisyJudge, SimServer
from pytest_agentevals.step.audit import recorded_summary
from pytest_agentevals.step.judge import JUDGE_SYSTEM, judge_prompt
from pytest_agentevals.step.store import Exchange

from ..conftest import REPO, run_agentevals

# The example's two compaction cases, each given a judge: the first summary names T006 (a pass), the
# second does not name T004 (a fail). The simulated judge's true verdict: every `term` is there.
RUBRICS = {
    "step-15-compaction": "names the next task, `T006`",
    "step-31-compaction": "names the task whose check failed, `T004`",
}
TRUTH = {"step-15-compaction": True, "step-31-compaction": False}


@pytest.fixture
def goldens(tmp_path: Path) -> Path:
    """A copy of the example's goldens/taskrunner.yaml, its compaction cases judged, and its recorded
    decisions beside it."""
    folder = tmp_path / "goldens"
    folder.mkdir()
    shutil.copy(REPO / "goldens" / "taskrunner.decisions.trace.jsonl", folder)
    text = (REPO / "goldens" / "taskrunner.yaml").read_text(encoding="utf-8")
    for case_id, rubric in RUBRICS.items():
        head, tail = text.split(f"- id: {case_id}\n", 1)
        block, rest = tail.split("  context:\n", 1)
        assert block.count("    max_tokens: 40\n") == 1
        block = block.replace(
            "    max_tokens: 40\n", f'    max_tokens: 40\n    judge: {{rubric: "{rubric}"}}\n'
        )
        text = f"{head}- id: {case_id}\n{block}  context:\n{rest}"
    (folder / "taskrunner.yaml").write_text(text, encoding="utf-8")
    return folder / "taskrunner.yaml"


def audit_json(
    goldens: Path, judge: NoisyJudge, repeats: int, capsys: pytest.CaptureFixture[str], *more: str
) -> dict[str, Any]:
    with SimServer(judge) as sim:
        code = main(
            [
                "judge",
                "audit",
                str(goldens),
                "--repeats",
                str(repeats),
                "--base-url",
                sim.url,
                "--json",
                *more,
            ]
        )
    out = capsys.readouterr()
    assert code == 0, out.err
    data: dict[str, Any] = json.loads(out.out)
    return data


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-" + "k" * 12)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def test_the_agreement_reported_is_the_noise_injected(
    goldens: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flip, garble, repeats = 0.2, 0.05, 200
    judge = NoisyJudge(flip, garble, seed=11)
    report = audit_json(goldens, judge, repeats, capsys)
    cases = {case["case"]: case for case in report["cases"]}
    assert sorted(cases) == sorted(RUBRICS)
    # Exactly what the judge did: each flipped verdict a vote against the truth, each garbled reply
    # unscored (never a pass, never a fail).
    for case_id, case in cases.items():
        (injected,) = [i for (rubric, _), i in judge.injected.items() if rubric == RUBRICS[case_id]]
        assert (injected.truth, injected.asked) == (TRUTH[case_id], repeats)
        right, wrong = injected.asked - injected.garbled - injected.flipped, injected.flipped
        passes, fails = (right, wrong) if injected.truth else (wrong, right)
        assert case["votes"] == {"pass": passes, "fail": fails, "unscored": injected.garbled}
        assert case["verdict"] == ("pass" if TRUTH[case_id] else "fail")  # the majority finds the truth
        assert case["agreement"] == pytest.approx(right / (right + wrong))
        assert case["summary_from"] == "decision"  # the example recorded the agent's answer, no judge
    # And what that comes to, against the rates asked for, within four standard errors of this many
    # asks: agreement 1 - flip; unscored share `garble`; alpha (two true verdicts, one each way) the
    # chance-corrected agreement of pairs, 1 - 4 flip (1 - flip).
    agreement = report["agreement"]
    asked = len(RUBRICS) * repeats
    scored = asked - agreement["unscored"]
    assert (agreement["cases"], agreement["votes"]) == (2, asked)
    assert agreement["unscored"] / asked == pytest.approx(
        garble, abs=4 * math.sqrt(garble * (1 - garble) / asked)
    )
    assert agreement["mean_agreement"] == pytest.approx(
        1 - flip, abs=4 * math.sqrt(flip * (1 - flip) / scored)
    )
    alpha_error = 2 * abs(2 - 4 * flip) * math.sqrt(flip * (1 - flip) / scored)
    assert agreement["krippendorff_alpha"] == pytest.approx(1 - 4 * flip * (1 - flip), abs=4 * alpha_error)
    assert agreement["fleiss_kappa"] is None  # garbled replies left the cases uneven: alpha alone says it


def test_a_judge_without_noise_agrees_fully(goldens: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = audit_json(goldens, NoisyJudge(seed=1), 15, capsys)
    assert [case["agreement"] for case in report["cases"]] == [1.0, 1.0]
    assert [case["votes"] for case in report["cases"]] == [
        {"pass": 15, "fail": 0, "unscored": 0},
        {"pass": 0, "fail": 15, "unscored": 0},
    ]
    agreement = report["agreement"]
    assert (agreement["mean_agreement"], agreement["fleiss_kappa"], agreement["krippendorff_alpha"]) == (
        1.0,
        1.0,
        1.0,
    )


def test_the_audit_as_a_terminal_user_reads_it(goldens: Path) -> None:
    judge = NoisyJudge(0.2, 0.1, seed=5)
    with SimServer(judge) as sim:
        done = run_agentevals(
            "judge",
            "audit",
            goldens,
            "--repeats",
            "20",
            cwd=goldens.parent,
            env={"ANTHROPIC_BASE_URL": sim.url, "ANTHROPIC_API_KEY": "test-" + "k" * 12},
        )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "judge audit: each recorded summary graded 20 time(s)"
    assert str(goldens) in lines
    header = next(line for line in lines if line.strip().startswith("case"))
    assert header.split() == ["case", "verdict", "pass", "fail", "unscored", "agreement", "judge"]
    for case_id in RUBRICS:
        (row,) = [line.split() for line in lines if line.strip().startswith(case_id)]
        (injected,) = [i for (rubric, _), i in judge.injected.items() if rubric == RUBRICS[case_id]]
        right = 20 - injected.garbled - injected.flipped
        passes, fails = (right, injected.flipped) if injected.truth else (injected.flipped, right)
        assert row == [
            case_id,
            "pass" if TRUTH[case_id] else "fail",
            str(passes),
            str(fails),
            str(injected.garbled),
            f"{right / (right + injected.flipped):.0%}",
            "claude-haiku-4-5",  # the judge's default model, as the simulated server echoes it
        ]
    assert lines[-1].startswith("judge agreement: mean 0.")
    assert lines[-1].endswith(
        f"over 2 cases (40 votes, {sum(i.garbled for i in judge.injected.values())} unscored)"
    )


def audit_error(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """What `agentevals judge audit ARGS` says on stderr when it fails (exit code 2)."""
    try:
        code = main(["judge", "audit", *map(str, args)])
    except SystemExit as exit:  # argparse's usage errors
        code = int(exit.code or 0)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def test_bad_input_is_one_clear_error(
    goldens: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = audit_error(capsys, tmp_path / "nope.yaml")
    assert missing == (
        f"agentevals judge: error: {tmp_path / 'nope.yaml'}: cannot be read: No such file or directory "
        "(check the path)\n"
    )
    corrupt = tmp_path / "corrupt.yaml"
    corrupt.write_text("cases: [\n  - id: x\n", encoding="utf-8")
    broken = audit_error(capsys, corrupt)
    assert broken.startswith(f"agentevals judge: error: {corrupt}")
    assert broken.count("error:") == 1
    unjudged = audit_error(capsys, REPO / "goldens" / "taskrunner.yaml")
    assert "has no step case with a judge (add one under a compaction case's expect: judge:" in unjudged
    # A judge that cannot be reached: which one, where, and what to check.
    closed = audit_error(capsys, goldens, "--repeats", "2", "--base-url", "http://127.0.0.1:9")
    assert "the judge (claude-haiku-4-5 at http://127.0.0.1:9) did not answer: APIConnectionError" in closed
    assert "ANTHROPIC_API_KEY" in closed
    assert "is not a number of times from 2 to 500" in audit_error(capsys, goldens, "--repeats", "1")


def test_a_case_with_nothing_recorded_is_skipped_and_says_how_to_record(
    goldens: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (goldens.parent / "taskrunner.decisions.trace.jsonl").unlink()
    report = audit_json(goldens, NoisyJudge(seed=1), 3, capsys)
    assert report["cases"] == []
    assert [(s["case"], s["why"].split(":")[0]) for s in report["skipped"]] == [
        ("step-15-compaction", "no recorded summary"),
        ("step-31-compaction", "no recorded summary"),
    ]
    assert "--agentevals-record=new" in report["skipped"][0]["why"]


def test_the_recorded_summary_is_what_the_judge_was_recorded_grading() -> None:
    def call(body: dict[str, Any], text: str) -> Exchange:
        message = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]}
        return Exchange.of(
            {"provider": "anthropic", "request": {"body": body}, "response": {"json": message}}
        )

    agent = call({"messages": [{"role": "user", "content": "summarize"}]}, "  Next: T006.  ")
    asked = {
        "system": JUDGE_SYSTEM,
        "messages": [{"role": "user", "content": judge_prompt("r", "Next: T006 (as judged).")}],
    }
    judged = call(asked, '{"pass": true}')
    assert recorded_summary([agent]) == ("decision", "Next: T006.")
    assert recorded_summary([agent, judged]) == ("judge", "Next: T006 (as judged).")
    assert recorded_summary([]) is None
