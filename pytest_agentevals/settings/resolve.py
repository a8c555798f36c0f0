"""One frozen Settings object, resolved once: CLI > marker > `[tool.agentevals]` > default.

The options themselves are declared in `options.py`; this module works out their precedence, and
nothing else does.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .budgets import Budget
from .dburl import DatabaseURL, DbTimeouts
from .normalize import Rule
from .options import (
    BY_KEY,
    MARKER_KWARGS,
    OLD_KEYS,
    OLD_MARKER_KWARGS,
    OPTIONS,
    PYTEST_PREFIX,
    Source,
    _default,
    _from_command_line,
    renamed,
)
from .seeds import SeedSelection


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one run. Paths are absolute, resolved against `rootdir`."""

    rootdir: Path
    traces_dir: Path
    record: str
    replay_mode: str
    cassettes_dir: Path
    replay_programs: tuple[str, ...]
    goldens_dir: Path
    fixtures_dir: Path
    collect_cassettes: bool
    update_goldens: bool
    contract_packages: tuple[str, ...]
    prices: dict[str, dict[str, float]]
    history: Path | DatabaseURL | None
    flaky: str
    flaky_budget: dict[str, float]
    quarantine: Path
    sha: str | None
    run_id: str | None
    budget: Budget = field(default_factory=Budget)
    ledger: Path | DatabaseURL = Path(".agentevals/ledger.json")
    ledger_unreachable: str = "refuse"
    db_timeouts: DbTimeouts = field(default_factory=DbTimeouts)
    marathons_dir: Path = Path(".agentevals/marathons")
    budget_stops: str = "exclude"
    seeds: SeedSelection | None = None
    rerun_seeds: bool = False
    report: Path | None = None
    contract_policy: str = "fail"
    contract_tolerate: tuple[str, ...] = ()
    replay_normalize: tuple[Rule, ...] = ()
    replay_profile: str = "auto"
    replay_via: str = "sdk"
    sources: dict[str, Source] = field(default_factory=dict, compare=False)
    # What the configuration still spells as in 0.x, one warning each: the faces show them (pytest
    # as configuration warnings, the agentevals command on stderr).
    deprecations: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def resolve(
        cls,
        rootdir: Path,
        cli: Mapping[str, Any] | None = None,
        pyproject: Mapping[str, Any] | None = None,
        flag_prefix: str = PYTEST_PREFIX,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Build the settings from command-line values (None = not given) over the environment
        variables some options read (`environ`, default os.environ) over a pyproject table. A bad
        command-line value is named by its flag: `flag_prefix` and the key (`--agentevals-record`)."""
        environ = os.environ if environ is None else environ
        cli = cli or {}
        pyproject, deprecations = _renamed_keys(pyproject or {})
        unknown = sorted(set(pyproject) - set(BY_KEY))
        if unknown:
            raise ConfigError(
                f"[tool.agentevals] {unknown[0]}",
                "unknown key",
                "known keys: " + ", ".join(BY_KEY),
            )
        values: dict[str, Any] = {}
        sources: dict[str, Source] = {}
        for option in OPTIONS:
            if option.key == "budget" and cli.get("budget") is not None:
                # Per key: the command line's limits over the pyproject table's, pinned against markers.
                table = option.parse("budget", pyproject.get("budget", {}))
                values["budget"] = table.merged(
                    option.parse(option.flag_with(flag_prefix), cli["budget"]).pin()
                )
                sources["budget"] = "cli"
            elif cli.get(option.key) is not None:
                values[option.key] = _from_command_line(option, cli[option.key], pyproject, flag_prefix)
                sources[option.key] = "cli"
            elif option.env is not None and environ.get(option.env, "").strip():
                # An empty variable is unset: a CI secret that is not configured expands to "".
                values[option.key] = option.parse(f"${option.env}", environ[option.env])
                sources[option.key] = "env"
            elif option.key in pyproject:
                values[option.key] = option.parse(f"[tool.agentevals] {option.key}", pyproject[option.key])
                sources[option.key] = "pyproject"
            else:
                values[option.key] = _default(option)
                sources[option.key] = "default"
        return dataclasses.replace(cls._build(rootdir, values, sources), deprecations=deprecations)

    @classmethod
    def _build(cls, rootdir: Path, values: dict[str, Any], sources: dict[str, Source]) -> Settings:
        def absolute(raw: str) -> Path:
            path = Path(raw).expanduser()
            return path if path.is_absolute() else rootdir / path

        def place(raw: str | DatabaseURL) -> Path | DatabaseURL:
            # A URL carries the timeouts its connections run under, to whichever store opens it.
            if isinstance(raw, DatabaseURL):
                return dataclasses.replace(raw, timeouts=values["db_timeouts"])
            return absolute(raw)

        history = values["history"]
        return cls(
            rootdir=rootdir,
            traces_dir=absolute(values["traces_dir"]),
            record=values["record"],
            replay_mode=values["replay_mode"],
            cassettes_dir=absolute(values["cassettes_dir"]),
            replay_programs=values["replay_programs"],
            goldens_dir=absolute(values["goldens_dir"]),
            fixtures_dir=absolute(values["fixtures_dir"]),
            collect_cassettes=values["collect_cassettes"],
            update_goldens=values["update_goldens"],
            contract_packages=values["contract_packages"],
            prices=values["prices"],
            history=None if history == "off" else place(history),
            flaky=values["flaky"],
            flaky_budget=values["flaky_budget"],
            quarantine=absolute(values["quarantine"]),
            sha=values["sha"],
            run_id=values["run_id"],
            budget=values["budget"],
            ledger=place(values["ledger"]),
            ledger_unreachable=values["ledger_unreachable"],
            db_timeouts=values["db_timeouts"],
            marathons_dir=absolute(values["marathons_dir"]),
            budget_stops=values["budget_stops"],
            seeds=values["seeds"],
            rerun_seeds=values["rerun_seeds"],
            report=None if values["report"] is None else absolute(values["report"]),
            contract_policy=values["contract_policy"],
            contract_tolerate=values["contract_tolerate"],
            replay_normalize=values["replay_normalize"],
            replay_profile=values["replay_profile"],
            replay_via=values["replay_via"],
            sources=sources,
        )

    @classmethod
    def for_command_line(cls, cli: Mapping[str, Any] | None = None, start: Path | None = None) -> Settings:
        """The settings of the agentevals command: `cli` over the `[tool.agentevals]` table of the
        nearest pyproject.toml at or above `start` (the current directory), whose folder is the
        root that relative paths are resolved against."""
        start = start or Path.cwd()
        pyproject = find_pyproject(start)
        return cls.resolve(
            pyproject.parent if pyproject else start,
            cli=cli,
            pyproject=read_pyproject(pyproject),
            flag_prefix="--",
        )

    def for_marker(self, marker_name: str, kwargs: Mapping[str, Any]) -> Settings:
        """These settings with a marker's setting keywords (`replay_mode=`, `record=`...) applied, below the
        command line. A keyword that is no setting's is an error naming the marker and the keyword: a
        layer checks its own marker arguments (a cassette name...) and passes only these on.
        """
        changes: dict[str, Any] = {}
        sources = dict(self.sources)
        for name, raw in kwargs.items():
            option = MARKER_KWARGS.get(name) or OLD_MARKER_KWARGS.get(name)
            if option is None:
                raise ConfigError(
                    f"@pytest.mark.{marker_name}({name}=...)",
                    "unknown keyword",
                    "setting keywords: " + ", ".join(MARKER_KWARGS),
                )
            value = option.parse(f"@pytest.mark.{marker_name}({name}=...)", raw)
            if self.sources.get(option.key) != "cli":
                changes[option.key] = value
                sources[option.key] = "marker"
        if not changes:
            return self
        return dataclasses.replace(self, sources=sources, **changes)


def _renamed_keys(table: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The pyproject table with its 0.x keys spelled as now, and a warning for each."""
    out = dict(table)
    warnings: list[str] = []
    for old, option in OLD_KEYS.items():
        if old not in out:
            continue
        if option.key in out:
            raise ConfigError(
                f"[tool.agentevals] {old}",
                f"is the 0.x name of {option.key}, which is set too",
                f"keep {option.key} only",
            )
        out[option.key] = out.pop(old)
        warnings.append(renamed(old, option.key, "[tool.agentevals]"))
    return out, tuple(warnings)


def read_pyproject(path: Path | None) -> dict[str, Any]:
    """The `[tool.agentevals]` table of a pyproject.toml, or {} when there is none."""
    if path is None or path.name != "pyproject.toml" or not path.is_file():
        return {}
    import tomllib  # pytest has loaded it already when its own configuration is a pyproject.toml

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"is not valid TOML: {exc}", "fix the file's syntax") from None
    table = data.get("tool", {}).get("agentevals", {})
    if not isinstance(table, dict):
        raise ConfigError(
            f"{path} [tool.agentevals]", "is not a table", "write it as a [tool.agentevals] table"
        )
    return table


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` (what the command line uses)."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None
