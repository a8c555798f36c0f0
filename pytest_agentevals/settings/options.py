"""The OPTIONS table: every option this project reads, declared once.

Every option this project reads is declared once, in `OPTIONS`. The pytest plugin turns the table
into command-line options; the `agentevals` command reads the same `[tool.agentevals]` table. A
value is checked where it enters, and a bad one raises `ConfigError` naming the key and the allowed
values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import AgentEvalsError, ConfigError
from .argv import parse_allowed
from .budgets import KEYS as BUDGET_KEYS
from .budgets import PYPROJECT_TABLE, Budget
from .dburl import DatabaseURL, DbTimeouts, is_database_url
from .layers import BY_NAME, LAYER_NAMES
from .normalize import RULE_FORM, Rule, rules
from .seeds import SELECTION_FORMS, SeedSelection, parse_selection
from .tolerances import tolerances

Source = str  # "cli", "env", "marker", "pyproject" or "default"

RECORD_MODES = ("none", "once", "new", "all")
CONTRACT_POLICIES = ("fail", "warn", "skip")
REPLAY_MODES = ("strict", "sequential")
REPLAY_PROFILES = ("auto", "off")
REPLAY_VIA = ("sdk", "http")
FLAKY_MODES = ("off", "warn", "fail")
LEDGER_UNREACHABLE = ("refuse", "run")
# What a marathon verdict and the history's flakiness do with the seeds and attempts a budget stopped:
# leave them out of the pass rates and verdicts (a stop says the guard worked, not that the agent
# regressed), or count them as failures.
BUDGET_STOP_MODES = ("exclude", "fail")


@dataclass(frozen=True)
class Option:
    """One setting: its key, how a raw value is checked, its default and its command-line form."""

    key: str
    parse: Callable[[str, Any], Any]
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    flag: bool = False  # a command-line switch taking no value
    marker_kwarg: str | None = None  # the marker keyword that may override it per test
    # A table setting's command-line form: (option, texts) -> the table the texts write, laid key by
    # key over the pyproject table. The option may be repeated.
    text: Callable[[str, Sequence[str]], dict[str, Any]] | None = None
    metavar: str | None = None  # how the value is written on the command line, for --help
    # An environment variable read between the command line and [tool.agentevals] (a CI secret):
    # set and not empty, it wins over the table.
    env: str | None = None
    # The key's and the marker keyword's 0.x spellings: still read for one release, each use warned
    # (the naming table, `names.py`, says why they changed).
    old: tuple[str, ...] = ()
    old_marker_kwargs: tuple[str, ...] = ()

    @property
    def cli(self) -> str:
        """Its pytest option."""
        return self.flag_with(PYTEST_PREFIX)

    def flag_with(self, prefix: str) -> str:
        """Its command-line flag under a prefix: `--agentevals-` for pytest, `--` for agentevals."""
        return prefix + self.key.replace("_", "-")


PYTEST_PREFIX = "--agentevals-"


# -- parsers: (key, raw) -> value, raising ConfigError ------------------------------------------


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    def parse(key: str, raw: Any) -> str:
        if not isinstance(raw, str) or raw not in choices:
            raise ConfigError(key, f"{raw!r} is not allowed", "use one of: " + ", ".join(choices))
        return raw

    return parse


def _history(key: str, raw: Any) -> str | DatabaseURL:
    if is_database_url(raw):
        return DatabaseURL.parse(key, raw)
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(key, f"{raw!r} is not a path", "give a file path, a postgresql:// URL, or 'off'")
    return raw


def _ledger(key: str, raw: Any) -> str | DatabaseURL:
    if is_database_url(raw):
        return DatabaseURL.parse(key, raw)
    return _path(key, raw)


def _path(key: str, raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(key, f"{raw!r} is not a path", "give a directory or file path as a string")
    return raw


def _bool(key: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return raw.lower() in ("1", "true", "yes", "on")
    raise ConfigError(key, f"{raw!r} is not a boolean", "use true or false")


def _optional_path(key: str, raw: Any) -> str | None:
    if raw is None:
        return None
    return _path(key, raw)


def _optional_str(key: str, raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ConfigError(key, f"{raw!r} is not a string", "give a string")
    return raw


def _str_list(key: str, raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, list | tuple) or not all(isinstance(item, str) for item in raw):
        raise ConfigError(key, f"{raw!r} is not a list of strings", 'write it as ["a", "b"]')
    return tuple(raw)


def _programs(key: str, raw: Any) -> tuple[str, ...]:
    entries = _str_list(key, raw)
    for entry in entries:
        try:
            parse_allowed(entry)
        except AgentEvalsError as exc:
            raise ConfigError(
                key,
                f"{entry!r} is not a program",
                'write "-m package.module", "path/to/script.py" or a whole command, "node agent.js --task 1"',
            ) from exc
    return entries


def _tolerances(key: str, raw: Any) -> tuple[str, ...]:
    entries = _str_list(key, raw)
    tolerances(key, entries)
    return entries


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- command-line forms of the table settings: texts -> the table the pyproject form would hold ----


def _number(text: str) -> int | float | str:
    """A number written on the command line; anything else stays text, for the parser to refuse."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _pairs(key: str, text: str, example: str) -> dict[str, Any]:
    """`name=value,name=value` as a table of numbers."""
    out: dict[str, Any] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigError(key, f"{part.strip()!r} is not NAME=VALUE", f"write e.g. {example}")
        out[name.strip()] = _number(value.strip())
    return out


