"""Import speed and export size: a 1,000-step Claude Code session and a 1,000-span OTLP file
imported, each against reading the trace of the same run; and each file's size against the trace's.

The session is written in the CLI's own format (as claude-cli 2.1.332 writes it: a user prompt, then
per step an assistant entry with a Bash tool use and a user entry with its result, each a few hundred
bytes of text). `agentevals import claude-code` makes it a trace. For the span file, a 500-step
session is imported and `agentevals export otlp` makes its trace 1,002 spans (the agent's, 501 chat
spans with content, 500 tool spans). Then, alternately in this one process, CPU time of:

- read: `read_trace(trace)`, every event parsed and its request resolved (the floor);
- import: `import_file(source, file, out)`, the file read, the run built and written as a trace;
- parse: the file's JSON parsed, and the JSON strings the conventions nest in attributes.

Prints one JSON line per figure: `ratio_to_read` for each import (medians; the aim is at most 2),
`ratio_to_parse` (the import over the parse: what any reader of the file must do at least) and
`size_ratio` (each file's bytes over the trace's). A chat span holds its call's whole input history
(the conventions have no delta), so an OTLP file grows with the square of the steps where a trace
grows with the steps, and its import with it.
Run from the repository root:

    python benchmarks/imports.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_agentevals import read_trace
from pytest_agentevals.imports import export_otlp, import_file

STEPS = 1_000
emit = partial(figures.emit, "imports")


def write_session(path: Path, steps: int) -> None:
    common = {"cwd": "/home/dev/project", "sessionId": "bench", "version": "2.1.332", "isSidechain": False}

    def entry(role: str, content: object, **message: object) -> dict[str, object]:
        return {"type": role, **common, "message": {"role": role, "content": content, **message}}

    def answer(number: str, content: list[object], stop: str, usage: dict[str, int]) -> dict[str, object]:
        return entry("assistant", content, id=f"msg_{number}", type="message", model="claude-x",
                     stop_reason=stop, usage=usage)  # fmt: skip

    lines = [entry("user", "tidy the logs folder")]
    for step in range(steps):
        command = {"command": f"ls -la logs/part-{step}", "description": "list one part"}
        use = {"type": "tool_use", "id": f"toolu_{step:05d}", "name": "Bash", "input": command}
        text = {"type": "text", "text": f"Looking at part {step} next."}
        lines.append(
            answer(f"{step:05d}", [text, use], "tool_use", {"input_tokens": 40 + step, "output_tokens": 30})
        )
        listing = "\n".join(f"-rw-r--r-- 1 dev dev {1000 + i} Jan 1 app-{step}-{i}.log" for i in range(6))
        lines.append(entry("user", [{"type": "tool_result", "tool_use_id": use["id"], "content": listing}]))
    lines.append(answer("end", [{"type": "text", "text": "Done."}], "end_turn", {}))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def parse_only(path: Path) -> None:
    """What any reader of the file must do at least: parse its JSON, and the JSON strings the
    conventions nest in attributes (messages, arguments)."""
    text = path.read_text()
    documents = (
        [json.loads(line) for line in text.splitlines() if line.strip()]
        if path.suffix == ".jsonl"
        else [json.loads(text)]
    )
    for document in documents:
        for resource in document.get("resourceSpans", ()):
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for attribute in span["attributes"]:
                        value = attribute["value"].get("stringValue", "")
                        if value[:1] in "[{" and value:
                            json.loads(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps, fewer repetitions")
    args = parser.parse_args()
    scale, rounds = (10, 3) if args.quick else (1, 5)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        # The session: 1,000 steps. The span file: 1,000 spans (a 500-step run: a chat and a tool
        # span per step, and the agent's), each chat span holding its whole input, as the
        # conventions have it.
        for source, steps in (("claude-code", STEPS // scale), ("otlp", STEPS // 2 // scale)):
            session, trace = folder / f"{steps}.session.jsonl", folder / f"{steps}.trace.jsonl"
            write_session(session, steps)
            import_file("claude-code", session, trace)
            given = session
            if source == "otlp":
                given = folder / f"{steps}.otlp.json"
                spans = export_otlp(trace, given).spans
            out = folder / "again.trace.jsonl"
            reads: list[float] = []
            imports: list[float] = []
            parses: list[float] = []
            for _ in range(rounds):
                reads.append(figures.cpu_seconds(partial(read_trace, trace)))
                imports.append(figures.cpu_seconds(partial(import_file, source, given, out, force=True)))
                parses.append(figures.cpu_seconds(partial(parse_only, given)))
            case = f"{steps} steps" if source == "claude-code" else f"{spans} spans ({steps} steps)"
            floor = statistics.median(reads)
            emit(f"{case}, import {source}", "ratio_to_read", statistics.median(imports) / floor, digits=2,
                 read_cpu_seconds=round(floor, 4))  # fmt: skip
            over_parse = statistics.median(imports) / statistics.median(parses)
            emit(f"{case}, import {source}", "ratio_to_parse", over_parse, digits=2)
            native = trace.stat().st_size
            emit(f"{case}, {source} file", "size_ratio", given.stat().st_size / native, digits=2,
                 file_bytes=given.stat().st_size, trace_bytes=native)  # fmt: skip


if __name__ == "__main__":
    main()
