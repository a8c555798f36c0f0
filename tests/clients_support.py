"""Real clients nobody here wrote, for the tests that drive them: the Claude Code CLI and a Node agent on
@anthropic-ai/sdk (examples/node_agent), installed from the npm registry at the versions
tests/clients/package-lock.json pins (`npm ci --prefix tests/clients`; .ci/run does it).

A test needing a client SKIPS with the reason on a machine without it and FAILS when `CI` is set, as
the browser tests do. `AGENTEVALS_CLIENTS_DIR` names another folder holding that node_modules.

`scripted_model` is the simulated model both clients meet: a policy that answers from the request
alone (so one server, started once per session, serves every test, in any order, on any worker).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_agentevals.replay.profiles import CLAUDE_CODE
from pytest_agentevals.sim import Reply, SimRequest

from .conftest import REPO, make_fake_key

CLIENTS_DIR = Path(os.environ.get("AGENTEVALS_CLIENTS_DIR") or REPO / "tests" / "clients")
NODE_MODULES = CLIENTS_DIR / "node_modules"
NODE_AGENT = REPO / "examples" / "node_agent" / "agent.mjs"
INSTALL = "npm ci --prefix tests/clients (.ci/run does it)"

# What the scripted model writes, so a test can tell it was the CLI's own Write tool that ran.
WRITTEN = "written by the scripted model\n"


def _missing(what: str) -> None:
    reason = f"{what}: {INSTALL}"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set and there is no {reason}")
    pytest.skip(f"no {reason}")


@functools.cache
def _claude_binary() -> tuple[Path, str] | None:
    """The CLI and its version. The package's postinstall links the native binary over bin/claude.exe;
    an npm that skipped install scripts leaves a stub there, so the platform package is tried next."""
    candidates = [
        NODE_MODULES / ".bin" / "claude",
        *sorted(NODE_MODULES.glob("@anthropic-ai/claude-code-*/claude")),
    ]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            done = subprocess.run(
                [str(candidate), "--version"], capture_output=True, text=True, timeout=60, env=_bare_env()
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        found = re.match(r"(\d+\.\d+\.\d+)", done.stdout.strip())
        if done.returncode == 0 and found:
            return candidate, found.group(1)
    return None


def claude() -> tuple[Path, str]:
    """(path, version) of the Claude Code CLI, or skip (fail under CI)."""
    found = _claude_binary()
    if found is None:
        _missing(f"Claude Code CLI under {NODE_MODULES}")
    assert found is not None
    return found


def node_agent() -> list[str]:
    """The command running examples/node_agent/agent.mjs, or skip (fail under CI)."""
    node = shutil.which("node")
    if node is None:
        _missing("node on PATH (apt-get install nodejs)")
    if not (NODE_MODULES / "@anthropic-ai" / "sdk" / "package.json").is_file():
        _missing(f"@anthropic-ai/sdk under {NODE_MODULES}")
    assert node is not None
    return [node, str(NODE_AGENT)]


def _bare_env() -> dict[str, str]:
    """The parent's environment without anything that would point a client at a real model or
    account: no inherited key, base URL, token or Claude Code setting."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OTEL_"))
        and "TOKEN" not in name
        and not name.endswith("_API_KEY")
    }


