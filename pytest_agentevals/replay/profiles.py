"""Built-in normalization profiles, keyed by client and version: what a known client writes into every
request that changes from run to run without changing what it asks, and the settings a recording
through the profile pins so the client asks the same thing wherever it runs.

The one profile so far is the Claude Code CLI's (`claude -p`, and the Claude Agent SDK, which drives
the same CLI). Its rules were read off captured requests of claude-cli 2.1.332: today's date, the
working directory (repeated in tool inputs and results), the kernel's version, the memory folder
under HOME, and the billing header's digest. Session ids travel in the `X-Claude-Code-Session-Id`
header (headers play no part in matching) and in `metadata.user_id` (the canonical form leaves
`metadata` out for every client; the report lists that too).

A recording names its client by the request's User-Agent (`claude-cli/2.1.332 (external, sdk-cli)`),
which the trace keeps; a version no profile covers is replayed byte-strict, and the report says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..settings.normalize import Rule

# Bounded like the rules below (a crafted User-Agent of 5,000 digits would also exceed int()'s limit).
_USER_AGENT = re.compile(r"claude-cli/(\d{1,6})\.(\d{1,6})\.(\d{1,6})")
_BILLING = re.compile(r"x-anthropic-billing-header: cc_version=(\d{1,6})\.(\d{1,6})\.(\d{1,6})")


@dataclass(frozen=True)
class Client:
    """A client named by a recording: `name` ("claude-code") and its version as numbers."""

    name: str
    version: tuple[int, int, int]
    seen_as: str  # what named it: the User-Agent, or the billing header

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


@dataclass(frozen=True)
class Pin:
    """A setting a recording through the profile pins: an environment variable (`kind` "env") the
    endpoint sets for the child, or a command-line flag (`kind` "flag") the command should carry."""

    kind: str
    name: str
    value: str | None
    why: str


@dataclass(frozen=True)
class Profile:
    name: str
    client: str
    versions: tuple[tuple[int, int, int], tuple[int, int, int]]  # [from, to)
    rules: tuple[Rule, ...]
    pins: tuple[Pin, ...]

    def covers(self, client: Client) -> bool:
        return client.name == self.client and self.versions[0] <= client.version < self.versions[1]

    @property
    def env(self) -> dict[str, str]:
        """The environment variables the profile pins, for a child process."""
        return {pin.name: pin.value or "" for pin in self.pins if pin.kind == "env"}

    @property
    def flags(self) -> list[str]:
        """The command-line flags the profile pins, as arguments."""
        out: list[str] = []
        for pin in self.pins:
            if pin.kind == "flag":
                out += [pin.name] if pin.value is None else [pin.name, pin.value]
        return out


# Where Claude Code writes its environment block: the system prompt's blocks and, since 2.1.3xx, a
# mid-conversation system message (a string or text blocks).
_TEXTS = ("/system/*/text", "/messages/*/content", "/messages/*/content/*/text")
_SOURCE = "claude-code profile"


def _rule(
    name: str, pattern: str, why: str, where: tuple[str, ...] = _TEXTS, everywhere: bool = False
) -> Rule:
    return Rule(name, where, pattern, everywhere, why, _SOURCE)


# Every pattern is anchored on the literal text that names its value and every repeat is bounded (a
# path by PATH_MAX, a version part by 6 digits), so a pattern run over an untrusted cassette's text
# does linear work and never folds more than its bound (tests/replay/test_profile_patterns.py).
CLAUDE_CODE_RULES = (
    _rule(
        "billing-header",
        r"^x-anthropic-billing-header: cc_version=\d{1,6}\.\d{1,6}\.\d{1,6}\.([0-9a-z]{1,64});",
        "the billing header's digest, taken from the prompt (which is compared anyway)",
        ("/system/*/text",),
    ),
    _rule(
        "memory-dir",
        r"memory at `([^`\n]{1,4096})`",
        "the CLI's memory folder under HOME, named after the working directory",
    ),
    _rule(
        "cwd",
        r" - Primary working directory: ([^\n]{1,4096})",
        "the folder the CLI ran in, folded wherever it recurs (tool inputs and results)",
        everywhere=True,
    ),
    _rule("date", r"Today's date is (\d{4}-\d{2}-\d{2})", "the day the run was recorded"),
    _rule("os-version", r" - OS Version: ([^\n]{1,256})", "the recording machine's kernel"),
)

CLAUDE_CODE_PINS = (
    Pin(
        "env",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "1",
        "no telemetry, error reports, update checks or feature-flag fetches: only model calls leave "
        "the CLI (a `claude -p` run then looks up no host at all)",
    ),
    Pin("env", "DISABLE_AUTOUPDATER", "1", "no self-update mid-run (implied by the one above; stated)"),
    Pin(
        "env",
        "ENABLE_TOOL_SEARCH",
        "false",
        "the CLI defers tool schemas (ToolSearch) or not depending on the base URL's host: pinned off, "
        "every tool is sent in full, the same through the endpoint as against the API",
    ),
    Pin(
        "env",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
        "1",
        "no memory from an earlier run enters the prompt, and the memory folder leaves it",
    ),
    Pin(
        "flag",
        "--setting-sources",
        "",
        "no user, project or local settings.json changes the agent (the Claude Agent SDK's default)",
    ),
    Pin(
        "flag", "--strict-mcp-config", None, "only MCP servers given with --mcp-config, none from the user's"
    ),
)

CLAUDE_CODE = Profile(
    "claude-code", "claude-code", ((2, 0, 0), (3, 0, 0)), CLAUDE_CODE_RULES, CLAUDE_CODE_PINS
)
PROFILES = (CLAUDE_CODE,)


def client_of(headers: Mapping[str, Any] | None, body: Any) -> Client | None:
    """The known client that sent a request: by its User-Agent, else by the billing header Claude Code
    puts first in its system prompt. None for any other client (the SDKs: strict)."""
    for name, value in (headers or {}).items():
        if str(name).lower() == "user-agent" and isinstance(value, str):
            found = _USER_AGENT.search(value)
            if found:
                return Client("claude-code", _numbers(found), value)
    system = body.get("system") if isinstance(body, Mapping) else None
    if isinstance(system, list) and system and isinstance(system[0], Mapping):
        found = _BILLING.match(str(system[0].get("text", "")))
        if found:
            return Client("claude-code", _numbers(found), found.group(0))
    return None


def _numbers(found: re.Match[str]) -> tuple[int, int, int]:
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def recorded_client(requests: Iterable[Mapping[str, Any]]) -> Client | None:
    """The client of the first recorded request that names one (requests as the trace stores them)."""
    for request in requests:
        client = client_of(request.get("headers"), request.get("body"))
        if client is not None:
            return client
    return None


def profile_for(client: Client | None) -> Profile | None:
    if client is None:
        return None
    return next((profile for profile in PROFILES if profile.covers(client)), None)


def pins_table(profile: Profile) -> str:
    """The pins as the docs and the trace state them: one line each."""
    lines = []
    for pin in profile.pins:
        shown = (
            pin.name
            if pin.value is None
            else f"{pin.name}={pin.value!r}"
            if pin.kind == "flag"
            else f"{pin.name}={pin.value}"
        )
        lines.append(f"  {pin.kind:4} {shown}: {pin.why}")
    return "\n".join(lines)
