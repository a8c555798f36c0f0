"""Step-layer overhead: 1,000 golden step cases through the plugin against 1,000 plain pytest tests
doing the same work, side by side.

Both sides make, per case, one `messages.create` with the anthropic SDK on a frozen conversation and
check the tool call it returns (tool name, a regex on a path, an argument present):
- plugin: goldens/*.yaml collected as step cases; `agentevals_decide` calls the SDK, and the plugin
  answers from goldens/*.decisions.trace.jsonl (at the SDK's request method, the request proven to be
  the recorded one; vcrpy's patching stands behind it for anything else) and checks the expectation;
- plain: parametrized tests over the same cases in JSON, the SDK on an httpx MockTransport that
  returns the same recorded response, and three asserts; pytest without this plugin.

Each side runs as its own pytest process (after an untimed warm-up that also proves all 1,000 pass);
the figures are the ratios of the median wall times, for collection alone (`--collect-only`) and for
the whole run. The plugin side runs with the history off (`--agentevals-history=off`): this measures
the step layer, not the flakiness store. Run from the repository root:

    python benchmarks/step.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_agentevals.step.store import write_store
from pytest_agentevals.step.yamlio import dump_yaml

CASES = 1000
FILES = 10  # a scenario a file, as a project would have them
MODEL = "claude-sonnet-4-6"
SYSTEM = "You are a careful coding agent. Use one tool per reply."
TOOLS = [
    {
        "name": name,
        "description": f"{name.replace('_', ' ')} in the workspace",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    for name in ("read_file", "write_file", "run_check")
]
URL = "http://127.0.0.1:9/v1/messages"  # nothing listens: every answer is a recorded one

DECIDE = f"""
import anthropic, pytest

@pytest.fixture(scope="session")
def agentevals_decide():
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="bench", max_retries=0)
    def decide(case):
        return client.messages.create(model={MODEL!r}, max_tokens=512, system={SYSTEM!r}, tools={TOOLS!r},
                                      messages=case.messages)
    return decide
"""

PLAIN = f"""
import json, pathlib, re
import anthropic, httpx2, pytest

CASES = json.loads((pathlib.Path(__file__).parent / "{{name}}.json").read_text())
SERVED = {{}}

def serve(request):
    return httpx2.Response(200, json=SERVED["response"])

CLIENT = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="bench", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(serve)))

@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_step(case):
    SERVED["response"] = case["response"]
    message = CLIENT.messages.create(model={MODEL!r}, max_tokens=512, system={SYSTEM!r}, tools={TOOLS!r},
                                     messages=case["messages"])
    call = next(block for block in message.content if block.type == "tool_use")
    assert call.name == "write_file"
    assert re.search(r"^src/mod_\\d+\\.py$", call.input["path"])
    assert "content" in call.input
"""


def conversation(index: int) -> list[dict[str, Any]]:
    path = f"src/mod_{index}.py"
    return [
        {"role": "user", "content": f"Task {index}: the test for {path} fails; fix {path}."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"tu_{index}a", "name": "read_file", "input": {"path": path}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"tu_{index}a", "content": "def f():\n    return 1\n"}
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"tu_{index}b", "name": "run_check", "input": {"path": path}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"tu_{index}b", "content": "1 failed: expected 2"}
            ],
        },
    ]


def response(index: int) -> dict[str, Any]:
    return {
        "id": f"msg_{index:05d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [
            {"type": "text", "text": "Fixing it."},
            {
                "type": "tool_use",
                "id": f"tu_{index}c",
                "name": "write_file",
                "input": {"path": f"src/mod_{index}.py", "content": "def f():\n    return 2\n"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 420, "output_tokens": 38},
    }


def generate(root: Path) -> tuple[Path, Path]:
    goldens, plain = root / "goldens", root / "plain"
    goldens.mkdir()
    plain.mkdir()
    (goldens / "conftest.py").write_text(DECIDE)
    (root / "pyproject.toml").write_text('[tool.agentevals]\ngoldens_dir = "goldens"\n')
    per_file = CASES // FILES
    for number in range(FILES):
        name = f"scenario_{number:02d}"
        indexes = range(number * per_file, (number + 1) * per_file)
        cases = [
            {
                "id": f"step-{index}-tool-choice",
                "kind": "tool_choice",
                "context": {"request": {"messages": conversation(index)}},
                "expect": {
                    "tool": "write_file",
                    "args": {"path": {"$regex": r"^src/mod_\d+\.py$"}, "content": "$any"},
                },
            }
            for index in indexes
        ]
        (goldens / f"{name}.yaml").write_text(dump_yaml({"scenario": name, "cases": cases}))
        body = {"max_tokens": 512, "messages": None, "model": MODEL, "system": SYSTEM, "tools": TOOLS}
        recorded = {
            f"step-{index}-tool-choice": [
                {
                    "provider": "anthropic",
                    "model": MODEL,
                    "request": {
                        "method": "POST",
                        "url": URL,
                        "body": {**body, "messages": conversation(index)},
                    },
                    "response": {
                        "status": 200,
                        "headers": {"content-type": "application/json"},
                        "json": response(index),
                    },
                }
            ]
            for index in indexes
        }
        write_store(goldens / f"{name}.decisions.trace.jsonl", recorded, list(recorded), name)
        data = [{"id": f"step-{i}", "messages": conversation(i), "response": response(i)} for i in indexes]
        (plain / f"{name}.json").write_text(json.dumps(data))
        (plain / f"test_{name}.py").write_text(PLAIN.replace("{name}", name))
    return goldens, plain


def pytest_seconds(root: Path, args: list[str], expect: str) -> float:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    done = subprocess.run(
        # Without langsmith's plugin on both sides, as this repository's own options run: the test
        # extra's langchain brings it, and its second of start-up would dilute the ratio measured.
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if expect not in done.stdout:
        raise SystemExit(
            f"pytest {' '.join(args)} did not report {expect!r}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    return elapsed


emit = partial(figures.emit, "step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeats = 1 if args.quick else 5
    with tempfile.TemporaryDirectory(prefix="agentevals-step-bench-") as folder:
        root = Path(folder)
        generate(root)
        plugin = ["goldens", "-m", "step", "--agentevals-history=off"]
        plain = ["plain", "-p", "no:agentevals"]
        ran = f"{CASES} passed"
        collected = f"{CASES} tests collected"
        # Warm-up: byte-compiles both sides' imports, and proves every case passes on both.
        pytest_seconds(root, plugin, ran)
        pytest_seconds(root, plain, ran)
        times: dict[str, list[float]] = {
            "plugin-collect": [],
            "plain-collect": [],
            "plugin-run": [],
            "plain-run": [],
        }
        for _ in range(repeats):
            # Alternate, so drift in the machine's load falls on both sides alike.
            times["plugin-collect"].append(pytest_seconds(root, [*plugin, "--collect-only"], collected))
            times["plain-collect"].append(pytest_seconds(root, [*plain, "--collect-only"], collected))
            times["plugin-run"].append(pytest_seconds(root, plugin, ran))
            times["plain-run"].append(pytest_seconds(root, plain, ran))
        median = {key: statistics.median(values) for key, values in times.items()}
        emit("collect", "overhead_ratio", median["plugin-collect"] / median["plain-collect"])
        emit("run", "overhead_ratio", median["plugin-run"] / median["plain-run"])
        for key, value in median.items():
            emit(key, "seconds", value)


if __name__ == "__main__":
    main()
