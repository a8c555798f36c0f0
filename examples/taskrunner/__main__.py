"""`python -m examples.taskrunner [--tasks N] [--seed S] [--stream] [--workspace DIR] [--stall-at N]`.

Runs against the simulated model unless ANTHROPIC_API_KEY is set (or --sim forces it), and prints
one line: status, steps, tokens, restarts, tasks done, compactions, watchdog firings and time.
Exits 0 when every task was verified, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import run
from .harness import HarnessConfig


def main(argv: list[str] | None = None) -> int:
    defaults = HarnessConfig()
    parser = argparse.ArgumentParser(
        prog="python -m examples.taskrunner", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tasks", type=int, default=10, help="how many tasks (about 2.4 model steps each)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the task list and the simulated model")
    parser.add_argument("--stream", action="store_true", help="stream model responses")
    parser.add_argument("--workspace", help="the scratch directory (default: a temporary one)")
    parser.add_argument(
        "--stall-at", type=int, help="the simulated model loops on one read_file from this step"
    )
    parser.add_argument("--budget", type=int, help="the token budget")
    parser.add_argument(
        "--compact-at", type=int, default=defaults.compact_at, help="the compaction mark, in tokens"
    )
    parser.add_argument("--model", default=defaults.model, help="the model, for the real API")
    parser.add_argument(
        "--sim", action="store_true", help="use the simulated model even if ANTHROPIC_API_KEY is set"
    )
    args = parser.parse_args(argv)
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    live = bool(os.environ.get("ANTHROPIC_API_KEY")) and not args.sim
    result = run(
        args.tasks,
        seed=args.seed,
        workspace=args.workspace,
        stream=args.stream,
        stall_at=args.stall_at,
        live=live,
        token_budget=args.budget,
        compact_at=args.compact_at,
        model=args.model,
    )
    print(("live " if live else "sim ") + result.line())
    return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
