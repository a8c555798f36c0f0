"""`agentevals replay TRACE [--mode strict|sequential] script.py [args]` (or `-m module`): run a
program with a recorded run's model and tool responses, offline, the counterpart of `record`."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, ReplayDivergence, StaleCassette, UnrecordedRequest
from ..recording.recorder import Recorder
from ..recording.replay import MODES, Replayer
from ..settings import Settings
from . import program as program_runner

# A run that diverged (or met a request it cannot answer) exits 1, like a failing test.
DIVERGED = 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="run a program against a recorded run's responses: offline, no key, loud on divergence",
        description="Run script.py [args] or -m module [args] with the model and @tool responses of "
        "TRACE. The network is blocked except loopback. strict (default) stops at the first request "
        "that differs from the recording with a diff; sequential serves the recorded responses in "
        "order and reports the differences.",
    )
    parser.add_argument("trace", help="a .trace.jsonl trace, or a vcrpy/pytest-recording .yaml cassette")
    parser.add_argument(
        "--mode", choices=MODES, help="strict or sequential (default: [tool.agentevals] replay_mode)"
    )
    parser.add_argument(
        "--from-step", type=int, metavar="N", help="start after the last checkpoint at or before step N"
    )
    parser.add_argument("-o", "--output", metavar="OUT", help="also record the replayed run into this trace")
    parser.add_argument(
        "--no-contract-check", action="store_true", help="replay even if the cassette looks stale"
    )
    program_runner.add_program_arguments(parser)
    parser.set_defaults(func=main)


_VALUED = {"--mode": "mode", "--from-step": "from_step", "-o": "output", "--output": "output", "-m": "module"}


def _options_after_trace(args: argparse.Namespace) -> None:
    """`agentevals replay TRACE --mode sequential script.py`: options between the trace and the
    program are ours (argparse hands everything after TRACE to the program)."""
    rest = list(args.program)
    while rest:
        head, _, inline = rest[0].partition("=")
        if head == "--no-contract-check":
            args.no_contract_check = True
            rest.pop(0)
        elif head in _VALUED and (inline or len(rest) > 1):
            value = inline if inline else rest[1]
            del rest[: 1 if inline else 2]
            if head == "--mode" and value not in MODES:
                raise AgentEvalsError(f"--mode {value!r}: use one of {', '.join(MODES)}")
            if head == "-m":  # as python's -m: the module and everything after it are the program's
                args.module, rest = [value, *rest], []
                break
            if head == "--from-step":
                if not value.isdigit():
                    raise AgentEvalsError(f"--from-step {value!r}: give a step number")
                setattr(args, _VALUED[head], int(value))
            else:
                setattr(args, _VALUED[head], value)
        else:
            break
    args.program = rest


def main(args: argparse.Namespace) -> int:
    _options_after_trace(args)
    program = program_runner.program_of(args)
    settings = Settings.for_command_line()
    mode = args.mode or settings.replay_mode
    output = Path(args.output) if args.output else None
    if output is not None and output.exists():
        print(
            f"agentevals replay: error: {output} exists; choose another -o or move it away", file=sys.stderr
        )
        return 2
    replayer = Replayer(
        args.trace,
        mode=mode,
        from_step=args.from_step,
        packages=settings.contract_packages,
        check_contract=not args.no_contract_check,
        rerecord=f"agentevals record -o NEW.trace.jsonl {program.label} {' '.join(program.args)}".rstrip(),
    )
    recorder = Recorder(output, agent=program.stem, task=replayer.cassette.task) if output else None
    code = 0
    try:
        if recorder is not None:
            recorder.start()
        try:
            with replayer:
                code = program_runner.run(program)
        finally:
            if recorder is not None:
                recorder.stop(status="ok" if code == 0 else "failed")
    except (ReplayDivergence, UnrecordedRequest, StaleCassette) as exc:
        print(f"agentevals replay: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = DIVERGED
    except AgentEvalsError:
        raise
    except KeyboardInterrupt:
        code = 130
    except Exception:
        traceback.print_exc()
        code = 1
    print(replayer.report.text(), file=sys.stderr)
    if output is not None:
        print(f"agentevals replay: wrote {output}", file=sys.stderr)
    return code
