"""Settings: resolved once, CLI > marker > [tool.agentevals] > default, bad values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentevals import ConfigError
from pytest_agentevals.settings import Settings, read_pyproject


def test_defaults(tmp_path: Path) -> None:
    settings = Settings.resolve(tmp_path)
    assert settings.record == "none"
    assert settings.replay_mode == "strict"
    assert settings.traces_dir == tmp_path / ".agentevals/traces"
    assert settings.history == tmp_path / ".agentevals/history.sqlite"
    assert settings.flaky_budget["marathon"] == 0.20
    assert settings.flaky_budget["step"] == 0.0
    assert set(settings.sources.values()) == {"default"}


def test_precedence_cli_over_marker_over_pyproject(tmp_path: Path) -> None:
    settings = Settings.resolve(
        tmp_path, cli={"record": "all"}, pyproject={"record": "once", "replay_mode": "sequential"}
    )
    assert (settings.record, settings.replay_mode) == ("all", "sequential")
    assert settings.sources["record"] == "cli"
    assert settings.sources["replay_mode"] == "pyproject"
    marked = settings.for_marker("replay", {"record": "new", "replay_mode": "strict"})
    assert marked.record == "all"  # the command line wins over the marker
    assert marked.replay_mode == "strict"
    assert marked.sources["replay_mode"] == "marker"
    assert settings.replay_mode == "sequential"  # frozen: the run's settings are untouched


def test_history_off_and_paths(tmp_path: Path) -> None:
    settings = Settings.resolve(tmp_path, pyproject={"history": "off", "traces_dir": "/abs/traces"})
    assert settings.history is None
    assert settings.traces_dir == Path("/abs/traces")


@pytest.mark.parametrize(
    ("cli", "pyproject", "message"),
    [
        ({}, {"recrod": "none"}, r"\[tool.agentevals\] recrod: unknown key \(known keys: traces_dir, record"),
        (
            {"record": "sometimes"},
            {},
            r"--agentevals-record: 'sometimes' is not allowed \(use one of: none, once",
        ),
        ({}, {"collect_cassettes": "maybe"}, r"collect_cassettes: 'maybe' is not a boolean"),
        ({}, {"flaky_budget": {"marathon": 2}}, r"flaky_budget.marathon: 2 is not a rate"),
        ({}, {"flaky_budget": {"nightly": 0.1}}, r"flaky_budget.nightly: unknown key"),
        ({}, {"prices": {"m": {"input": 1}}}, r"prices.m: needs at least input and output"),
        ({}, {"prices": {"m": {"input": 1, "output": 2, "tip": 3}}}, r"prices.m.tip: unknown price field"),
        ({}, {"contract_packages": [1]}, r"contract_packages: \[1\] is not a list of strings"),
    ],
)
def test_bad_values_name_the_key(
    tmp_path: Path, cli: dict[str, str], pyproject: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.resolve(tmp_path, cli=cli, pyproject=pyproject)


def test_bad_marker_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"@pytest.mark.replay\(mode=...\): 'loose' is not allowed"):
        Settings.resolve(tmp_path).for_marker("replay", {"mode": "loose"})


def test_a_marker_keyword_that_is_no_setting_is_an_error(tmp_path: Path) -> None:
    # A layer passes on only the setting keywords of its marker; anything else is a mistake.
    with pytest.raises(
        ConfigError,
        match=r"@pytest.mark.replay\(mdoe=...\): unknown keyword "
        r"\(setting keywords: record, replay_mode, contract_policy, contract_tolerate\)",
    ):
        Settings.resolve(tmp_path).for_marker("replay", {"mdoe": "strict"})


def test_pyproject_table_is_read_in_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agentevals]\nreplay_mode = "sequential"\ntraces_dir = "out"\n')
    pytester.makeconftest(
        """
        from pytest_agentevals.settings.plugin import settings_of
        def pytest_report_header(config):
            s = settings_of(config)
            return f"settings: {s.replay_mode} {s.traces_dir.name} {s.record}"
        """
    )
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--agentevals-record=new")
    result.stdout.fnmatch_lines(["settings: sequential out new"])


def test_unknown_pyproject_key_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agentevals]\nreplay_mod = "sequential"\n')
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agentevals: [[]tool.agentevals[]] replay_mod: unknown key*"])


def test_bad_cli_value_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--agentevals-replay-mode=loose")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--agentevals-replay-mode: 'loose' is not allowed (use one of: strict, sequential)*"]
    )


def test_broken_toml_is_named(tmp_path: Path) -> None:
    # pytest reports a broken pyproject.toml itself; the agentevals command relies on this message.
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.agentevals\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: is not valid TOML: .*\(fix the file's syntax\)"):
        read_pyproject(path)


def test_table_settings_have_a_command_line_form_laid_over_pyproject(tmp_path: Path) -> None:
    settings = Settings.resolve(
        tmp_path,
        cli={
            "flaky_budget": ["step=0.01,min_samples=20", "window=50"],
            "prices": [
                "claude-x:input=3,output=15; bedrock.claude-v1:0:input=1,output=2",
                "claude-y:output=9",
            ],
        },
        pyproject={
            "flaky_budget": {"marathon": 0.3, "window": 100},
            "prices": {"claude-y": {"input": 4, "output": 8, "cache_read": 0.4}},
        },
    )
    budget = settings.flaky_budget
    assert (budget["step"], budget["marathon"], budget["min_samples"], budget["window"]) == (
        0.01,
        0.3,
        20,
        50,
    )
    assert budget["replay"] == 0.0  # untouched keys keep their default
    assert settings.prices == {
        "claude-y": {"input": 4.0, "output": 9.0, "cache_read": 0.4},  # field by field over pyproject
        "claude-x": {"input": 3.0, "output": 15.0},
        "bedrock.claude-v1:0": {"input": 1.0, "output": 2.0},  # a model id may hold a ':'
    }
    assert settings.sources["flaky_budget"] == settings.sources["prices"] == "cli"


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("flaky_budget", "marathon=2", r"--agentevals-flaky-budget.marathon: 2 is not a rate \(give a rate"),
        ("flaky_budget", "nightly=0.1", r"--agentevals-flaky-budget.nightly: unknown key \(use one of: step"),
        ("flaky_budget", "min_samples=0.5", r"min_samples: 0.5 is not a positive whole number"),
        ("flaky_budget", "step=often", r"--agentevals-flaky-budget.step: 'often' is not a number"),
        (
            "flaky_budget",
            "step0.01",
            r"--agentevals-flaky-budget: 'step0.01' is not NAME=VALUE \(write e.g. step=",
        ),
        ("prices", "m:input=1", r"--agentevals-prices.m: needs at least input and output"),
        ("prices", "m:input=1,output=2,tip=3", r"--agentevals-prices.m.tip: unknown price field"),
        ("prices", "m:input=-1,output=2", r"--agentevals-prices.m.input: -1 is not a price"),
        (
            "prices",
            "input=3,output=15",
            r"--agentevals-prices: 'input=3,output=15' names no model \(write MODEL:",
        ),
    ],
)
def test_the_command_line_form_is_checked_like_the_pyproject_form(
    tmp_path: Path, key: str, text: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.resolve(tmp_path, cli={key: [text]})


def test_a_bad_pyproject_table_is_named_as_pyproject_under_a_command_line_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^\[tool.agentevals\] flaky_budget.marathon: 2 is not a rate"):
        Settings.resolve(
            tmp_path, cli={"flaky_budget": ["step=0"]}, pyproject={"flaky_budget": {"marathon": 2}}
        )


def test_a_number_that_is_not_finite_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"flaky_budget.min_samples: nan is not a number"):
        Settings.resolve(tmp_path, pyproject={"flaky_budget": {"min_samples": float("nan")}})
    with pytest.raises(ConfigError, match=r"--agentevals-prices.m.output: inf is not a price"):
        Settings.resolve(tmp_path, cli={"prices": ["m:input=1,output=inf"]})


def test_pytest_takes_budget_and_prices_from_its_command_line(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from pytest_agentevals.settings.plugin import settings_of
        def pytest_report_header(config):
            s = settings_of(config)
            return f"settings: step={s.flaky_budget['step']} min={s.flaky_budget['min_samples']} {s.prices}"
        """
    )
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest(
        "--agentevals-flaky-budget=step=0.02,min_samples=10",
        "--agentevals-prices",
        "claude-x:input=3,output=15",
        "--agentevals-prices=claude-y:input=1,output=2",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "settings: step=0.02 min=10.0 {'claude-x': {'input': 3.0, 'output': 15.0}, "
            "'claude-y': {'input': 1.0, 'output': 2.0}}"
        ]
    )
    bad = pytester.runpytest("--agentevals-flaky-budget=replay=1.5")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*agentevals: --agentevals-flaky-budget.replay: 1.5 is not a rate*"])


def test_a_path_option_written_with_a_space_outside_the_project_is_warned_about(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile("def test_a():\n    pass\n")
    outside = tmp_path_factory.mktemp("elsewhere") / "report.html"
    spaced = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentevals-history=off", "--agentevals-report", str(outside)
    )
    spaced.assert_outcomes(passed=1, warnings=1)
    spaced.stdout.fnmatch_lines(
        [f"*agentevals: --agentevals-report {outside}: written with a space, pytest also took * as a "
         "test path when it chose the rootdir (*), where .agentevals/ and the settings are looked for; "
         f"write --agentevals-report={outside}"]
    )  # fmt: skip
    joined = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentevals-history=off", f"--agentevals-report={outside}"
    )
    joined.assert_outcomes(passed=1)
    inside = pytester.runpytest(
        "-p", "no:cacheprovider", "--agentevals-history=off", "--agentevals-report", "r.html"
    )
    inside.assert_outcomes(passed=1)  # a path inside the project moves nothing: no warning
