"""The entry point (`[project.entry-points.pytest11] agentevals`): it declares the hooks, adds the
options of the `OPTIONS` table, resolves the settings once and registers each layer's face with them
— nothing else. Every face is one class in its package's `plugin.py` that hands off to its engine."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from . import hooks
from .endpoint.plugin import EndpointPlugin
from .guards.plugin import GuardsPlugin
from .history.plugin import HistoryCollector
from .marathon.plugin import MarathonLayer
from .recording.plugin import RecordingPlugin
from .replay.plugin import ReplayLayer
from .report.plugin import OurFailures, PyramidSummary, SessionReport
from .resume.plugin import ResumeLayer
from .runs import RunPhases
from .settings import Settings
from .settings.plugin import add_options, resolve_settings
from .step.plugin import StepLayer

# Registered in this order (a later one's hook wrappers run outside an earlier one's). A factory may
# answer None: that face is off for this session.
FACES: tuple[tuple[str, Callable[[pytest.Config, Settings], object | None]], ...] = (
    ("agentevals-runs", RunPhases),
    ("agentevals-recording", RecordingPlugin),
    ("agentevals-failures", OurFailures),
    ("agentevals-pyramid", PyramidSummary),
    ("agentevals-replay", ReplayLayer),
    ("agentevals-resume", ResumeLayer),
    ("agentevals-guards", GuardsPlugin),
    ("agentevals-endpoint", EndpointPlugin),
    ("agentevals-step", StepLayer),
    ("agentevals-marathon", MarathonLayer),
    ("agentevals-history", HistoryCollector.from_config),
    ("agentevals-report", SessionReport.for_settings),
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = resolve_settings(config)
    for name, face in FACES:
        plugin = face(config, settings)
        if plugin is not None:
            config.pluginmanager.register(plugin, name)
