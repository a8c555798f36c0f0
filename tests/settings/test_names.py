"""The naming table (`settings/names.py`) against what the plugin, the command and `errors.py` really
register: every name follows its rule and is in the table, and every 0.x spelling still works, warned.
"""

from __future__ import annotations

import argparse
import inspect
import re
import shutil
import warnings
from pathlib import Path

import pytest

import pytest_agentevals as ae
from pytest_agentevals import errors
from pytest_agentevals.cli import DEPRECATED, build_parser
from pytest_agentevals.errors import AgentEvalsDeprecationWarning, ConfigError
from pytest_agentevals.settings import OPTIONS, Settings
from pytest_agentevals.settings.names import (
    COMMANDS,
    ERRORS,
    FIXTURES,
    LAYER_WORDS,
    MARKERS,
    OUTPUT_COMMANDS,
    RENAMED,
    folder_of,
)

from .. import replay_support, resume_support
from ..conftest import REPO, run_agentevals

pytest_plugins = ["pytester"]
CHANGELOG = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def our_markers(pytester: pytest.Pytester) -> set[str]:
    """The markers the plugin registers: every registered marker pytest alone does not have."""

    def names(*args: str) -> set[str]:
        config = pytester.parseconfigure(*args)
        return {str(line).split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}

    return names() - names("-p", "no:agentevals")


def test_markers_are_a_layers_word_or_begin_with_agentevals_and_are_all_in_the_table(
    pytester: pytest.Pytester,
) -> None:
    registered = our_markers(pytester)
    assert registered == set(MARKERS) | set(RENAMED["marker"])
    assert [name for name in MARKERS if name not in LAYER_WORDS and not name.startswith("agentevals_")] == []
    assert set(LAYER_WORDS) <= set(MARKERS)


def test_fixtures_begin_with_agentevals_and_a_layers_run_is_named_by_its_word(
    pytester: pytest.Pytester,
) -> None:
    listed = pytester.runpytest("--fixtures", "-v", "-p", "no:cacheprovider").stdout.lines
    ours = {
        match.group(1)
        for line in listed
        if (match := re.match(r"^(\w+) -- .*pytest_agentevals[/\\]", line))
        and not match.group(1).startswith("_")
    }
    assert ours == set(FIXTURES) | set(RENAMED["fixture"])
    assert [name for name in FIXTURES if not name.startswith("agentevals_")] == []
    assert {f"agentevals_{word}" for word in LAYER_WORDS if word != "step"} <= set(FIXTURES)


def test_settings_are_spelled_one_way_on_every_surface() -> None:
    for option in OPTIONS:
        assert option.cli == "--agentevals-" + option.key.replace("_", "-")
        if option.key.endswith("_dir"):
            assert folder_of(option.key) == option.key.removesuffix("_dir"), option.key
        if option.marker_kwarg is not None:
            assert option.marker_kwarg == option.key, "a marker keyword that sets an option is its key"


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                word = f"{prefix} {name}".strip()
                found[word] = sub
                found.update(_subparsers(sub, word))
    return found


def test_the_command_names_its_subcommands_and_flags_by_the_table() -> None:
    commands = _subparsers(build_parser())
    assert {name for name in commands if " " not in name} == set(COMMANDS)
    assert set(DEPRECATED) == set(RENAMED["command"])
    assert set(DEPRECATED.values()) <= set(COMMANDS)
    keys = {option.key for option in OPTIONS}
    for name, parser in commands.items():
        for action in parser._actions:
            visible = action.help != argparse.SUPPRESS
            if action.dest in keys and visible:
                assert f"--{action.dest.replace('_', '-')}" in action.option_strings, (
                    name,
                    action.option_strings,
                )
            if visible:
                assert not {"--out", "--to", "--mode"} & set(action.option_strings), (
                    name,
                    action.option_strings,
                )
    for name in OUTPUT_COMMANDS:
        strings = {s for action in commands[name]._actions for s in action.option_strings}
        assert {"-o", "--output"} <= strings, name


def test_every_error_is_in_the_table_under_its_layers_base() -> None:
    defined = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == errors.__name__
    }
    assert set(defined) == set(ERRORS) == set(errors.__all__)
    assert {name: cls.__bases__[0].__name__ for name, cls in defined.items()} == ERRORS


def test_every_renamed_spelling_is_in_the_changelogs_table() -> None:
    lines = [line.strip() for line in CHANGELOG.splitlines()]
    rows = {
        tuple(cell.strip(" `") for cell in line.strip("|").split("|")[:2])
        for line in lines
        if line.startswith("|")
    }
    missing = [
        (old, new) for table in RENAMED.values() for old, new in table.items() if (old, new) not in rows
    ]
    assert missing == []


# -- the 0.x spellings still work, warned -----------------------------------------------------------


