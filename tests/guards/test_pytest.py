"""The guards in pytest and on the command line: `[tool.agentevals.budget]`, the agentevals_budget
marker, --agentevals-budget, the watchdog hook, and `agentevals record --budget KEY=VALUE`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.errors import ConfigError
from pytest_agentevals.guards import Budget
from pytest_agentevals.settings import Settings

from ..conftest import run_agentevals

# A test module that chats with the simulated model: `turns` calls per test.
CHATTY = """
import anthropic
import pytest
import pytest_agentevals as ae
from pytest_agentevals.sim import Reply, SimServer

@pytest.fixture
def client():
    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        yield anthropic.Anthropic(base_url=sim.url, api_key="sim", max_retries=0)

def chat(client, turns):
    for turn in range(turns):
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=32, messages=[{"role": "user", "content": f"q{turn}"}]
        )
"""


def trace_of(pytester: pytest.Pytester, name: str) -> list[dict[str, object]]:
    (path,) = (pytester.path / "traces").glob(f"*{name}*.trace.jsonl")
    return read_trace(path)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--agentevals-traces-dir=traces", "--agentevals-history=off", *args)


def test_the_configured_budget_stops_a_test_and_a_marker_overrides_it(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.agentevals.budget]\nmax_calls = 2\n")
    pytester.makepyfile(
        CHATTY
        + """
def test_default(agentevals_recorder, client):
    chat(client, 3)

@pytest.mark.agentevals_budget(max_calls=3)
def test_more(agentevals_recorder, client):
    chat(client, 3)
    assert ae.budget_left().calls == 0

@pytest.mark.agentevals_budget(max_calls=None)
def test_unlimited(agentevals_recorder, client):
    chat(client, 5)
    assert ae.budget_left().calls is None
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*RunStopped: the budget guard stopped the run as budget_exhausted*max_calls 2*"]
    )
    # The stop names where its limit was set: here the table (test_default has no marker).
    result.stdout.fnmatch_lines(
        [
            "*(max_calls was set by [[]tool.agentevals.budget[]] max_calls = 2 (pyproject.toml): "
            "raise it there)"
        ]
    )
    default = trace_of(pytester, "test_default")
    # A call budget brings the watchdog, asking after a tenth of it (at least 10 calls).
    assert default[0]["budget"] == {"max_calls": 2, "stall_calls": 10}
    assert default[0]["guards"] == ["budget", "watchdog"]
    assert default[-1]["status"] == "budget_exhausted"
    assert trace_of(pytester, "test_more")[0]["budget"] == {"max_calls": 3, "stall_calls": 10}
    assert trace_of(pytester, "test_unlimited")[0].get("budget") is None


def test_the_command_line_budget_beats_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        CHATTY
        + """
@pytest.mark.agentevals_budget(max_calls=5, max_cost_usd=1)
def test_pinned(agentevals_recorder, client):
    chat(client, 2)
"""
    )
    result = run(pytester, "--agentevals-budget", "max_calls=1")
    result.assert_outcomes(failed=1)
    # The stop names the flag that set the limit in force, not the marker it beat.
    result.stdout.fnmatch_lines(["*(max_calls was set by --agentevals-budget max_calls=1: raise it there)"])
    assert trace_of(pytester, "test_pinned")[0]["budget"] == {
        "max_cost_usd": 1.0,
        "max_calls": 1,
        "stall_calls": 10,
    }


def test_class_and_module_markers_apply_closest_last(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        CHATTY
        + """
pytestmark = pytest.mark.agentevals_budget(max_calls=9, max_tokens=100000)

@pytest.mark.agentevals_budget(max_calls=7)
class TestSome:
    @pytest.mark.agentevals_budget(max_calls=4)
    def test_function_wins(self, agentevals_recorder):
        pass

    def test_class_wins(self, agentevals_recorder):
        pass
"""
    )
    run(pytester).assert_outcomes(passed=2)
    assert trace_of(pytester, "test_function_wins")[0]["budget"]["max_calls"] == 4
    assert trace_of(pytester, "test_class_wins")[0]["budget"]["max_calls"] == 7
    assert trace_of(pytester, "test_class_wins")[0]["budget"]["max_tokens"] == 100000


