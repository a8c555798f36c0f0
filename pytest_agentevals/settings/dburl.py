"""A server database named by a URL (`postgresql://user:password@host:port/db`), never printed whole.

The history and the day ledger may live in PostgreSQL instead of a file. Their setting then holds a
`DatabaseURL`, whose `str()` is the URL with its password (and any `password=` parameter) replaced
by `***`: every message, repr and report shows that form, so a CI secret never reaches a log. It
also carries the `DbTimeouts` every connection to it runs under (the `db_timeouts` setting).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ..errors import ConfigError

SCHEMES = ("postgresql://", "postgres://")
_QUERY_PASSWORD = re.compile(r"(?i)(password=)[^&]*")


def is_database_url(raw: object) -> bool:
    return isinstance(raw, str) and raw.strip().lower().startswith(SCHEMES)


def redact(url: str) -> str:
    """The URL with its password replaced by `***` (in the user part and in a `password=` parameter)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _QUERY_PASSWORD.sub(r"\1***", url)
    authority, slash, tail = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if at and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    masked = f"{scheme}://{userinfo}{at}{hosts}{slash}{tail}"
    return _QUERY_PASSWORD.sub(r"\1***", masked)


@dataclass(frozen=True)
class DbTimeouts:
    """How long a PostgreSQL store waits, in seconds, before it gives up with one error naming the server
    and the timeout: to connect (libpq's `connect_timeout`: whole seconds, 2 at least), for a lock another
    session holds (`lock_timeout`), for one statement to finish (`statement_timeout`, and on the client:
    a server that stops answering is given up a second after it), and for a transaction left idle
    (`idle_in_transaction_session_timeout`)."""

    connect: int = 10
    lock: float = 10.0
    statement: float = 30.0
    idle_in_transaction: float = 60.0

    KEYS: ClassVar[tuple[str, ...]] = ("connect", "lock", "statement", "idle_in_transaction")

    @classmethod
    def parse(cls, key: str, raw: Any) -> DbTimeouts:
        """A `[tool.agentevals.db_timeouts]` table (any of KEYS, in seconds) over the defaults."""
        if isinstance(raw, DbTimeouts):
            return raw
        if not isinstance(raw, Mapping):
            raise ConfigError(key, f"{raw!r} is not a table", _TIMEOUTS_FORM)
        values: dict[str, Any] = {}
        for name, value in raw.items():
            if name not in cls.KEYS:
                raise ConfigError(f"{key}.{name}", "unknown key", "use one of: " + ", ".join(cls.KEYS))
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{key}.{name}", f"{value!r} is not a number of seconds", _TIMEOUTS_FORM)
            if name == "connect" and (int(value) != value or value < 2):
                raise ConfigError(
                    f"{key}.{name}", f"{value!r} is not a whole number of seconds from 2", "give e.g. 10"
                )
            values[name] = int(value) if name == "connect" else float(value)
        return cls(**values)

    def server_settings(self) -> dict[str, str]:
        """The session settings that hold the server to these timeouts (milliseconds)."""
        return {
            "lock_timeout": f"{round(self.lock * 1000)}ms",
            "statement_timeout": f"{round(self.statement * 1000)}ms",
            "idle_in_transaction_session_timeout": f"{round(self.idle_in_transaction * 1000)}ms",
        }


_TIMEOUTS_FORM = "give seconds > 0, e.g. [tool.agentevals.db_timeouts] connect = 10, statement = 30"


@dataclass(frozen=True)
class DatabaseURL:
    """A PostgreSQL URL. `url` is the real one (for the driver only); `str()` and `repr()` redact it.
    `timeouts` are the ones its connections run under (not part of its identity)."""

    url: str = field(repr=False)
    timeouts: DbTimeouts = field(default_factory=DbTimeouts, compare=False, repr=False)

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"DatabaseURL({redact(self.url)!r})"

    @classmethod
    def parse(cls, key: str, raw: str) -> DatabaseURL:
        """Check the URL's shape (the driver checks the rest when it connects): a bad one is a
        ConfigError naming the key, its password redacted."""
        text = raw.strip()
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError as exc:
            raise ConfigError(key, f"{redact(text)!r} is not a valid database URL ({exc})", _FORM) from None
        if not parts.hostname and "host=" not in parts.query:
            raise ConfigError(key, f"{redact(text)!r} names no server", _FORM)
        return cls(text)


_FORM = "write postgresql://USER:PASSWORD@HOST:PORT/DATABASE (docs/history.md, 'URL forms')"
