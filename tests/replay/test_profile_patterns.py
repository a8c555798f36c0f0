"""The Claude Code profile's patterns run over the text of untrusted cassettes: each is bounded (no
repeat without an upper bound, so no unbounded backtracking and no fold longer than its bound), and a
crafted cassette built to defeat them replays or fails with our error, never hangs or crashes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.replay import Replayer, profiles
from pytest_agentevals.replay.normalize import Normalizer
from pytest_agentevals.replay.profiles import CLAUDE_CODE, client_of

from .test_normalize import CLI, RECORDED_CWD, RECORDED_DAY, claude_body, post, record

_parser: Any = pytest.importorskip("re._parser")
_constants: Any = pytest.importorskip("re._constants")

PATTERNS = {
    **{f"rule {rule.name}": rule.compiled for rule in CLAUDE_CODE.rules},
    "user-agent": profiles._USER_AGENT,
    "billing header": profiles._BILLING,
}


def _unbounded(tree: Any) -> list[str]:
    """Every repeat in a parsed pattern whose upper bound is MAXREPEAT (`+`, `*`, `{n,}`)."""
    found: list[str] = []
    for op, arg in tree:
        if op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT):
            low, high, inner = arg
            if high == _constants.MAXREPEAT:
                found.append(f"{op} {{{low},}}")
            found += _unbounded(inner)
        elif op in (_constants.SUBPATTERN, _constants.ATOMIC_GROUP):
            found += _unbounded(arg[-1])
        elif op == _constants.BRANCH:
            for branch in arg[1]:
                found += _unbounded(branch)
        elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
            found += _unbounded(arg[1])
    return found


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_profile_pattern_is_bounded(name: str) -> None:
    pattern = PATTERNS[name]
    assert _unbounded(_parser.parse(pattern.pattern, pattern.flags)) == [], pattern.pattern


def crafted_body(cwd_line: str) -> dict[str, Any]:
    body = claude_body(RECORDED_CWD, RECORDED_DAY)
    body["messages"][1]["content"][0]["text"] = (
        f" - Primary working directory: {cwd_line}\n - OS Version: {'L' * 20_000}\n"
        + "memory at `"
        + "m" * 20_000
    )
    body["system"][0]["text"] = "x-anthropic-billing-header: cc_version=" + "9" * 10_000 + ".1.1.ab;"
    return body


def test_a_fold_never_takes_more_than_its_bound() -> None:
    body, folded = Normalizer(CLAUDE_CODE.rules, "claude-code").fold(crafted_body("/" + "d" * 20_000))
    by_rule = {(fold.rule, fold.pointer): fold.text for fold in folded}
    assert len(by_rule["cwd", "/messages/1/content/0/text"]) == 4096
    assert len(by_rule["os-version", "/messages/1/content/0/text"]) == 256
    # No closing backtick within the bound: nothing folded (the system prompt's own memory line is).
    assert ("memory-dir", "/messages/1/content/0/text") not in by_rule
    assert not any(rule == "billing-header" for rule, _ in by_rule)  # 10,000 digits are no version
    assert body["messages"][1]["content"][0]["text"].startswith(" - Primary working directory: <cwd>d")


def test_a_crafted_cassette_replays_strictly_instead_of_crashing(tmp_path: Path) -> None:
    """A User-Agent of 5,000 digits once reached int() (past Python's 4,300-digit limit: a bare
    ValueError from the replay); now it names no client, and the run replays byte-strict."""
    agent = "claude-cli/" + "1" * 5000 + ".1.1 (external, sdk-cli)"
    assert client_of({"user-agent": agent}, crafted_body("/x")) is None
    body = crafted_body("/" + "d" * 20_000)
    trace = record(tmp_path / "crafted.trace.jsonl", [body], agent=agent)
    with Replayer(trace) as replay:
        assert post(body, agent).status_code == 200
    assert replay.profile is None
    assert replay.report.divergences == []
    assert re.search(r"served 1 of 1", replay.report.summary())


def test_a_crafted_cwd_in_a_profiled_cassette_folds_within_its_bound(tmp_path: Path) -> None:
    body = crafted_body("/" + "d" * 20_000)
    trace = record(tmp_path / "crafted.trace.jsonl", [body], agent=CLI)
    with Replayer(trace) as replay:
        assert post(body, CLI).status_code == 200
    assert replay.profile is CLAUDE_CODE
    assert replay.report.divergences == []
    folds = replay.report.folds
    assert folds is not None
    assert folds.by_rule["cwd"].texts >= 1
