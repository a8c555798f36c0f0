"""`agentevals import atif TRAJECTORY.json`: an ATIF trajectory (the Agent Trajectory Interchange
Format of Harbor and Terminal-Bench, RFC 0001, v1.x) as a `content` trace.

Read per the RFC: the root's `schema_version` ("ATIF-v1.4"), `session_id`, `agent` (`name`,
`version`, `model_name`) and `steps`; each step's `step_id` (1, 2, ... in order), `source` (`system`:
the system prompt; `user`: a user message; `agent`: one model turn), `message`, `model_name`,
`tool_calls` (`tool_call_id`, `function_name`, `arguments`), `observation.results`
(`source_call_id`, `content`) and `metrics` (`prompt_tokens` including `cached_tokens`,
`completion_tokens`, `cost_usd`; `extra.cache_creation_input_tokens`).

Each agent step is one model call: its request the system prompt and the conversation before it,
its answer the step's message and tool calls; each tool call, with the observation result naming it,
one tool call. The tier is `content`: ATIF keeps no tool definitions and no exact request.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..trace.fidelity import CONTENT, Fidelity
from .build import Call, ImportedRun, ToolRun
from .limits import SourceFormatError, count, json_document

SOURCE = "atif"
WHAT = 'an ATIF trajectory (a JSON object with schema_version "ATIF-v1.x", session_id, agent, steps)'
SOURCES = ("system", "user", "agent")


def read(path: Path) -> ImportedRun:
    root = json_document(path, WHAT)
    fail = _Fail(path)
    if not isinstance(root, Mapping):
        raise fail("", "the file is not a JSON object")
    version = root.get("schema_version")
    if not isinstance(version, str) or not version.startswith("ATIF-v1."):
        raise fail("schema_version", f'is {version!r}, not an ATIF v1 version ("ATIF-v1.4")')
    session = root.get("session_id")
    agent = root.get("agent")
    steps = root.get("steps")
    if not isinstance(session, str):
        raise fail("session_id", "must be a string")
    if not isinstance(agent, Mapping) or not isinstance(agent.get("name"), str):
        raise fail("agent.name", "must be a string")
    if not isinstance(steps, list):
        raise fail("steps", "must be an array of steps")
    default_model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    system: list[dict[str, Any]] = []
    conversation: list[dict[str, Any]] = []
    calls: list[Call] = []
    for index, step in enumerate(steps):
        count(path, 0, index + 1, "steps")
        where = f"steps[{index}]"
        if not isinstance(step, Mapping):
            raise fail(where, "must be an object")
        if step.get("step_id") != index + 1 or isinstance(step.get("step_id"), bool):
            raise fail(
                f"{where}.step_id", f"is {step.get('step_id')!r}; steps are numbered 1, 2, ... in order"
            )
        source = step.get("source")
        if source not in SOURCES:
            raise fail(f"{where}.source", f"is {source!r}, not one of {', '.join(SOURCES)}")
        message = step.get("message", "")
        if not isinstance(message, str):
            raise fail(f"{where}.message", "must be a string")
        if source == "system":
            if message:
                system.append({"type": "text", "text": message})
            continue
        if source == "user":
            if message:
                _append(conversation, "user", [{"type": "text", "text": message}])
            continue
        calls.append(_agent_step(step, where, fail, system, conversation, default_model))
    missing = ["the exact request bytes and headers", "tools"]
    if not system:
        missing.append("system")
    return ImportedRun(
        source=SOURCE,
        path=path,
        fidelity=Fidelity(CONTENT, SOURCE, tuple(missing)),
        calls=calls,
        agent=f"{agent['name']} {agent.get('version', '')}".strip(),
        run_id=session,
        task={"prompt": _first_user(conversation)} if _first_user(conversation) else None,
    )


def _agent_step(
    step: Mapping[str, Any],
    where: str,
    fail: _Fail,
    system: list[dict[str, Any]],
    conversation: list[dict[str, Any]],
    default_model: str | None,
) -> Call:
    model = step.get("model_name") if isinstance(step.get("model_name"), str) else default_model
    blocks: list[dict[str, Any]] = []
    if step.get("message"):
        blocks.append({"type": "text", "text": step["message"]})
    tools: list[ToolRun] = []
    raw_calls = step.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise fail(f"{where}.tool_calls", "must be an array")
    for number, tool_call in enumerate(raw_calls):
        at = f"{where}.tool_calls[{number}]"
        if not isinstance(tool_call, Mapping):
            raise fail(at, "must be an object")
        for key in ("tool_call_id", "function_name"):
            if not isinstance(tool_call.get(key), str):
                raise fail(f"{at}.{key}", "must be a string")
        arguments = tool_call.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise fail(f"{at}.arguments", "must be an object")
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_call["tool_call_id"],
                "name": tool_call["function_name"],
                "input": dict(arguments),
            }
        )
        tools.append(
            ToolRun(name=tool_call["function_name"], input=dict(arguments), id=tool_call["tool_call_id"])
        )
    results = _results(step.get("observation"), where, fail)
    by_id = {tool.id: tool for tool in tools}
    answered: list[dict[str, Any]] = []
    for source_id, content in results:
        tool = by_id.get(source_id) if source_id is not None else None
        if tool is not None:
            tool.output = content
            answered.append({"type": "tool_result", "tool_use_id": source_id, "content": content})
        elif content:
            answered.append({"type": "text", "text": content})  # feedback of an action without a tool call
    usage, cost = _metrics(step.get("metrics"), where, fail)
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m, content=list(m["content"])) for m in conversation],
    }
    if system:
        body["system"] = list(system)
    reply = {
        "id": f"msg_atif_{step['step_id']}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if tools else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    _append(conversation, "assistant", blocks or [{"type": "text", "text": ""}])
    if answered:
        _append(conversation, "user", answered)
    return Call(body=body, message=reply, model=model, usage=usage, tools=tools, cost_usd=cost)


def _results(observation: Any, where: str, fail: _Fail) -> list[tuple[str | None, str]]:
    if observation is None:
        return []
    if not isinstance(observation, Mapping) or not isinstance(observation.get("results"), list):
        raise fail(f"{where}.observation.results", "must be an array of results")
    out = []
    for number, result in enumerate(observation["results"]):
        if not isinstance(result, Mapping):
            raise fail(f"{where}.observation.results[{number}]", "must be an object")
        source_id = result.get("source_call_id")
        content = result.get("content", "")
        out.append(
            (source_id if isinstance(source_id, str) else None, content if isinstance(content, str) else "")
        )
    return out


def _metrics(metrics: Any, where: str, fail: _Fail) -> tuple[dict[str, int], float | None]:
    if metrics is None:
        return {}, None
    if not isinstance(metrics, Mapping):
        raise fail(f"{where}.metrics", "must be an object")

    def number(key: str, source: Mapping[str, Any] = metrics) -> int:
        value = source.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail(f"{where}.metrics.{key}", "must be a whole number of tokens")
        return value

    prompt, cached, completion = number("prompt_tokens"), number("cached_tokens"), number("completion_tokens")
    usage = {
        "input_tokens": max(0, prompt - cached),  # ATIF's prompt tokens include the cached ones
        "cache_read_input_tokens": cached,
        "output_tokens": completion,
    }
    extra = metrics.get("extra")
    if isinstance(extra, Mapping) and "cache_creation_input_tokens" in extra:
        usage["cache_creation_input_tokens"] = number("cache_creation_input_tokens", extra)
    cost = metrics.get("cost_usd")
    return usage, float(cost) if isinstance(cost, int | float) and not isinstance(
        cost, bool
    ) and cost >= 0 else None


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add blocks to the conversation without changing a message an earlier request holds (requests
    share their history's message objects, as the writer's deltas do)."""
    if messages and messages[-1]["role"] == role:
        messages[-1] = {"role": role, "content": [*messages[-1]["content"], *blocks]}
    else:
        messages.append({"role": role, "content": list(blocks)})


def _first_user(conversation: list[dict[str, Any]]) -> str:
    for message in conversation:
        if message["role"] == "user":
            return "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")
    return ""


class _Fail:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, key: str, problem: str) -> SourceFormatError:
        return SourceFormatError(self.path, 0, f"{key} {problem}".strip() if key else problem, f"give {WHAT}")
