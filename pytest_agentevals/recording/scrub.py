"""Secrets never reach disk: headers that carry credentials are dropped, and every line written is
cleaned of secret-shaped strings and of the values of secret environment variables."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"

# Header names that carry credentials, whichever client sends them: the anthropic SDK 2.x sends the
# key as `Authorization: Bearer`, 1.x as `x-api-key`; proxies and gateways use others.
_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|cookie|token|secret|session|password|signature", re.I)

# Secret-shaped strings wherever they appear (a key pasted into a prompt, an echo in a tool output).
SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9]{2,}-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"sk-(?:proj-)?[A-Za-z0-9_\-]{32,}"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"xox[abpr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
)

_SECRET_ENV = re.compile(r"(_API_KEY$|TOKEN|SECRET|PASSWORD)", re.I)
# Short values (a TOKEN=1 flag) would redact half the trace; they are not secrets worth the damage.
_MIN_SECRET_LENGTH = 8


def is_secret_header(name: str) -> bool:
    return bool(_SECRET_HEADER.search(name))


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of `*_API_KEY`, `*TOKEN*`, `*SECRET*` and `*PASSWORD*` variables, longest first."""
    environ = os.environ if environ is None else environ
    values = {
        value
        for name, value in environ.items()
        if _SECRET_ENV.search(name) and len(value) >= _MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


class Scrubber:
    """Cleans text of secrets. Built once per recording; called on every line written."""

    def __init__(self, extra_values: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        self.values = sorted(
            {*secret_env_values(environ), *(v for v in extra_values if len(v) >= _MIN_SECRET_LENGTH)},
            key=len,
            reverse=True,
        )

    def __call__(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        for pattern in SECRET_PATTERNS:
            text = pattern.sub(REDACTED, text)
        return text