@pytest.mark.parametrize(
    ("config", "marker", "expected"),
    [
        (
            "max_callz = 3",
            "",
            "[tool.agentevals.budget] max_callz: unknown budget key (use one of: max_call_tokens",
        ),
        ("max_calls = -1", "", "[tool.agentevals.budget] max_calls: -1 is below 0"),
        ('max_cost_usd = "lots"', "", "[tool.agentevals.budget] max_cost_usd: 'lots' is not a number"),
        ("max_calls = true", "", "[tool.agentevals.budget] max_calls: True is not a number"),
        (
            "",
            "max_tokens=1.5",
            "test_bad.py::test_it: @pytest.mark.agentevals_budget(max_tokens=...): 1.5 is not",
        ),
        ("", "stall_callz=3", "@pytest.mark.agentevals_budget(stall_callz=...): unknown budget key"),
    ],
)
def test_bad_budgets_stop_the_run_naming_the_key(
    pytester: pytest.Pytester, config: str, marker: str, expected: str
) -> None:
    pytester.makepyprojecttoml(f"[tool.agentevals.budget]\n{config}\n")
    pytester.makepyfile(
        test_bad=f"""
import pytest
@pytest.mark.agentevals_budget({marker})
def test_it(agentevals_recorder):
    pass
"""
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()


def test_the_daily_budget_trips_in_one_test_and_refuses_the_next(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.agentevals.budget]\nmax_daily_cost_usd = 0.002\n")
    pytester.makepyfile(
        CHATTY
        + """
def test_a_spends_the_day(agentevals_recorder, client):
    chat(client, 100)

def test_b_is_refused(agentevals_recorder, client):
    chat(client, 1)
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*refused before it started: today's cost breaker tripped*"])
    ledger = json.loads((pytester.path / ".agentevals" / "ledger.json").read_text())
    (day,) = ledger["days"].values()
    spent = trace_of(pytester, "test_a_spends_the_day")[-1]["totals"]["cost_usd"]
    assert day["spent_usd"] == pytest.approx(spent)
    assert day["tripped"]["limit_usd"] == 0.002
    assert [e["type"] for e in trace_of(pytester, "test_b_is_refused")] == ["run_start", "guard", "run_end"]


def test_the_watchdog_asks_the_hook_then_stops_the_test_as_stalled(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
asked = []

def pytest_agentevals_watchdog(run, reason):
    asked.append(reason)
    return len(asked) == 1  # go on once, then stop
"""
    )
    pytester.makepyfile(
        CHATTY
        + """
@pytest.mark.agentevals_budget(stall_calls=2)
def test_stalls(agentevals_recorder, client):
    chat(client, 10)
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the watchdog guard stopped the run as stalled*"])
    events = trace_of(pytester, "test_stalls")
    watch = [(e["type"], e["action"]) for e in events if e["type"] in ("watchdog", "guard")]
    assert watch == [("watchdog", "ask"), ("watchdog", "continue"), ("watchdog", "ask"), ("guard", "stop")]
    assert sum(e["type"] == "model_call" for e in events) == 4
    assert events[-1]["status"] == "stalled"


def test_a_watchdog_hook_that_raises_ends_the_test_run_as_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
def pytest_agentevals_watchdog(run, reason):
    return run.no_such_attribute
"""
    )
    pytester.makepyfile(
        CHATTY
        + """
@pytest.mark.agentevals_budget(stall_calls=1)
def test_buggy_hook(agentevals_recorder, client):
    chat(client, 3)
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*GuardError: the watchdog guard failed: AttributeError*"])
    events = trace_of(pytester, "test_buggy_hook")
    assert events[-1]["status"] == "error"
    assert "pytest_agentevals_watchdog" in events[-1]["error"]["traceback"]  # the hook's own frame
    assert "no_such_attribute" in events[-1]["error"]["traceback"]


def test_a_layer_turns_its_marker_keywords_into_a_budget(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest
from pytest_agentevals.runs import budget_for
from pytest_agentevals.settings.plugin import settings_of

@pytest.fixture
def layer_budget(request):
    return budget_for(request.node, settings_of(request.config), markers=("agentevals_budget", "resume"))
"""
    )
    pytester.makepyfile(
        """
import pytest
from pytest_agentevals import Budget

@pytest.mark.resume("fixture-at-hour-20", max_tokens=500000, max_seconds=3600)
def test_phase(layer_budget):
    assert layer_budget == Budget(max_tokens=500000, max_seconds=3600.0)
"""
    )
    run(pytester, "-p", "no:randomly").assert_outcomes(passed=1)


def test_settings_merge_the_command_line_budget_over_the_table_per_key(tmp_path: Path) -> None:
    settings = Settings.resolve(
        tmp_path,
        cli={"budget": "max_calls=5, max_seconds=60"},
        pyproject={"budget": {"max_calls": 100, "max_cost_usd": 2}},
    )
    assert settings.budget == Budget(max_calls=5, max_seconds=60.0, max_cost_usd=2.0)
    assert settings.budget.pinned == {"max_calls", "max_seconds"}
    assert settings.budget.with_keywords({"max_calls": 9, "max_cost_usd": 3}, "m") == Budget(
        max_calls=5, max_seconds=60.0, max_cost_usd=3.0
    )
    assert settings.ledger == tmp_path / ".agentevals" / "ledger.json"
    with pytest.raises(ConfigError, match="--agentevals-budget max_calls: 'x' is not a number"):
        Settings.resolve(tmp_path, cli={"budget": "max_calls=x"})
    with pytest.raises(ConfigError, match="'max_calls' is not KEY=VALUE"):
        Settings.resolve(tmp_path, cli={"budget": "max_calls"})


def test_the_watchdog_window_defaults_to_a_tenth_of_the_call_budget() -> None:
    assert Budget().watchdog_calls is None
    assert Budget(max_calls=400).watchdog_calls == 40
    assert Budget(max_calls=30).watchdog_calls == 10
    assert Budget(max_calls=400, stall_calls=7).watchdog_calls == 7
    assert Budget(max_calls=400, stall_calls=0).watchdog_calls is None


AGENT = """
import anthropic, os
client = anthropic.Anthropic(base_url=os.environ["SIM_URL"], api_key="sim", max_retries=3)
for turn in range(5):
    client.messages.create(model=os.environ.get("MODEL", "claude-sonnet-4-6"), max_tokens=32,
                           messages=[{"role": "user", "content": f"q{turn}"}])
"""


@pytest.fixture
def sim_url() -> object:
    from pytest_agentevals.sim import Reply, SimServer

    with SimServer(lambda request: Reply.text("ok"), seed=1) as sim:
        yield sim.url


def test_agentevals_record_takes_budgets(tmp_path: Path, sim_url: str) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.agentevals.budget]\nmax_calls = 100\nmax_tokens = 100000\n"
    )
    done = run_agentevals(
        "record", "-o", "run.trace.jsonl", "--budget", "max_calls=2,stall_calls=10", "--budget",
        "max_cost_usd=1", "agent.py", cwd=tmp_path, env={"SIM_URL": sim_url},
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "agentevals record: the budget guard stopped the run as budget_exhausted" in done.stderr
    # The table sets max_calls = 100; the flag's 2 is the limit in force, and the stop names it.
    assert "(max_calls was set by --budget max_calls=2: raise it there)" in done.stderr
    assert "Traceback" not in done.stderr
    events = read_trace(tmp_path / "run.trace.jsonl")
    assert events[0]["budget"] == {
        "max_tokens": 100000,
        "max_cost_usd": 1.0,
        "max_calls": 2,
        "stall_calls": 10,
    }
    assert events[-1]["status"] == "budget_exhausted"
    assert sum(e["type"] == "model_call" for e in events) == 2


def test_agentevals_record_refuses_bad_budgets_and_unpriced_models(tmp_path: Path, sim_url: str) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    bad = run_agentevals("record", "--budget", "max_callz=2", "agent.py", cwd=tmp_path)
    assert bad.returncode == 2
    assert "--budget max_callz: unknown budget key" in bad.stderr
    unpriced = run_agentevals(
        "record", "-o", "u.trace.jsonl", "--budget", "max_daily_cost_usd=5", "agent.py",
        cwd=tmp_path, env={"SIM_URL": sim_url, "MODEL": "house-model-2"},
    )  # fmt: skip
    assert unpriced.returncode == 2
    assert "[tool.agentevals.prices.house-model-2]: no price for model 'house-model-2'" in unpriced.stderr
    events = read_trace(tmp_path / "u.trace.jsonl")
    # The program's start checkpoint (the folder it runs in), then the refusal before any call.
    assert [e["type"] for e in events] == ["run_start", "checkpoint", "guard", "run_end"]
    assert not json.loads((tmp_path / ".agentevals" / "ledger.json").read_text())["reservations"]
