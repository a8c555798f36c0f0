"""pytest wiring only: options, markers, settings, fixtures and hooks hand off to the objects below."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from . import guards_plugin
from .checkpoint.layer import ResumeHookspecs, ResumeLayer, declared_contract
from .errors import ConfigError
from .golden.layer import StepLayer
from .history.collector import HistoryCollector
from .layers import LAYERS
from .marathon.layer import MarathonLayer
from .recording.naming import TRACE_PROPERTY, trace_path_for
from .recording.recorder import Recorder
from .recording.replay.layer import ReplayHookspecs, ReplayLayer
from .report.failure import OurFailure
from .report.pyramid import PyramidSummary
from .report.session import SessionReport
from .settings import OPTIONS, Settings, find_pyproject, read_pyproject

SETTINGS_KEY = pytest.StashKey[Settings]()
CALL_FAILED_KEY = pytest.StashKey[bool]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(ReplayHookspecs)
    pluginmanager.add_hookspecs(ResumeHookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentevals", "agentevals: the eval pyramid for long-running agents")
    for option in OPTIONS:
        if option.flag:
            group.addoption(option.cli, action="store_const", const=True, default=None, help=option.help)
        else:
            extra = f" (one of: {', '.join(option.choices)})" if option.choices else ""
            default = "" if option.default in (None, {}) else f"; default {option.default}"
            group.addoption(
                option.cli,
                default=None,
                action="append" if option.text else "store",
                metavar=option.metavar or option.key.upper(),
                help=f"{option.help}{extra}{default}",
            )


def _pyproject(config: pytest.Config) -> Path | None:
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    return find_pyproject(config.rootpath)


def pytest_configure(config: pytest.Config) -> None:
    for layer in LAYERS:
        config.addinivalue_line("markers", layer.marker_help)
    cli = {option.key: config.getoption(option.cli) for option in OPTIONS}
    try:
        settings = Settings.resolve(config.rootpath, cli=cli, pyproject=read_pyproject(_pyproject(config)))
    except ConfigError as exc:
        raise pytest.UsageError(f"agentevals: {exc}") from None
    config.stash[SETTINGS_KEY] = settings
    config.pluginmanager.register(PyramidSummary(), "agentevals-pyramid")
    config.pluginmanager.register(ReplayLayer(settings), "agentevals-replay")
    config.pluginmanager.register(ResumeLayer(settings), "agentevals-resume")
    config.pluginmanager.register(guards_plugin, "agentevals-guards")
    config.pluginmanager.register(StepLayer(settings), "agentevals-step")
    config.pluginmanager.register(MarathonLayer(settings), "agentevals-marathon")
    config.pluginmanager.register(HistoryCollector.from_config(config, settings), "agentevals-history")
    if settings.report is not None:
        config.pluginmanager.register(SessionReport(config, settings.report), "agentevals-report")


def settings_of(config: pytest.Config) -> Settings:
    """The run's resolved settings (for fixtures and the other wiring in this package)."""
    return config.stash[SETTINGS_KEY]


@pytest.fixture
def agentevals_recorder(request: pytest.FixtureRequest) -> Iterator[Recorder]:
    """Records the current test's run into `<trace_dir>/<test id>.trace.jsonl`.

    Recording is on from setup to teardown: model calls through httpx/httpx2, `@tool` calls and
    harness events all land in the test's trace. A test's trace from an earlier session is replaced.
    The run is guarded by the configured budget and the test's `agentevals_budget` marker, and its
    contract holds what the `pytest_agentevals_contract()` hooks declare.
    """
    settings = settings_of(request.config)
    path = trace_path_for(request.node.nodeid, settings.trace_dir)
    path.unlink(missing_ok=True)
    request.node.user_properties.append((TRACE_PROPERTY, str(path)))
    recorder = Recorder(
        path,
        agent=request.node.name,
        packages=settings.contract_packages,
        prices=settings.prices,
        guards=guards_plugin.guards_for_item(request.node, settings),
        contract=declared_contract(request.node),
    )
    with recorder:
        yield recorder
        if recorder.status is None and request.node.stash.get(CALL_FAILED_KEY, False):
            recorder.end("failed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    guards_plugin.check_markers(items, settings_of(config))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if report.when == "call" and report.failed:
        # Read by fixtures at teardown: a recorded test that failed ends its trace as "failed".
        item.stash[CALL_FAILED_KEY] = True
    if report.failed and call.excinfo is not None and not item.config.option.fulltrace:
        # A failure of ours (every layer's) reads message first, without the SDK's and our frames.
        ours = OurFailure.replacing(report.longrepr, call.excinfo.value, item.config.rootpath)
        if ours is not None:
            report.longrepr = ours  # type: ignore[assignment]
    return report
