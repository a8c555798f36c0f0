"""Replay peers side by side in one run: the same growing agent loop under this project and under
whichever record/replay tools are installed (`pip install -e '.[bench]'`), at 100 and 300 steps.

For each tool: its replay time as a ratio to the floor (the SDK over an in-memory mock transport,
as in `replay.py`), the size of its cassette, and whether it notices a changed prompt: the same loop
replayed with one word of the system prompt changed must fail. Tools, each through its public API
only (no peer's code is copied here):
- ours: `Replayer`, strict, at the SDK's request method (`replay_via="sdk"`, the default) and at the
  HTTP transport (`"http"`);
- vcrpy (what pytest-recording runs under pytest), matching on the body: at 100 steps only (every
  look-up re-parses every recorded body, so it is cubic), and with its default matching (no body);
- agentcassette (`intercept` around the model call), default and `strict=True`;
- llm-cassette (patches `messages.create`), default and `strict=True`;
- agenttape (its httpx adapter); pytest-agentreplay, when its Python version allows it.

Measured alike for every tool: the SDK client a replay drives (and the floor's) is built outside
the clock, as a test builds it once (`replay.py` does the same); each tool's replay is timed in CPU
seconds, the best of several rounds, and the rounds interleave the floor and every tool (each round
runs each once), so load that comes and goes on a shared machine falls on all of them alike.

A tool that cannot replay this loop says why in its row (`replay_error`). Prints one JSON line per
figure, then the table. `--quick` shrinks the sizes (a smoke run; not the figures to report).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import _figures as figures  # benchmarks/: the folder of the script run
import anthropic
import replay as base  # the loop, canned answers and clients of benchmarks/replay.py

from pytest_agentevals.recording.recorder import Recorder
from pytest_agentevals.replay import Replayer

CHANGED_SYSTEM = base.SYSTEM.replace("careful", "careless")
assert CHANGED_SYSTEM != base.SYSTEM
figure = partial(figures.emit, "peers")

Create = Callable[..., Any]
Session = Callable[[Path], AbstractContextManager[Any]]


def blocks(message: Any) -> list[dict[str, Any]]:
    """The assistant's content blocks as the harness sends them back (a Message or a replayed dict)."""
    if isinstance(message, dict):
        return [{k: v for k, v in block.items() if v is not None} for block in message["content"]]
    return [block.model_dump(exclude_none=True) for block in message.content]