def client_env(base_url: str, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a client run: the model at `base_url`, a fake key, a HOME of its own (the
    CLI keeps sessions and settings there), the SDK found by node, no side traffic, and the settings
    the Claude Code profile pins (the same in a recording and in its replay)."""
    home.mkdir(parents=True, exist_ok=True)
    env = _bare_env()
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=make_fake_key("client"),
        NODE_PATH=str(NODE_MODULES),
    )
    # Telemetry, update checks, error reports: nothing leaves the machine; tool search and memory off.
    env.update(CLAUDE_CODE.env)
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"


def run(command: list[str], cwd: Path, env: Mapping[str, str], timeout: float = 120) -> Ran:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def claude_command(prompt: str) -> list[str]:
    """`claude -p PROMPT` as CI can run it: as root `--dangerously-skip-permissions` is refused, so the
    one tool the script uses is allowed by name and every other permission is left at its default
    (print mode denies what it would have asked about); with the flags the Claude Code profile pins
    (no settings files, no MCP servers but the ones given)."""
    path, _ = claude()
    return [str(path), "-p", prompt, "--allowedTools", "Write", *CLAUDE_CODE.flags]


def agentevals(*args: str | Path, cwd: Path, env: Mapping[str, str], timeout: float = 300) -> Ran:
    """The agentevals command in a subprocess with exactly `env` (a client's environment)."""
    return run([sys.executable, "-m", "pytest_agentevals", *map(str, args)], cwd, env, timeout)


# -- the scripted model ----------------------------------------------------------------------------

WRITE_ASK = re.compile(r"\bwrite (\S+)")


def scripted_model(request: SimRequest) -> Reply:
    """Both clients' model, decided by the request alone (deterministic whatever the order).

    - a request whose last message carries tool results: the agent ran what was asked, so finish
      (the Node agent is walked through list, read, write first);
    - the Claude Code CLI (its Write tool is offered) asked to "write NAME": Write NAME, relative to
      its working directory, so a replay in another folder writes in that folder;
    - the Node agent (list_files offered): list the files first.
    """
    names = {tool.get("name") for tool in request.tools}
    results = request.tool_results
    if "list_files" in names:
        return _node_step(request)
    if results:
        return Reply.text(f"Done: {len(results)} tool result(s) seen.")
    asked = WRITE_ASK.search(_first_user_text(request))
    if "Write" in names and asked:
        return Reply.tool_use("Write", {"file_path": asked.group(1), "content": WRITTEN})
    return Reply.text("Nothing to do.")


def _first_user_text(request: SimRequest) -> str:
    for message in request.messages:
        if message.get("role") == "user":
            return "\n".join(
                block.get("text", "")
                for block in request.blocks(message)
                if block.get("type") == "text" and not block.get("text", "").startswith("<system-reminder>")
            )
    return ""


def _node_step(request: SimRequest) -> Reply:
    done = sum(1 for message in request.messages if message.get("role") == "assistant")
    if done == 0:
        return Reply.tool_use("list_files", {})
    if done == 1:
        return Reply.tool_use("read_file", {"path": "notes.txt"})
    if done == 2:
        notes = request.tool_results[0].get("content", "") if request.tool_results else ""
        return Reply.tool_use("write_file", {"path": "summary.txt", "content": str(notes).upper()})
    return Reply.text("Summary written to summary.txt.")


def agent_sdk() -> Any:
    """The Claude Agent SDK (the `agent-sdk` extra: its wheel bundles the same CLI), or skip (fail
    under CI)."""
    try:
        import claude_agent_sdk
    except ImportError:
        _missing("claude-agent-sdk: pip install -e '.[agent-sdk]'; or")
    return claude_agent_sdk


def query_once(prompt: str, cwd: Path, env: Mapping[str, str]) -> list[Any]:
    """The Claude Agent SDK's `query()` run to its end: every message it yielded."""
    import anyio

    sdk = agent_sdk()
    options = sdk.ClaudeAgentOptions(
        cwd=str(cwd),
        allowed_tools=["Write"],
        env=dict(env),
        setting_sources=[],
        extra_args={"strict-mcp-config": None},
    )

    async def collect() -> list[Any]:
        return [message async for message in sdk.query(prompt=prompt, options=options)]

    return anyio.run(collect)


def need(name: str) -> ModuleType:
    """The client module `name`, installed by the `clients` extra: skip without it, fail under CI."""
    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"{name} is not installed: pip install -e '.[clients]' (.ci/run does it)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {reason}")
        pytest.skip(reason)
