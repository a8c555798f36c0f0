"""Stock normalization rules: named, versioned folds of tool output that changes from run to run
without changing what the agent asks (pytest's timings, the kernel in `uname -a`, temporary folders,
process ids, dates), turned on by name in `replay_normalize`:

```toml
[tool.agentevals]
replay_normalize = ["pytest-timing", "uname", "tmp-paths:1"]   # NAME (its newest version) or NAME:VERSION
```

A stock rule is one or more `Rule`s over the whole request (every string of it: the system prompt,
messages, tool results), with patterns narrow enough to leave other text alone; each is reported like
every fold, its source saying `stock rule NAME vVERSION`. A version, once released, never changes what
it folds: a better pattern is a new version, so a suite that pinned one replays the same.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ConfigError

_MONTH = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_PYTEST_OUTCOME = (
    r"(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)|no tests ran)"
)
_SECONDS = r"\d+\.\d+s(?: \(\d+:\d\d:\d\d\))?"
_CLOCK = r"\d\d:\d\d:\d\d"
_ARCH = r"(?:x86_64|aarch64|arm64|i[3-6]86|armv\w+|riscv64|ppc64le|s390x)"


# One fold of a stock rule: the suffix of its name ("" for the rule's own name), its pattern (the first
# group folded, else the whole match) and why the text changes.
Fold = tuple[str, str, str]


def _stock() -> dict[str, dict[int, tuple[Fold, ...]]]:
    return {
        "pytest-timing": {
            1: (
                (
                    "",
                    rf"(?m)^[= ]*{_PYTEST_OUTCOME}\b[^\n]*? in ({_SECONDS}(?: =+)?)[ \t]*$",
                    "the time of pytest's summary line ('3 passed in 0.12s'), with the '=' after it",
                ),
                (
                    # pytest centres its summary line: a longer time takes a '=' from each side
                    "banner",
                    rf"(?m)^(=+ )(?={_PYTEST_OUTCOME}\b[^\n]* in )",
                    "the '=' before pytest's summary line, as many as the time leaves room for",
                ),
                (
                    "durations",
                    r"(?m)^(\d+\.\d+)s (?:call|setup|teardown) ",
                    "the times of pytest --durations",
                ),
            )
        },
        "uname": {
            1: (
                (
                    "",
                    rf"\b(?:Linux|Darwin|FreeBSD) (\S+ \d+\.\d+(?:\.\d+)?\S* .+?) {_ARCH}\b",
                    "host name, kernel release and build of `uname -a`",
                ),
                (
                    "release",
                    r"\b(?:Linux|Darwin) (\d+\.\d+\.\d+(?:-[0-9A-Za-z.+~_-]+)?)(?![\w.])",
                    "a kernel release after the system's name ('OS Version: Linux 6.8.0-1015-aws')",
                ),
            )
        },
        "tmp-paths": {
            1: (
                (
                    "",
                    r"(/tmp/pytest-of-[^/\s]+/pytest-\d+|/tmp/tmp[a-z0-9_]{8}(?![\w.-])"
                    r"|/(?:private/)?var/folders/[\w-]{2}/[\w-]+/T(?=/|\b))",
                    "temporary folders: pytest's tmp_path root, tempfile.mkdtemp()'s, macOS's $TMPDIR",
                ),
            )
        },
        "pids": {
            1: (
                (
                    "",
                    r"\b(?:pid|PID|process id|Process ID)[ =:#]+(\d{1,7})\b",
                    "process ids ('pid 4242', 'PID: 4242')",
                ),
            )
        },
        "dates": {
            1: (
                (
                    "",
                    r"\b(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
                    r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?"
                    r"(?:Z|[+-]\d\d:?\d\d)?)?)(?![\d-])",
                    "ISO dates and times ('2026-12-02', '2026-12-02T19:14:17Z')",
                ),
                (
                    "date",
                    rf"\b({_DAY},? (?:{_MONTH} [ \d]\d|\d\d {_MONTH} \d{{4}}) {_CLOCK}"
                    r"(?: [A-Z]{2,5})?(?: \d{4})?)\b",
                    "date(1)'s and HTTP's forms ('Wed Dec  2 19:14:17 UTC 2026', 'Wed, 02 Dec 2026 … GMT')",
                ),
            )
        },
    }


STOCK: dict[str, dict[int, tuple[Fold, ...]]] = _stock()


def is_stock_reference(raw: object) -> bool:
    """Whether an entry of `replay_normalize` names a stock rule (a string without '@' and '=', or a
    table with `stock`) rather than declaring a rule."""
    if isinstance(raw, str):
        return "@" not in raw and "=" not in raw
    return isinstance(raw, Mapping) and "stock" in raw


def lookup(where: str, raw: object, declare: str = "declare a rule") -> tuple[str, int, tuple[Fold, ...]]:
    """The name, version and folds of a stock reference (`"NAME"`, `"NAME:VERSION"`, or `{stock =
    NAME, version = N}`); ConfigError naming `where` and the stock rules there are otherwise."""
    if isinstance(raw, Mapping):
        unknown = sorted(set(raw) - {"stock", "version"})
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}", "unknown key of a stock rule", "use: stock, version")
        name, version = raw.get("stock"), raw.get("version")
    else:
        text = str(raw).strip()
        name, _, number = text.partition(":")
        version = int(number) if number.isdigit() else (number or None)
    known = ", ".join(sorted(STOCK))
    if not isinstance(name, str) or name not in STOCK:
        raise ConfigError(where, f"{name!r} is no stock rule", f"use one of {known}, or {declare}")
    versions = STOCK[name]
    if version is None:
        version = max(versions)
    if isinstance(version, bool) or not isinstance(version, int) or version not in versions:
        have = ", ".join(str(v) for v in sorted(versions))
        raise ConfigError(where, f"{name} has no version {version!r}", f"use one of its versions: {have}")
    return name, version, versions[version]
