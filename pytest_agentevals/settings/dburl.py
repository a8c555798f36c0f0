"""A server database named by a URL (`postgresql://user:password@host:port/db`), never printed whole.

The history and the day ledger may live in PostgreSQL instead of a file. Their setting then holds a
`DatabaseURL`, whose `str()` is the URL with its password (and any `password=` parameter) replaced
by `***`: every message, repr and report shows that form, so a CI secret never reaches a log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
class DatabaseURL:
    """A PostgreSQL URL. `url` is the real one (for the driver only); `str()` and `repr()` redact it."""

    url: str = field(repr=False)

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