def test_an_old_setting_key_is_read_and_warned_and_never_beside_its_new_one(tmp_path: Path) -> None:
    settings = Settings.resolve(tmp_path, pyproject={"cassette_dir": "recorded", "trace_dir": "out"})
    assert (settings.cassettes_dir, settings.traces_dir) == (tmp_path / "recorded", tmp_path / "out")
    assert settings.deprecations == (
        "[tool.agentevals]: trace_dir is the 0.x name of traces_dir; write traces_dir (the old name goes "
        "in the next release)",
        "[tool.agentevals]: cassette_dir is the 0.x name of cassettes_dir; write cassettes_dir (the old "
        "name goes in the next release)",
    )
    assert Settings.resolve(tmp_path, pyproject={"cassettes_dir": "x"}).deprecations == ()
    with pytest.raises(
        ConfigError, match=r"cassette_dir: is the 0.x name of cassettes_dir, which is set too"
    ):
        Settings.resolve(tmp_path, pyproject={"cassette_dir": "a", "cassettes_dir": "b"})


def test_old_options_and_marker_keywords_work_in_pytest_with_a_warning_each(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(replay_support=Path(replay_support.__file__).read_text())
    replay_support.record(pytester.path / "recorded" / "fix.trace.jsonl")
    pytester.makepyprojecttoml('[tool.agentevals]\ntrace_dir = "out"\n')
    pytester.makepyfile(
        test_old="""
import pytest
import replay_support as agent

@pytest.mark.replay("fix", mode="sequential")
def test_it(agentevals_replay):
    assert agentevals_replay.replayer.mode == "sequential"
    agent.run_agent(agent.client(), agentevals_replay.task)

@pytest.mark.metamorphic
def test_metamorphic():
    pass
"""
    )
    result = pytester.runpytest(
        "--agentevals-cassette-dir=recorded", "--agentevals-collect-cassettes=false", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    for expected in (
        "[tool.agentevals]: trace_dir is the 0.x name of traces_dir",
        "the command line: --agentevals-cassette-dir is the 0.x name of --agentevals-cassettes-dir",
        "@pytest.mark.replay: mode= is the 0.x name of replay_mode=",
        "@pytest.mark.metamorphic is the 0.x name of @pytest.mark.agentevals_metamorphic",
    ):
        assert expected in text, expected
    assert text.count("AgentEvalsDeprecationWarning") >= 4


def test_the_old_resume_fixture_and_keywords_work_with_a_warning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(resume_support=Path(resume_support.__file__).read_text())
    resume_support.make_fixture(pytester.path, continuation=True)
    pytester.makeconftest(
        """
def pytest_agentevals_resume_agent(checkpoint):
    return "resumed"
"""
    )
    pytester.makepyfile(
        test_leg="""
import pytest

@pytest.mark.resume("counter-2", contract="skip", tolerate=["python"])
def test_leg(agentevals_checkpoint):
    assert agentevals_checkpoint.policy == "skip" and agentevals_checkpoint.run_agent() == "resumed"
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "@pytest.mark.resume: contract= is the 0.x name of contract_policy=" in text
    assert "@pytest.mark.resume: tolerate= is the 0.x name of contract_tolerate=" in text
    assert "the agentevals_checkpoint fixture is the 0.x name of agentevals_resume" in text


def test_old_command_flags_work_and_say_the_new_one_on_stderr(tmp_path: Path) -> None:
    shutil.copy(REPO / "cassettes" / "taskrunner-3-tasks.trace.jsonl", tmp_path / "run.trace.jsonl")
    runs = {
        flag: run_agentevals(
            "step",
            "extract",
            "run.trace.jsonl",
            "--steps",
            "1",
            "--scenario",
            "s",
            flag,
            f"{flag[2:]}.yaml",
            cwd=tmp_path,
        )
        for flag in ("--out", "--output")
    }
    assert runs["--out"].returncode == runs["--output"].returncode == 0, runs["--out"].stderr
    assert (tmp_path / "out.yaml").read_text() == (tmp_path / "output.yaml").read_text()
    assert runs["--out"].stderr.startswith(
        "agentevals: agentevals step extract: --out is the 0.x name of --output; write --output"
    )
    assert runs["--output"].stderr == ""
    migrate = run_agentevals("flaky", "migrate", "--to", "not-a-url", cwd=tmp_path)
    assert migrate.returncode == 2
    assert "--to is the 0.x name of --output" in migrate.stderr
    assert "--output: 'not-a-url' is not a postgresql:// URL" in migrate.stderr
    merged = run_agentevals("marathon", "merge", "nothing", cwd=tmp_path)
    assert merged.returncode == 2
    assert "-o/--output: is missing" in merged.stderr


def test_old_class_names_still_answer_with_a_warning() -> None:
    from pytest_agentevals import guards, replay, resume

    for package, old, new in (
        (ae, "ReplaySession", ae.ReplayRun),
        (replay, "ReplaySession", replay.ReplayRun),
        (guards, "Verdict", guards.Ruling),
    ):
        with pytest.warns(AgentEvalsDeprecationWarning, match=rf"\.{old} is the 0.x name of "):
            assert getattr(package, old) is new
    with pytest.warns(AgentEvalsDeprecationWarning, match=r"resume.ResumeSession is the 0.x name of "):
        factory = resume.ResumeSession
    assert callable(factory)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "ReplaySession" not in dir(replay)
        assert "Verdict" not in guards.__all__