def _chunks(texts: Sequence[str]) -> list[str]:
    """The `;`-separated parts of every occurrence of a repeatable option."""
    return [chunk.strip() for text in texts for chunk in text.split(";") if chunk.strip()]


FLAKY_BUDGET_FORM = "step=0.01,replay=0,min_samples=20"


def _flaky_budget_text(key: str, texts: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for chunk in _chunks(texts):
        out.update(_pairs(key, chunk, FLAKY_BUDGET_FORM))
    return out


PRICE_FORM = "claude-sonnet-4:input=3,output=15"


def _prices_text(key: str, texts: Sequence[str]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for chunk in _chunks(texts):
        # The model id is what comes before the last ':' ahead of the first '=' (ids may hold ':').
        colon = chunk.rfind(":", 0, chunk.find("=") if "=" in chunk else len(chunk))
        if colon <= 0:
            raise ConfigError(
                key, f"{chunk!r} names no model", f"write MODEL:input=PRICE,... e.g. {PRICE_FORM}"
            )
        model = chunk[:colon].strip()
        out.setdefault(model, {}).update(_pairs(f"{key} {model}", chunk[colon + 1 :], PRICE_FORM))
    return out


PRICE_FIELDS = ("input", "output", "cache_write", "cache_write_1h", "cache_read")


def _prices(key: str, raw: Any) -> dict[str, dict[str, float]]:
    if not isinstance(raw, Mapping):
        raise ConfigError(key, f"{raw!r} is not a table", "write [tool.agentevals.prices.MODEL] tables")
    out: dict[str, dict[str, float]] = {}
    for model, row in raw.items():
        if not isinstance(row, Mapping):
            raise ConfigError(f"{key}.{model}", f"{row!r} is not a table", "give input/output prices")
        unknown = set(row) - set(PRICE_FIELDS)
        if unknown:
            raise ConfigError(
                f"{key}.{model}.{sorted(unknown)[0]}",
                "unknown price field",
                "use: " + ", ".join(PRICE_FIELDS) + " (USD per million tokens)",
            )
        prices: dict[str, float] = {}
        for name, value in row.items():
            if not _finite(value) or value < 0:
                raise ConfigError(
                    f"{key}.{model}.{name}", f"{value!r} is not a price", "give USD per MTok >= 0"
                )
            prices[name] = float(value)
        if "input" not in prices or "output" not in prices:
            raise ConfigError(f"{key}.{model}", "needs at least input and output", "add both prices")
        out[str(model)] = prices
    return out


BUDGET_EXTRA_KEYS = ("min_samples", "window")


def _flaky_budget(key: str, raw: Any) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise ConfigError(key, f"{raw!r} is not a table", "write a [tool.agentevals.flaky_budget] table")
    out: dict[str, float] = {layer: BY_NAME[layer].default_flaky_budget for layer in LAYER_NAMES}
    out.update({"min_samples": 30.0, "window": 200.0})
    for name, value in raw.items():
        if name not in out:
            raise ConfigError(
                f"{key}.{name}", "unknown key", "use one of: " + ", ".join((*LAYER_NAMES, *BUDGET_EXTRA_KEYS))
            )
        if not _finite(value):
            raise ConfigError(f"{key}.{name}", f"{value!r} is not a number", "give a number")
        if name in LAYER_NAMES and not 0 <= value <= 1:
            raise ConfigError(f"{key}.{name}", f"{value!r} is not a rate", "give a rate between 0 and 1")
        if name in BUDGET_EXTRA_KEYS and (value < 1 or int(value) != value):
            raise ConfigError(f"{key}.{name}", f"{value!r} is not a positive whole number", "give e.g. 30")
        out[name] = float(value)
    return out


DB_TIMEOUTS_FORM = "connect=10,lock=10,statement=30,idle_in_transaction=60"


def _db_timeouts_text(key: str, texts: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for chunk in _chunks(texts):
        out.update(_pairs(key, chunk, DB_TIMEOUTS_FORM))
    return out


def _db_timeouts(key: str, raw: Any) -> DbTimeouts:
    return DbTimeouts.parse(key, raw)


def _rules(key: str, raw: Any) -> tuple[Rule, ...]:
    return rules(key, raw)


def _seed_selection(key: str, raw: Any) -> SeedSelection:
    return parse_selection(key, raw)


def _budget(key: str, raw: Any) -> Budget:
    return Budget.parse(key if key.startswith("--") else PYPROJECT_TABLE, raw)


# The parsers of the options whose value is a path (a file, a folder, or a URL in its place).
PATH_PARSERS: tuple[Callable[[str, Any], Any], ...] = (_path, _optional_path, _history, _ledger)

OPTIONS: tuple[Option, ...] = (
    Option(
        "traces_dir",
        _path,
        ".agentevals/traces",
        "where the recorder fixture writes one trace per test",
        old=("trace_dir",),
    ),
    Option(
        "record",
        _choice(RECORD_MODES),
        "none",
        "record mode for cassettes: none replays only, once records a missing cassette, new adds "
        "unrecorded requests, all re-records everything",
        choices=RECORD_MODES,
        marker_kwarg="record",
    ),
    Option(
        "replay_mode",
        _choice(REPLAY_MODES),
        "strict",
        "strict fails at the first request that differs from the recording; sequential serves the "
        "recorded responses in order and reports divergences",
        choices=REPLAY_MODES,
        marker_kwarg="replay_mode",
        old_marker_kwargs=("mode",),
    ),
    Option(
        "replay_normalize",
        _rules,
        (),
        "volatile request content a replay folds before comparing requests: rules of name, where (JSON "
        "pointers, '*' for any key or index, or field names) and pattern (a regular expression; its "
        "first group is folded), as [[tool.agentevals.replay_normalize]] tables or, on the command "
        f"line, one rule as {RULE_FORM}; or a stock rule by name (pytest-timing, uname, tmp-paths, pids, "
        "dates; NAME:VERSION pins one); every fold is listed in the replay report",
        metavar="NAME@WHERE=PATTERN",
    ),
    Option(
        "replay_profile",
        _choice(REPLAY_PROFILES),
        "auto",
        "auto folds what the recording client's built-in profile declares volatile (the Claude Code "
        "CLI's: date, working directory, kernel, memory folder, billing digest), listed in the report; "
        "off compares such recordings byte-strict too. SDK traffic has no profile: always strict",
        choices=REPLAY_PROFILES,
    ),
    Option(
        "replay_via",
        _choice(REPLAY_VIA),
        "sdk",
        "where a replay answers the anthropic SDK: sdk at its request method (no request is built or "
        "serialized; anything that is not provably the recorded request goes on to the HTTP path, "
        "which decides), http at its HTTP transport only, as before. Same report and messages",
        choices=REPLAY_VIA,
    ),
    Option(
        "cassettes_dir",
        _path,
        "cassettes",
        "directory of recorded runs replayed by the replay layer",
        old=("cassette_dir",),
    ),
    Option(
        "replay_programs",
        _programs,
        (),
        "programs a trace recorded by `agentevals record` may be replayed against when no "
        'pytest_agentevals_run_agent hook takes its task, e.g. "-m examples.taskrunner" or "agent.py", '
        'or a command by its whole command line, "node agent.js --task 12" (comma-separated on the '
        "CLI); a trace never chooses the code it runs",
    ),
    Option("goldens_dir", _path, "goldens", "directory of golden step cases collected by the step layer"),
    Option("fixtures_dir", _path, "fixtures", "directory of checkpoint fixtures booted by the resume layer"),
    Option(
        "collect_cassettes",
        _bool,
        True,
        "collect every cassettes/*.trace.jsonl without a test of its own as a replay test",
    ),
    Option(
        "update_goldens",
        _bool,
        False,
        "re-bless golden expectations from the current decisions and print the diff",
        flag=True,
    ),
    Option(
        "contract_packages",
        _str_list,
        ("anthropic",),
        "packages whose versions belong to a trace's environment contract (comma-separated on the CLI)",
    ),
    Option(
        "prices",
        _prices,
        {},
        "price overrides in USD per million tokens, by model id prefix; on the command line one model "
        f"per value, e.g. {PRICE_FORM} (fields: {', '.join(PRICE_FIELDS)}), the option repeated or "
        "the models ';'-separated, laid over [tool.agentevals.prices] model by model",
        text=_prices_text,
        metavar="MODEL:FIELD=USD,...",
    ),
    Option(
        "history",
        _history,
        ".agentevals/history.sqlite",
        "the test-outcome history: an SQLite file, a postgresql:// URL shared by every CI job "
        "(also from $AGENTEVALS_HISTORY), or 'off'",
        env="AGENTEVALS_HISTORY",
        metavar="PATH|URL",
    ),
    Option(
        "flaky",
        _choice(FLAKY_MODES),
        "warn",
        "what a breached flakiness budget does: off, warn, or fail the session",
        choices=FLAKY_MODES,
    ),
    Option(
        "flaky_budget",
        _flaky_budget,
        None,
        "per-layer flakiness budgets (a rate from 0 to 1), min_samples and window; on the command line "
        f"e.g. {FLAKY_BUDGET_FORM}, laid over [tool.agentevals.flaky_budget] key by key "
        "(repeatable)",
        text=_flaky_budget_text,
        metavar="KEY=VALUE,...",
    ),
    Option(
        "quarantine",
        _path,
        "agentevals-quarantine.yaml",
        "the checked-in quarantine file (owner, reason and expiry per test)",
    ),
    Option(
        "sha", _optional_str, None, "the commit sha to file test outcomes under (default: from CI or git)"
    ),
    Option("run_id", _optional_str, None, "the CI run id to file test outcomes under (default: from CI)"),
    Option(
        "budget",
        _budget,
        None,
        "run budgets the guards enforce, KEY=VALUE[,KEY=VALUE] over [tool.agentevals.budget]; keys: "
        + ", ".join(BUDGET_KEYS),
    ),
    Option(
        "ledger",
        _ledger,
        ".agentevals/ledger.json",
        "the daily cost ledger shared by every run that uses it (max_daily_cost_usd): a JSON file, or "
        "a postgresql:// URL shared across machines (also from $AGENTEVALS_LEDGER)",
        env="AGENTEVALS_LEDGER",
        metavar="PATH|URL",
    ),
    Option(
        "ledger_unreachable",
        _choice(LEDGER_UNREACHABLE),
        "refuse",
        "what a run under max_daily_cost_usd does when its ledger database cannot be reached: refuse "
        "to start (fail closed), or run without the day's budget, saying so",
        choices=LEDGER_UNREACHABLE,
    ),
    Option(
        "db_timeouts",
        _db_timeouts,
        DbTimeouts(),
        "how long a PostgreSQL history or day ledger waits, in seconds, before it gives up naming the "
        "server and the timeout: connect (whole seconds, 2 at least; a connect_timeout in the URL wins), "
        "lock (held by another session), statement (one statement, and a server that stops answering), "
        f"idle_in_transaction; e.g. {DB_TIMEOUTS_FORM} (the defaults), laid over "
        "[tool.agentevals.db_timeouts] key by key",
        text=_db_timeouts_text,
        metavar="KEY=SECONDS,...",
    ),
    Option(
        "marathons_dir",
        _path,
        ".agentevals/marathons",
        "where marathon tests keep each seed's trace (<test>/seed-<n>.trace.jsonl) and the results file "
        "(results.jsonl)",
        old=("marathon_dir",),
    ),
    Option(
        "budget_stops",
        _choice(BUDGET_STOP_MODES),
        "exclude",
        "what marathon verdicts and the flakiness history do with the seeds and test attempts a budget "
        "stopped (budget_exhausted): leave them out of the pass rates and flaky verdicts, counted and "
        "shown apart, or count them as failures",
        choices=BUDGET_STOP_MODES,
    ),
    Option(
        "seeds",
        _seed_selection,
        None,
        f"run only these seeds of each marathon test (a CI job's share): {SELECTION_FORMS}",
        metavar="SEEDS",
    ),
    Option(
        "rerun_seeds",
        _bool,
        False,
        "run marathon seeds again that already have a result at this commit (by default a rerun of the "
        "same command continues with the seeds still missing)",
        flag=True,
    ),
    Option(
        "report",
        _optional_path,
        None,
        "write the HTML run report of the traces this session recorded to this file when it ends",
    ),
    Option(
        "contract_policy",
        _choice(CONTRACT_POLICIES),
        "fail",
        "what a resumed checkpoint whose environment contract drifted does: fail before anything runs, "
        "warn and go on, or skip the check",
        choices=CONTRACT_POLICIES,
        marker_kwarg="contract_policy",
        old_marker_kwargs=("contract",),
    ),
    Option(
        "contract_tolerate",
        _tolerances,
        (),
        'contract keys whose drift is tolerated: "KEY" (globs allowed) or "KEY:patch" / "KEY:minor" / '
        '"KEY:major" for versions, e.g. "python:patch" (comma-separated on the CLI)',
        marker_kwarg="contract_tolerate",
        old_marker_kwargs=("tolerate",),
    ),
)

BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}
MARKER_KWARGS: dict[str, Option] = {o.marker_kwarg: o for o in OPTIONS if o.marker_kwarg}
# The 0.x spellings, to their option: a pyproject key, a marker keyword.
OLD_KEYS: dict[str, Option] = {old: option for option in OPTIONS for old in option.old}
OLD_MARKER_KWARGS: dict[str, Option] = {old: o for o in OPTIONS for old in o.old_marker_kwargs}


def marker_keyword_now(name: str, among: Sequence[str]) -> str | None:
    """The name now of a setting keyword's 0.x spelling `name`, when it is one of `among`."""
    option = OLD_MARKER_KWARGS.get(name)
    return option.marker_kwarg if option is not None and option.marker_kwarg in among else None


def renamed(old: str, new: str, where: str) -> str:
    """The warning for a 0.x spelling still used."""
    return f"{where}: {old} is the 0.x name of {new}; write {new} (the old name goes in the next release)"


def _from_command_line(option: Option, raw: Any, pyproject: Mapping[str, Any], prefix: str) -> Any:
    """A command-line value, checked and named by its flag. A table setting's command-line text is
    laid over its pyproject table (each checked, and named, on its own first)."""
    flag = option.flag_with(prefix)
    if option.text is None or isinstance(raw, Mapping):
        return option.parse(flag, raw)
    table = option.text(flag, [raw] if isinstance(raw, str) else list(raw))
    merged: dict[str, Any] = {}
    if option.key in pyproject:
        option.parse(f"[tool.agentevals] {option.key}", pyproject[option.key])
        merged.update(pyproject[option.key])
    for name, value in table.items():
        under = merged.get(name)
        if isinstance(under, Mapping) and isinstance(value, Mapping):
            value = {**under, **value}  # a model's prices: field by field
        merged[name] = value
    return option.parse(flag, merged)


def _default(option: Option) -> Any:
    if option.key == "flaky_budget":
        return _flaky_budget(option.key, {})
    if option.key == "budget":
        return Budget()
    return option.default
