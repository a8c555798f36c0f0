"""The environment contract of a checkpoint: its keys, drift and severity, declared tolerances, the
table a person reads, the guard on the first request; and the `until` conditions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals import ConfigError
from pytest_agentevals.contract import (
    ABSENT,
    Tolerance,
    compare,
    enforce,
    hash_json,
    recorded_contract,
    request_contract,
    severity,
    tolerances,
)
from pytest_agentevals.errors import ContractDrift
from pytest_agentevals.guards.protocol import Call
from pytest_agentevals.resume.contract_guard import ContractGuard
from pytest_agentevals.resume.until import Condition
from pytest_agentevals.settings import Settings

BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 1024,
    "system": "You are careful.",
    "tools": [{"name": "read", "input_schema": {}}, {"name": "write", "input_schema": {}}],
    "messages": [{"role": "user", "content": "go"}],
    "tool_choice": {"type": "auto"},
}


@pytest.mark.parametrize(
    ("key", "recorded", "now", "expected"),
    [
        ("python", "3.11.7", "3.11.9", "patch"),
        ("python", "3.11.7", "3.12.1", "minor"),
        ("packages.anthropic", "1.9.0", "2.14.0", "major"),
        ("packages.anthropic", "2.14.0", "2.14.0rc1", "patch"),
        ("packages.anthropic", "2.14.0", None, "changed"),
        ("packages.x", "2.0", ABSENT, "missing"),
        ("db.schema", 3, 4, "changed"),
        ("tools.read", ABSENT, "abc", "added"),
    ],
)
def test_severity(key: str, recorded: Any, now: Any, expected: str) -> None:
    assert severity(key, recorded, now) == expected


def test_a_tolerance_covers_its_keys_up_to_its_level() -> None:
    recorded = {"python": "3.11.7", "packages.anthropic": "2.14.0", "db.schema": 3}
    now = {"python": "3.12.0", "packages.anthropic": "2.14.3", "db.schema": 4}
    drifts = compare(recorded, now, tolerances("t", ["python:patch", "packages.*:minor", "db.*"]))
    assert [(d.key, d.severity, d.tolerated) for d in drifts] == [
        ("db.schema", "changed", True),
        ("packages.anthropic", "patch", True),
        ("python", "minor", False),  # a minor drift is beyond a patch tolerance
    ]
    with pytest.raises(ContractDrift) as raised:
        enforce(drifts, "fail", "fixtures/x", "x")
    lines = str(raised.value).splitlines()
    assert lines[0] == "fixtures/x: the environment drifted from the checkpoint's contract:"
    assert lines[1:6] == [
        "  key                | recorded | now    | severity",
        "  -------------------+----------+--------+--------------------",
        "  db.schema          | 3        | 4      | changed (tolerated)",
        "  packages.anthropic | 2.14.0   | 2.14.3 | patch (tolerated)",
        "  python             | 3.11.7   | 3.12.0 | minor",
    ]
    assert "agentevals resume bless x --reason" in lines[-1]
    assert enforce(drifts, "warn", "fixtures/x", "x") == drifts
    assert enforce(drifts, "skip", "fixtures/x", "x") == []
    assert enforce(drifts[:2], "fail", "fixtures/x", "x") == drifts[:2]  # all tolerated: no failure


@pytest.mark.parametrize("text", ["", ":patch", "python:tiny", "python:"])
def test_a_bad_tolerance_names_itself(text: str) -> None:
    if text == "python:":
        assert Tolerance.parse("t", text) == Tolerance("python", None)
        return
    with pytest.raises(ConfigError, match="is not a tolerance"):
        Tolerance.parse("t", text)


def test_the_settings_check_the_contract_keys(tmp_path: Path) -> None:
    settings = Settings.resolve(
        tmp_path, pyproject={"contract_policy": "warn", "contract_tolerate": ["python"]}
    )
    assert (settings.contract_policy, settings.contract_tolerate) == ("warn", ("python",))
    with pytest.raises(ConfigError, match=r"\[tool.agentevals\] contract_policy: 'loose' is not allowed"):
        Settings.resolve(tmp_path, pyproject={"contract_policy": "loose"})
    marked = settings.for_marker("resume", {"contract": "fail", "tolerate": ["db.*"]})
    assert (marked.contract_policy, marked.contract_tolerate) == ("fail", ("db.*",))


def test_the_recorded_contract_takes_what_the_first_request_showed() -> None:
    events = [
        {
            "type": "run_start",
            "contract": {"python": "3.11.7", "packages": {"anthropic": "2.14.0"}, "db": {"v": 3}},
        },
        {
            "type": "model_call",
            "provider": "anthropic",
            "request": {"body": BODY},
            "response": {"status": 200},
        },
    ]
    contract = recorded_contract(events)
    assert contract == {
        "python": "3.11.7",
        "packages.anthropic": "2.14.0",
        "db.v": 3,
        "model": "claude-sonnet-4-6",
        "request.max_tokens": 1024,
        "system_sha256": hash_json("You are careful."),
        "tools.read": hash_json(BODY["tools"][0]),
        "tools.write": hash_json(BODY["tools"][1]),
    }
    assert "request.tool_choice" not in request_contract(BODY)  # the conversation's, not the contract's


def _call(body: dict[str, Any]) -> Call:
    return Call(
        index=1, model=str(body.get("model")), max_tokens=1024, input_tokens=10, cost_usd=0.0, body=body
    )


def test_the_guard_checks_the_first_request_only() -> None:
    recorded = recorded_contract(
        [
            {
                "type": "model_call",
                "provider": "anthropic",
                "request": {"body": BODY},
                "response": {"status": 200},
            }
        ]
    )
    changed = {**BODY, "tools": [BODY["tools"][0], {"name": "delete", "input_schema": {}}], "max_tokens": 512}
    guard = ContractGuard(recorded, "fail", "fixtures/x", "x")
    with pytest.raises(ContractDrift) as raised:
        guard.before_call(_call(changed))
    assert [(d.key, d.severity) for d in guard.drifts] == [
        ("request.max_tokens", "changed"),
        ("tools.delete", "added"),
        ("tools.write", "missing"),
    ]
    assert "  tools.write        | " in str(raised.value)
    assert guard.before_call(_call(changed)) is None  # checked once: later requests are the run's own
    warned = ContractGuard(recorded, "warn", "fixtures/x", "x").before_call(_call(changed))
    assert warned is not None
    assert warned.action == "warn"
    assert ContractGuard(recorded, "fail", "fixtures/x", "x").before_call(_call(dict(BODY))) is None


@pytest.mark.parametrize(
    ("text", "progress", "gain", "calls", "holds"),
    [
        ("progress>=0.6", 0.6, 0.1, 3, True),
        ("progress>=0.6", 0.59, 0.1, 3, False),
        ("progress > 0.6", 0.6, 0.1, 3, False),
        ("gain>=0.25", 0.75, 0.25, 3, True),
        ("calls>=20", 0.1, 0.0, 20, True),
        ("progress>=1", 3 * (1 / 3), 0.5, 1, True),  # three thirds make a whole
    ],
)
def test_until_conditions(text: str, progress: float, gain: float, calls: int, holds: bool) -> None:
    assert Condition.parse("until", text).holds(progress, gain, calls) is holds


@pytest.mark.parametrize("text", ["progress>>1", "progress>=1.5", "steps>=3", "progress", 0.6])
def test_a_bad_until_condition_says_how_to_write_one(text: Any) -> None:
    with pytest.raises(ConfigError, match=r"is not a condition|progress is in \[0, 1\]") as raised:
        Condition.parse("@pytest.mark.resume(until=...)", text)
    assert 'write e.g. "progress>=0.6"' in str(raised.value)
