"""`python -m examples`: the main job — the example agent through the pyramid, offline, no API key.

Each stage is the command a user would type, printed before it runs:
1. record a 300-step streamed run of the example agent against the simulated model,
2. summarize its trace, and draw it: the run report (one self-contained HTML page),
3. the step layer: the example's golden decisions, replayed offline (the every-commit gate),
4. the replay layer: the example's recorded runs, an incident among them, re-executed offline with
   the network blocked (the every-merge gate),
5. the resume layer: the example's checkpoint fixtures verified (hashes, format, contract), then
   booted, each running its next leg against the simulated model (the daily gate),
6. every cassette, golden and fixture scanned for secrets,
7. the marathon layer, last: five seeded end-to-end runs under a budget and a watchdog, a crash and a
   stall among them, and the verdict table over the seeds with n and 95% intervals (the nightly gate).
It stops at the first stage that fails and exits with its code.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

OUT = Path(".agentevals/example")
TRACE = OUT / "taskrunner.trace.jsonl"
REPORT = OUT / "report.html"


def stages() -> list[list[str]]:
    agentevals = [sys.executable, "-m", "pytest_agentevals"]
    return [
        [
            *agentevals,
            "record",
            "-o",
            str(TRACE),
            "--agent",
            "taskrunner",
            "-m",
            "examples.taskrunner",
            "--tasks",
            "130",
            "--seed",
            "1",
            "--stream",
            "--sim",
        ],
        [*agentevals, "show", str(TRACE)],
        [*agentevals, "report", str(TRACE), "-o", str(REPORT)],
        [sys.executable, "-m", "pytest", "goldens", "-m", "step", "-q"],
        [sys.executable, "-m", "pytest", "cassettes", "-m", "replay", "-q"],
        [*agentevals, "resume", "verify"],
        [sys.executable, "-m", "pytest", "fixtures", "-m", "resume", "-q"],
        [*agentevals, "scan", "cassettes", "goldens", "fixtures"],
        [sys.executable, "-m", "pytest", "marathons", "-m", "marathon", "-q", "--agentevals-rerun-seeds"],
    ]


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for earlier in (TRACE, REPORT):
        earlier.unlink(missing_ok=True)  # this job's own output from an earlier run
    for command in stages():
        shown = [{"pytest_agentevals": "agentevals"}.get(part, part) for part in command[2:]]
        print(f"\n$ {shlex.join(shown)}", flush=True)
        code = subprocess.call(command)
        if code != 0:
            print(f"examples: the stage above failed with exit code {code}", file=sys.stderr)
            return code
    print(f"\nexamples: the pyramid ran offline; the recorded run is {TRACE}")
    print(f"examples: its report: {REPORT.resolve()} (open it in a browser)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
