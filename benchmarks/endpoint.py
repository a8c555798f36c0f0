"""The model endpoint's cost, side by side in one run: a client process talking to the simulated
server directly, and through the endpoint.

- record: a 300-step streamed run (the history grows each step) of a client process (the real
  anthropic SDK) straight to the sim vs through the endpoint recording it: `ratio_to_direct` of the
  client's own loop time (its start-up excluded; aim <= 1.15);
- first byte: time to the first streamed byte of a request, through the endpoint (recording) vs
  direct (the median of many paced requests; aim <= 1.2). Each part in a process of its own, as in
  use: the probing client, the endpoint (here), and the simulated server standing in for the API —
  in one process, the three threads' turns at the GIL were most of what was measured;
- replay: the recorded run replayed to a client process through the endpoint vs the same cassette
  replayed in-process by `Replayer` (`ratio_to_in_process`).

Each way runs `--repeat` times (default 3), alternating, and the fastest is kept: wall time on a
shared machine only ever adds. Prints one JSON line per figure; `--quick` shrinks the run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run
import anthropic

from pytest_agentevals import Recorder, Replayer, model_endpoint
from pytest_agentevals.sim import Reply, SimServer

KEY = "fake-" + "benchmark-key"
MODEL = "claude-sonnet-4-6"
CLIENT = """
import sys, time, anthropic
MODEL = sys.argv[2]
steps = int(sys.argv[1])
client = anthropic.Anthropic(max_retries=0)
messages = [{"role": "user", "content": "Fix the failing test."}]
started = time.perf_counter()
for number in range(steps):
    with client.messages.stream(model=MODEL, max_tokens=200, messages=messages) as stream:
        message = stream.get_final_message()
    messages += [{"role": "assistant", "content": message.content[0].text},
                 {"role": "user", "content": f"Go on ({number + 1})."}]
print(time.perf_counter() - started)
"""


def replies(steps: int) -> list[Reply]:
    return [Reply.text(f"Step {i}: I read the next file and changed one line.") for i in range(steps)]


def client_loop(script: Path, env: dict[str, str], steps: int) -> float:
    """The client process's own loop time, in seconds."""
    done = subprocess.run(
        [sys.executable, str(script), str(steps), MODEL], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the client failed:\n{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def in_process_loop(base_url: str, steps: int) -> float:
    client = anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    started = time.perf_counter()
    for number in range(steps):
        with client.messages.stream(model=MODEL, max_tokens=200, messages=messages) as stream:
            message = stream.get_final_message()
        text = message.content[0].text  # type: ignore[union-attr]
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"Go on ({number + 1})."},
        ]
    return time.perf_counter() - started


PROBE = """
import http.client, json, statistics, sys, time
port, path, requests, model, key = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
body = json.dumps(
    {"model": model, "max_tokens": 50, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
)
headers = {"content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01"}
connection = http.client.HTTPConnection("127.0.0.1", port)
times = []
for _ in range(requests):
    started = time.perf_counter()
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    response.read1(1)
    times.append(time.perf_counter() - started)
    response.read()
    time.sleep(0.005)
print(statistics.median(times))
"""

SIM = """
import sys
from pytest_agentevals.sim import Reply, SimServer
with SimServer([Reply.text("first")] * int(sys.argv[1]), seed=1) as sim:
    print(sim.url, flush=True)
    sys.stdin.read()  # until the benchmark closes it
"""


def first_byte(port: int, path: str, requests: int) -> float:
    """The median seconds from sending a streamed request to reading its first byte, measured by a
    client process of its own. Requests are paced (a few milliseconds apart, as an agent's tool work
    spaces its calls), so each one measures the path a streamed answer takes, not the recording of
    the one before it still being written."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(port), path, str(requests), MODEL, KEY],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 30 steps, one repeat")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    steps, probes = (30, 50) if args.quick else (300, 300)
    repeat = 1 if args.quick and args.repeat == 3 else args.repeat
    case = f"{steps} steps"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        script = root / "client.py"
        script.write_text(CLIENT, encoding="utf-8")
        base = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": KEY}
        direct, through, trace = [], [], root / "run.trace.jsonl"
        for attempt in range(repeat):
            with SimServer(replies(steps), seed=1) as sim:
                direct.append(client_loop(script, {**base, "ANTHROPIC_BASE_URL": sim.url}, steps))
            with SimServer(replies(steps), seed=1) as sim:
                trace.unlink(missing_ok=True)
                with Recorder(trace, http=False), model_endpoint(upstream=sim.url) as endpoint:
                    through.append(client_loop(script, {**endpoint.env, "ANTHROPIC_API_KEY": KEY}, steps))
            done = f"direct {direct[-1]:.2f}s, endpoint {through[-1]:.2f}s"
            print(f"# attempt {attempt + 1}: {done}", file=sys.stderr)
        figures.emit("endpoint", case, "direct_s", min(direct))
        figures.emit("endpoint", case, "record_through_endpoint_s", min(through))
        figures.emit("endpoint", case, "record_ratio_to_direct", min(through) / min(direct), aim=1.15)

        sim = subprocess.Popen(
            [sys.executable, "-c", SIM, str(probes * repeat)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert sim.stdout is not None
            assert sim.stdin is not None
            sim_url = sim.stdout.readline().strip()
            port = int(sim_url.rsplit(":", 1)[1])
            recorder = Recorder(root / "ttfb.trace.jsonl", http=False)
            with recorder, model_endpoint(upstream=sim_url) as endpoint:
                prefix = endpoint.url.split(str(endpoint.port), 1)[1]
                direct_fb, through_fb = [], []
                for _ in range(repeat):
                    direct_fb.append(first_byte(port, "/v1/messages", probes // 2))
                    through_fb.append(first_byte(endpoint.port, prefix + "/v1/messages", probes // 2))
        finally:
            if sim.stdin is not None:
                sim.stdin.close()
            sim.wait(timeout=30)
        figures.emit("endpoint", "first streamed byte", "direct_ms", min(direct_fb) * 1000)
        figures.emit("endpoint", "first streamed byte", "through_endpoint_ms", min(through_fb) * 1000)
        figures.emit(
            "endpoint", "first streamed byte", "ratio_to_direct", min(through_fb) / min(direct_fb), aim=1.2
        )

        endpoint_replay, in_process = [], []
        for _ in range(repeat):
            with Replayer(trace), model_endpoint(upstream="http://127.0.0.1:9") as endpoint:
                endpoint_replay.append(client_loop(script, endpoint.env, steps))
            with Replayer(trace):
                in_process.append(in_process_loop("http://127.0.0.1:9", steps))
        figures.emit("endpoint", case, "replay_through_endpoint_s", min(endpoint_replay))
        figures.emit("endpoint", case, "replay_in_process_s", min(in_process))
        figures.emit("endpoint", case, "replay_ratio_to_in_process", min(endpoint_replay) / min(in_process))


if __name__ == "__main__":
    main()
