"""A server database named by a URL (`postgresql://user:password@host:port/db`), never printed whole.

The history and the day ledger may live in PostgreSQL instead of a file. Their setting then holds a
`DatabaseURL`, whose `str()` is the URL with its password (and any `password=` parameter) replaced
by `***`: every message, repr and report shows that form, so a CI secret never reaches a log. It
also carries the `DbTimeouts` every connection to it runs under (the `db_timeouts` setting).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import unquote

from ..errors import ConfigError

SCHEMES = ("postgresql://", "postgres://")
# What a host list (`host`, `host:port`, `[::1]:5432`, `h1:5432,h2`) may hold: how the credentials'
# '@' is told from an '@' inside a password written without percent-encoding.
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[],%")


def is_database_url(raw: object) -> bool:
    return isinstance(raw, str) and raw.strip().lower().startswith(SCHEMES)


@dataclass(frozen=True)
class _Parts:
    """A PostgreSQL URL cut where libpq cuts it (never by a pattern): `scheme://credentials@hosts/rest`."""

    scheme: str  # "postgresql://"
    credentials: str | None  # "user:password" as written, or None
    hosts: str
    rest: str  # "/dbname?params", as written

    @classmethod
    def of(cls, url: str) -> _Parts | None:
        """None when `url` is not a postgresql:// URL."""
        if not is_database_url(url):
            return None
        scheme_end = url.index("://") + 3
        body = url[scheme_end:]
        # The credentials end at the last '@' that a host list follows (up to '/', '?' or the end): a
        # password holding '@', '/', ':' or '?' written raw stays hidden whole (see `ambiguous`).
        ats = [i for i, char in enumerate(body) if char == "@" and _host_list_follows(body, i + 1)]
        at = ats[-1] if ats else -1
        if at < 0:
            credentials, after = None, body
        else:
            credentials, after = body[:at], body[at + 1 :]
        cut = next((i for i, char in enumerate(after) if char in "/?"), len(after))
        return cls(url[:scheme_end], credentials, after[:cut], after[cut:])

    @property
    def user(self) -> str | None:
        return None if self.credentials is None else self.credentials.partition(":")[0]

    @property
    def password(self) -> str | None:
        """The password as written (percent-encoded or not), from the credentials or `?password=`."""
        if self.credentials is not None and ":" in self.credentials:
            return self.credentials.partition(":")[2]
        for name, value in _params(self.rest):
            if name == "password":
                return value
        return None

    def redacted(self) -> str:
        if self.ambiguous() is not None:  # which part is the password is unclear: show none of it
            return self.scheme + "***"
        shown = self.scheme
        if self.credentials is not None:
            user, colon, _ = self.credentials.partition(":")
            shown += f"{user}:***@" if colon else f"{user}@"
        path, question, query = self.rest.partition("?")
        shown += self.hosts + path
        if question:
            pairs = query.split("&")
            shown += "?" + "&".join(
                f"{pair.partition('=')[0]}=***" if name == "password" else pair
                for pair, (name, _) in zip(pairs, (_param(pair) for pair in pairs), strict=True)
            )
        return shown

    def ambiguous(self) -> str | None:
        """Why libpq would cut this URL otherwise than `of` does, or None. libpq ends the credentials at
        the first '@' before the first '/', so an '@' or '/' written raw in a password (or an '@' in a
        parameter's value) moves the cut: then the URL is refused, since a message would quote a piece."""
        body = (
            self.hosts + self.rest
            if self.credentials is None
            else f"{self.credentials}@{self.hosts}{self.rest}"
        )
        slash, at = body.find("/"), body.find("@")
        libpq = body[:at] if at >= 0 and (slash < 0 or at < slash) else None
        if libpq == self.credentials:
            return None
        return (
            "an '@' or '/' in its user, password or a parameter's value is written unencoded, so libpq "
            "would read the URL otherwise than it looks (write '@' as %40 and '/' as %2F)"
        )


def _host_list_follows(body: str, start: int) -> bool:
    end = next((i for i in range(start, len(body)) if body[i] in "/?"), len(body))
    return end > start and all(char in _HOST_CHARS for char in body[start:end])


def _param(pair: str) -> tuple[str, str]:
    name, _, value = pair.partition("=")
    return unquote(name).strip().lower(), value


def _params(rest: str) -> list[tuple[str, str]]:
    _, question, query = rest.partition("?")
    return [_param(pair) for pair in query.split("&")] if question else []


def redact(url: str) -> str:
    """The URL with its password replaced by `***` (in the credentials and in a `password=` parameter).
    Text that is not a postgresql:// URL is shown as `***` whole: it cannot be told apart safely."""
    parts = _Parts.of(url)
    return parts.redacted() if parts is not None else "***"


def secrets_of(url: str) -> list[str]:
    """Every form of the URL's password a message may quote: as written and percent-decoded, the
    longest first; [] when it has none."""
    parts = _Parts.of(url)
    password = parts.password if parts is not None else None
    if not password:
        return []
    return sorted({password, unquote(password)}, key=len, reverse=True)


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

    def __str__(self) -> str:
        return ",".join(f"{name}={getattr(self, name):g}" for name in self.KEYS)

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
        parts = _Parts.of(text)
        if parts is None:
            raise ConfigError(key, "is not a postgresql:// URL", _FORM)
        problem = parts.ambiguous()
        if problem is not None:
            raise ConfigError(key, f"{redact(text)!r}: {problem}", _ENCODE)
        for host in parts.hosts.split(","):
            port = host.rpartition("]")[2].partition(":")[2]  # after an IPv6 address's brackets
            if port and not port.isdigit():
                problem = f"port {port!r} is not a number"
                raise ConfigError(key, f"{redact(text)!r} is not a valid database URL ({problem})", _FORM)
        if not parts.hosts and not any(name == "host" for name, _ in _params(parts.rest)):
            raise ConfigError(key, f"{redact(text)!r} names no server", _FORM)
        return cls(text)

    def ambiguous(self) -> str | None:
        """Why libpq would read this URL's user or password otherwise than written, or None."""
        parts = _Parts.of(self.url)
        return None if parts is None else parts.ambiguous()


_FORM = "write postgresql://USER:PASSWORD@HOST:PORT/DATABASE (docs/history.md, 'URL forms')"
_ENCODE = (
    "the user or password holds a character libpq takes for the end of it; percent-encode it in the "
    "URL (python -c 'import urllib.parse, getpass; print(urllib.parse.quote(getpass.getpass(), safe=\"\"))')"
)
