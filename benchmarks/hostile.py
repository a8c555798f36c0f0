"""Refusing a hostile file against loading a valid one of the same size, reader by reader.

For each reader bound by issue 17 — the trace, a vcrpy YAML cassette, a goldens file, the
quarantine file, a marathon results file, a checkpoint's workspace index (its link check), the
day ledger, a trace's request deltas (a cassette load) and workspace deltas (`resume extract`) —
two files of the same size are written: a valid one, and the same with a hostile part (a YAML alias
bomb, JSON nested 100,000 deep, a number of 5,000 digits, a link target of thousands of components,
deltas that keep a whole history or workspace each step). Each is read in a fresh process, which
reports its CPU seconds and peak resident memory; printed are the ratios hostile / valid
(`time_ratio`, `peak_ratio`) and the hostile file's peak (`peak_mb`, the interpreter's own
included). A reader capped below the size (the ledger at 1 MiB) is measured at its cap.

Prints one JSON line per figure. `--quick` uses 1 MB files instead of 10 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
START = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "2026-01-01", "contract": {}}
DEEP = "[" * 100_000 + "]" * 100_000


END = {"type": "run_end", "seq": 0, "t": 0.0, "status": "ok", "totals": {}}


def _call(seq: int, request: dict[str, object]) -> dict[str, object]:
    request = {"method": "POST", "url": "http://127.0.0.1/v1/messages", **request}
    return {
        "type": "model_call",
        "seq": seq,
        "t": 0.0,
        "step": seq,
        "provider": "anthropic",
        "request": request,
        "response": {"status": 200, "json": {}},
    }


def _checkpoint(seq: int, workspace: dict[str, object]) -> dict[str, object]:
    return {"type": "checkpoint", "seq": seq, "t": 0.0, "step": seq, "state": {}, "workspace": workspace}


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def write(reader: str, hostile: bool, size: int, folder: Path) -> Path:
    """The file (or folder) `reader` reads: `size` bytes of valid content, plus a hostile tail."""
    if reader == "trace":
        note = json.dumps({"type": "note", "seq": 1, "t": 0.0, "text": "x" * 200}) + "\n"
        tail = json.dumps({"type": "note", "seq": 2, "t": 0.0, "text": "y"})[:-1] + ', "d": ' + DEEP + "}\n"
        path = folder / "x.trace.jsonl"
        path.write_text(json.dumps(START) + "\n" + _repeat(note, size) + (tail if hostile else note))
    elif reader == "results":
        line = json.dumps({"v": 1, "seed": 1, "pad": "x" * 200}) + "\n"
        tail = '{"seed": ' + "7" * 5000 + "}\n"
        path = folder / "results.jsonl"
        path.write_text(_repeat(line, size) + (tail if hostile else ""))
    elif reader in ("goldens", "quarantine", "vcr cassette"):
        entry = {
            "goldens": "  - {id: c%d, kind: tool_choice, expect: {tool: t, args: {p: %s}}}\n",
            "quarantine": "  - {test: t%d.py, owner: o, reason: %s, expires: 2030-01-01}\n",
            "vcr cassette": "- {request: {method: GET, uri: 'https://x/%d', body: %s}, "
            "response: {status: {code: 200}, body: {string: ''}}}\n",
        }[reader]
        head = {"goldens": "cases:\n", "quarantine": "quarantine:\n", "vcr cassette": "interactions:\n"}[
            reader
        ]
        lines = [entry % (n, "x" * 100) for n in range(max(1, size // len(entry % (0, "x" * 100))))]
        path = folder / ("agentevals-quarantine.yaml" if reader == "quarantine" else "x.yaml")
        path.write_text((BOMB if hostile else "") + head + "".join(lines))
    elif reader == "workspace index":
        # Links whose targets climb down and up again: thousands of components each when hostile
        # (at the OS's 4,096-byte limit), or a few when valid, the index the same size.
        target = ("d/" * 2047) if hostile else "d/e/f"
        entries = [{"path": "d", "type": "dir", "mode": "0755"}]
        per = len(json.dumps({"path": "l000000", "type": "link", "target": target}))
        entries += [{"path": f"l{n:06d}", "type": "link", "target": target} for n in range(size // per)]
        path = folder / "workspace.index.json"
        path.write_text(json.dumps({"format": 1, "entries": entries}))
    elif reader == "request deltas":
        # Valid: a run appending a message of 400 bytes per step and compacting every 50 steps.
        # Hostile: one request of tiny messages (a quarter of the size), then deltas keeping them all.
        path = folder / "x.trace.jsonl"
        tiny = size // 12
        first = {"model": "m", "messages": [0] * tiny if hostile else [{"role": "user", "content": "go"}]}
        lines = [json.dumps(START), json.dumps(_call(1, {"headers": {}, "body": first}))]
        written, length = sum(map(len, lines)), len(first["messages"])
        for n in range(2, size):
            if written >= size:
                break
            if hostile:
                change = {"keep": tiny, "append": []}
            else:
                keep = 0 if n % 50 == 0 else length
                change = {"keep": keep, "append": [{"role": "user", "content": "x" * 400}]}
                length = keep + 1
            lines.append(json.dumps(_call(n, {"body_delta": change})))
            written += len(lines[-1]) + 1
        path.write_text("\n".join([*lines, json.dumps(END)]) + "\n")
    elif reader == "workspace deltas":
        # The same workspace of small files in both; each checkpoint changes one file, with 400
        # bytes of content when valid, with none when hostile (so many more checkpoints).
        path = folder / "x.trace.jsonl"
        count = size // 400
        whole = {"root": "/w", "files": {f"f{n}": {"size": 1, "text": "a"} for n in range(count)}}
        lines = [json.dumps(START), json.dumps(_checkpoint(1, whole))]
        written, text = sum(map(len, lines)), "" if hostile else "b" * 400
        for n in range(2, size):
            if written >= size:
                break
            changed = {f"f{n % count}": {"size": len(text), "text": text}}
            lines.append(json.dumps(_checkpoint(n, {"root": "/w", "base": "previous", "files": changed})))
            written += len(lines[-1]) + 1
        path.write_text("\n".join([*lines, json.dumps(END)]) + "\n")
    elif reader == "ledger":
        size = min(size, 1 << 20)
        days = {f"2026-01-{n:06d}": {"spent": 1.0} for n in range(size // 32)}
        path = folder / "ledger.json"
        body = json.dumps({"version": 1, "days": days, "reservations": {}})
        path.write_text(DEEP[: size - 2] + "]]" if hostile else body)
    else:
        raise ValueError(reader)
    return path


def read(reader: str, path: Path) -> None:
    from pytest_agentevals.errors import AgentEvalsError

    try:
        if reader == "trace":
            from pytest_agentevals.trace.reader import read_trace

            read_trace(path)
        elif reader == "results":
            from pytest_agentevals.marathon.results import read_results

            read_results(path)
        elif reader == "goldens":
            from pytest_agentevals.step.loader import load_goldens

            load_goldens(path)
        elif reader == "quarantine":
            from pytest_agentevals.history import quarantine

            quarantine.load(path)
        elif reader == "vcr cassette":
            from pytest_agentevals.replay.loader import load_cassette

            load_cassette(path)
        elif reader == "workspace index":
            from pytest_agentevals.resume.archive import read_index
            from pytest_agentevals.resume.restore import check_entries

            check_entries(read_index(path, str(path)), str(path))
        elif reader == "request deltas":
            from pytest_agentevals.replay.loader import load_cassette

            load_cassette(path)
        elif reader == "workspace deltas":
            from pytest_agentevals.resume.extraction import extract

            extract(path, "latest", "x", path.parent / "fixtures")
        elif reader == "ledger":
            from pytest_agentevals.guards.ledger import Ledger

            Ledger(path).state()
    except AgentEvalsError:
        pass  # the refusal is what is measured


def child(reader: str, path: Path) -> None:
    started = time.process_time()
    read(reader, path)
    seconds = time.process_time() - started
    print(json.dumps({"seconds": seconds, "peak_mb": _peak_kb() / 1024}))


def _peak_kb() -> int:
    # VmHWM is this process's own high-water mark; ru_maxrss keeps the parent's across fork + exec,
    # which would floor every figure at the size of the process that wrote the files.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(reader: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", reader, str(path)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


READERS = (
    "trace",
    "vcr cassette",
    "goldens",
    "quarantine",
    "results",
    "workspace index",
    "ledger",
    "request deltas",
    "workspace deltas",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 MB files instead of 10 MB")
    parser.add_argument("--reader", action="append", choices=READERS, help="only these readers")
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return
    size = 1_000_000 if args.quick else 10_000_000
    with tempfile.TemporaryDirectory() as folder:
        for reader in args.reader or READERS:
            runs = {}
            for hostile in (False, True):
                where = Path(folder) / f"{reader}-{hostile}".replace(" ", "-")
                where.mkdir()
                runs[hostile] = measure(reader, write(reader, hostile, size, where))
            case = f"{reader}, {size // 1_000_000} MB"
            figures.emit(
                "hostile", case, "time_ratio", runs[True]["seconds"] / max(runs[False]["seconds"], 1e-3)
            )
            figures.emit("hostile", case, "peak_ratio", runs[True]["peak_mb"] / runs[False]["peak_mb"])
            figures.emit("hostile", case, "peak_mb", runs[True]["peak_mb"], digits=1)


if __name__ == "__main__":
    main()
