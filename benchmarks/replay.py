"""Replay speed, side by side in one process: our replay, plain vcrpy matching on the body, and the floor.

The same tool-use loop (the history grows by two messages a step) runs through the real anthropic
SDK four ways:
- ours: a recorded trace replayed by `Replayer` (strict, the default), trace loading included,
  answered at the SDK's request method (`replay_via="sdk"`, the default);
- ours_http: the same replay answered at the SDK's HTTP transport only (`replay_via="http"`);
- vcrpy: the same run in a vcrpy YAML cassette, replayed with `match_on` including `body` (at 100
  steps only: every look-up scans and re-parses every recorded body, so it is cubic);
- floor: the SDK answering from an in-memory `httpx2.MockTransport` with the same canned responses.

Prints one JSON line per figure: seconds per way and size, `ratio_to_floor` (and
`http_ratio_to_floor`) at 100, 300 and 1,000 steps, `speedup_vs_vcrpy` at 100 steps, and the
on-disk size of the 1,000-step recording in both formats. `--quick` shrinks the sizes (for a smoke
run; its figures are not the ones to report).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run
import anthropic
import httpx2
import vcr

from pytest_agentevals.recording.recorder import Recorder
from pytest_agentevals.replay import Replayer

MODEL = "sim-bench-1"
SYSTEM = "You are a careful coding agent. Read the files you need, one at a time."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
VCR_MATCH_ON = ["method", "scheme", "host", "port", "path", "query", "body"]


def canned(steps: int) -> list[bytes]:
    """The model's answers: a tool call per step."""
    answers = []
    for i in range(steps):
        message = {
            "id": f"msg_{i:06d}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [
                {"type": "text", "text": f"Step {i}: reading the next module."},
                {
                    "type": "tool_use",
                    "id": f"toolu_{i:06d}",
                    "name": "read_file",
                    "input": {"path": f"src/m{i}.py"},
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 100 + 40 * i, "output_tokens": 24},
        }
        answers.append(json.dumps(message).encode())
    return answers


def read_file(path: str) -> str:
    return f"def f():\n    return {path!r}\n"


def mock_client(answers: list[bytes]) -> anthropic.Anthropic:
    position = iter(range(len(answers)))

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "application/json"}, content=answers[next(position)]
        )

    return anthropic.Anthropic(
        api_key="bench-" + "not-a-key",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def loop(client: anthropic.Anthropic, steps: int) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every module of the repository."}]
    for _ in range(steps):
        message = client.messages.create(
            model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=messages
        )
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
        )
        use = next(b for b in message.content if b.type == "tool_use")
        result = read_file(use.input["path"])  # type: ignore[union-attr]
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": result}]}
        )


def plain_client() -> anthropic.Anthropic:
    # Replays never reach this address: the patched transport answers first.
    return anthropic.Anthropic(api_key="bench-" + "not-a-key", base_url="http://127.0.0.1:9", max_retries=0)


def timed(
    run: Callable[[anthropic.Anthropic], None], make_client: Callable[[], anthropic.Anthropic], repeat: int
) -> float:
    """The best of `repeat` runs, in CPU seconds of this process (so other load on a shared machine
    does not skew a ratio); the client is built outside the clock, as a test builds it once."""
    best = float("inf")
    for _ in range(repeat):
        client = make_client()
        started = time.process_time()
        run(client)
        best = min(best, time.process_time() - started)
    return best


figure = partial(figures.emit, "replay")


def bench(steps: int, folder: Path, repeat: int, with_vcrpy: bool, with_sizes: bool) -> None:
    case = f"{steps} steps"
    answers = canned(steps)
    trace = folder / f"loop-{steps}.trace.jsonl"
    with Recorder(trace, agent="bench"):
        loop(mock_client(answers), steps)
    cassette = folder / f"loop-{steps}.yaml"
    if with_vcrpy or with_sizes:
        # Record without body matching, or recording alone would be quadratic in vcrpy's look-ups.
        with vcr.use_cassette(str(cassette), record_mode="all", match_on=["method", "path"]):
            loop(mock_client(answers), steps)

    def ours(client: anthropic.Anthropic, via: str = "sdk") -> None:
        with Replayer(trace, via=via):  # loading the trace is part of the replay
            loop(client, steps)

    def floor(client: anthropic.Anthropic) -> None:
        loop(client, steps)

    floor_s = timed(floor, lambda: mock_client(answers), repeat)
    ours_s = timed(ours, plain_client, repeat)
    http_s = timed(partial(ours, via="http"), plain_client, repeat)
    figure(case, "floor_seconds", floor_s)
    figure(case, "ours_seconds", ours_s)
    figure(case, "ours_http_seconds", http_s)
    figure(case, "ratio_to_floor", ours_s / floor_s)
    figure(case, "http_ratio_to_floor", http_s / floor_s)
    if with_vcrpy:

        def plain_vcrpy(client: anthropic.Anthropic) -> None:
            with vcr.use_cassette(str(cassette), record_mode="none", match_on=VCR_MATCH_ON):
                loop(client, steps)

        vcrpy_s = timed(plain_vcrpy, plain_client, 1)
        figure(case, "vcrpy_seconds", vcrpy_s)
        figure(case, "speedup_vs_vcrpy", vcrpy_s / ours_s)
    if with_sizes:
        ours_bytes, vcrpy_bytes = trace.stat().st_size, cassette.stat().st_size
        figure(case, "trace_bytes", ours_bytes)
        figure(case, "vcrpy_yaml_bytes", vcrpy_bytes)
        figure(case, "size_ratio_vcrpy_to_ours", vcrpy_bytes / ours_bytes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)
    small, middle, large = (20, 50, 100) if args.quick else (100, 300, 1000)
    with tempfile.TemporaryDirectory(prefix="agentevals-bench-") as folder:
        bench(small, Path(folder), repeat=5, with_vcrpy=True, with_sizes=False)
        bench(middle, Path(folder), repeat=3, with_vcrpy=False, with_sizes=False)
        bench(large, Path(folder), repeat=2 if not args.quick else 3, with_vcrpy=False, with_sizes=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