def loop(create: Create, steps: int, system: str = base.SYSTEM) -> None:
    """`replay.loop` with the model call given (some peers answer a function of theirs)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every module of the repository."}]
    for _ in range(steps):
        message = create(
            model=base.MODEL, max_tokens=1024, system=system, tools=base.TOOLS, messages=messages
        )
        content = blocks(message)
        messages.append({"role": "assistant", "content": content})
        use = next(block for block in content if block["type"] == "tool_use")
        result = base.read_file(use["input"]["path"])
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}],
            }
        )


class Peer:
    """One way of recording and replaying the loop."""

    name = ""
    max_steps = 10**9

    def available(self) -> str | None:
        """None, or why this tool is not in the run."""
        return None

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        raise NotImplementedError

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        """Replay the loop from `cassette` with `client`, an SDK client pointed nowhere."""
        raise NotImplementedError

    def failed(self, error: str) -> str:
        """What the row says when recording or replaying the loop raised `error`."""
        return f"could not replay the loop: {error}"


class Ours(Peer):
    def __init__(self, via: str) -> None:
        self.via = via
        self.name = f"pytest-agentevals ({via})"

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        path = folder / f"ours-{steps}.trace.jsonl"
        if not path.exists():
            with Recorder(path, agent="bench"):
                base.loop(base.mock_client(answers), steps)
        return path

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        with Replayer(cassette, via=self.via):
            loop(client.messages.create, steps, system)


class Vcrpy(Peer):
    def __init__(self, match_body: bool) -> None:
        self.match_on = (
            base.VCR_MATCH_ON if match_body else ["method", "scheme", "host", "port", "path", "query"]
        )
        self.name = "vcrpy/pytest-recording" + (" (match body)" if match_body else " (default match)")
        self.max_steps = 100 if match_body else 10**9

    def available(self) -> str | None:
        return None if importlib.util.find_spec("vcr") else "not installed"

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        import vcr

        path = folder / f"vcr-{steps}.yaml"
        if not path.exists():
            with vcr.use_cassette(str(path), record_mode="all", match_on=["method", "path"]):
                base.loop(base.mock_client(answers), steps)
        return path

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        import vcr

        with vcr.use_cassette(str(cassette), record_mode="none", match_on=self.match_on):
            loop(client.messages.create, steps, system)


class AgentCassette(Peer):
    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.name = "agentcassette" + (" strict=True" if strict else "")

    def available(self) -> str | None:
        return None if importlib.util.find_spec("agentcassette") else "not installed"

    @staticmethod
    def _create(client: anthropic.Anthropic) -> Create:
        import agentcassette

        # Its seam is a function of the harness: one that calls the SDK and returns plain data.
        return agentcassette.intercept(
            lambda **kw: client.messages.create(**kw).model_dump(), name="llm", kind="llm"
        )

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        import agentcassette

        path = folder / f"agentcassette-{steps}.json"
        if not path.exists():
            with agentcassette.record(str(path)):
                loop(self._create(base.mock_client(answers)), steps)
        return path

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        import agentcassette

        with agentcassette.replay(str(cassette), strict=self.strict):
            loop(self._create(client), steps, system)


class LlmCassette(Peer):
    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.name = "llm-cassette" + (" strict=True" if strict else "")

    def available(self) -> str | None:
        return None if importlib.util.find_spec("llm_cassette") else "not installed"

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        import llm_cassette
        import llm_cassette.anthropic

        llm_cassette.anthropic.install()
        path = folder / f"llm-cassette-{steps}.json"
        if not path.exists():
            with llm_cassette.cassette(path, mode="record"):
                loop(base.mock_client(answers).messages.create, steps)
        return path

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        import llm_cassette

        with llm_cassette.cassette(cassette, mode="replay", strict=self.strict):
            loop(client.messages.create, steps, system)


class AgentTape(Peer):
    name = "agenttape"

    def failed(self, error: str) -> str:
        if "Connection" in error:
            return (
                "did not intercept the SDK: its HTTP adapter patches httpx, and this anthropic SDK sends "
                f"through httpx2, so the replay went to the network ({error})"
            )
        return super().failed(error)

    def available(self) -> str | None:
        return None if importlib.util.find_spec("agenttape") else "not installed"

    def record(self, folder: Path, answers: list[bytes], steps: int) -> Path:
        import agenttape

        with agenttape.use_cassette(f"agenttape-{steps}", mode="all", cassette_dir=folder) as session:
            base.loop(base.mock_client(answers), steps)
        return Path(session.path)

    def replay(self, cassette: Path, steps: int, system: str, client: anthropic.Anthropic) -> None:
        import agenttape

        with agenttape.use_cassette(cassette.name.split(".")[0], mode="none", cassette_dir=cassette.parent):
            loop(client.messages.create, steps, system)


class AgentReplay(Peer):
    name = "pytest-agentreplay"

    def available(self) -> str | None:
        if importlib.util.find_spec("pytest_agentreplay") is None:
            return f"not installed (its releases need Python >= 3.12; this is {sys.version.split()[0]})"
        return "installed, but no replay adapter for it is written here yet"


def peers() -> list[Peer]:
    return [
        Ours("sdk"),
        Ours("http"),
        Vcrpy(match_body=True),
        Vcrpy(match_body=False),
        AgentCassette(strict=False),
        AgentCassette(strict=True),
        LlmCassette(strict=False),
        LlmCassette(strict=True),
        AgentTape(),
        AgentReplay(),
    ]


@contextmanager
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def cpu(work: Callable[[anthropic.Anthropic], None], make_client: Callable[[], anthropic.Anthropic]) -> float:
    """CPU seconds of one run of `work(client)`; the client is built outside the clock."""
    client = make_client()
    started = time.process_time()
    work(client)
    return time.process_time() - started


def notices(peer: Peer, cassette: Path, steps: int) -> bool | str:
    """Whether replaying with one word of the system prompt changed fails."""
    try:
        with quiet():
            peer.replay(cassette, steps, CHANGED_SYSTEM, base.plain_client())
    except Exception:  # any failure is noticing: the run did not pass
        return True
    return False


def failure(error: Exception) -> str:
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:120]}"


def bench(steps: int, folder: Path, repeat: int) -> list[dict[str, Any]]:
    case = f"{steps} steps"
    answers = base.canned(steps)
    rows: list[dict[str, Any]] = []
    running: list[tuple[Peer, dict[str, Any], Path]] = []
    for peer in peers():
        row: dict[str, Any] = {"steps": steps, "tool": peer.name}
        rows.append(row)
        why = peer.available() or (
            f"skipped: cubic, measured up to {peer.max_steps} steps" if steps > peer.max_steps else None
        )
        if why is not None:
            row["replay_error"] = why
            continue
        try:
            with quiet():
                running.append((peer, row, peer.record(folder, answers, steps)))
        except Exception as error:  # a peer that cannot record this loop: said in its row, not hidden
            row["replay_error"] = peer.failed(failure(error))

    def floor(client: anthropic.Anthropic) -> None:
        base.loop(client, steps)

    # Rounds, each timing the floor and every tool once: a burst of load on a shared machine then
    # slows one round of all of them, not every run of one of them. Best of the rounds.
    best: dict[str, float] = {}
    for round_ in range(repeat):
        floor_s = cpu(floor, lambda: base.mock_client(answers))
        best["floor"] = min(best.get("floor", floor_s), floor_s)
        for peer, row, cassette in running:
            if "replay_error" in row or (round_ and "match body" in peer.name):
                continue  # vcrpy matching on the body takes a minute a run: once is enough
            try:
                with quiet():
                    replay = partial(peer.replay, cassette, steps, base.SYSTEM)
                    seconds = cpu(replay, base.plain_client)
            except Exception as error:  # a peer that cannot replay this loop: said in its row
                row["replay_error"] = peer.failed(failure(error))
                continue
            best[peer.name] = min(best.get(peer.name, seconds), seconds)
    figure(case, "floor_seconds", best["floor"])
    for peer, row, cassette in running:
        if "replay_error" in row:
            continue
        row |= {
            "ratio_to_floor": round(best[peer.name] / best["floor"], 3),
            "cassette_bytes": cassette.stat().st_size,
            "notices_changed_prompt": notices(peer, cassette, steps),
        }
        for metric in ("ratio_to_floor", "cassette_bytes"):
            figure(case, metric, row[metric], tool=peer.name)
        figure(case, "notices_changed_prompt", float(row["notices_changed_prompt"]), tool=peer.name)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| steps | tool | ratio to floor | cassette bytes | notices a changed prompt |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        if "replay_error" in row:
            lines.append(f"| {row['steps']} | {row['tool']} | — | — | {row['replay_error']} |")
        else:
            notice = "yes" if row["notices_changed_prompt"] else "**no**"
            size = f"{row['cassette_bytes']:,}"
            lines.append(f"| {row['steps']} | {row['tool']} | {row['ratio_to_floor']} | {size} | {notice} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--steps", type=int, nargs="+", help="the run lengths (default: 100 300)")
    args = parser.parse_args(argv)
    sizes = args.steps or ((20, 50) if args.quick else (100, 300))
    rows = []
    with tempfile.TemporaryDirectory(prefix="agentevals-peers-") as folder:
        for steps in sizes:
            rows.extend(bench(steps, Path(folder), repeat=5 if steps <= 100 else 2))
    print(json.dumps({"bench": "peers", "table": "below"}), flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
