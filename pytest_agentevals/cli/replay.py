"""`agentevals replay TRACE [--mode strict|sequential] script.py [args]` (or `-m module [args]`): run a
program with a recorded run's model and tool responses, offline — the counterpart of `record`.

The replay is the engine's `ReplaySession`, as in pytest; the program's words are taken as python
takes them (see `cli/program.py`).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

from ..errors import AgentEvalsError, ReplayDivergence, StaleCassette, UnrecordedRequest
from ..recording import program as programs
from ..recording.factory import recorder_for
from ..replay import MODES, load_cassette
from ..replay.session import ReplaySession
from ..settings import Settings
from . import program as words

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
    words.add_program_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    program = words.program_of(args.program)
    settings = Settings.for_command_line({"replay_mode": args.mode})
    output = Path(args.output) if args.output else None
    if output is not None and output.exists():
        print(
            f"agentevals replay: error: {output} exists; choose another -o or move it away", file=sys.stderr
        )
        return 2
    session = ReplaySession(
        settings,
        name=args.trace,
        agent=program.stem,
        record_hint="record it: pytest --agentevals-record=once, or `agentevals record`; or check the name",
        rerecord=f"agentevals record -o NEW.trace.jsonl {program.command}",
        check_contract=not args.no_contract_check,
    )
    cassette = load_cassette(args.trace, args.from_step)
    # The replayed run's own trace sees the replayed exchanges: its recorder starts first.
    recorder = (
        recorder_for(output, settings, agent=program.stem, task=cassette.task) if output is not None else None
    )
    code = 0
    try:
        if recorder is not None:
            recorder.start()
        try:
            session.start(cassette)
            try:
                code = programs.run(program)
            except BaseException as exc:
                session.finish(exc)
                raise
            session.finish(None)
        finally:
            session.close()
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
    if session.replayer is not None:
        print(session.replayer.report.text(), file=sys.stderr)
    if output is not None:
        print(f"agentevals replay: wrote {output}", file=sys.stderr)
    return code
