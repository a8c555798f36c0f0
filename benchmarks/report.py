"""Report cost: building the run report of a 10,000-step trace against just reading it, and how the
page grows with the run.

The traces are made with the real recorder and writer: the example agent's run against the
simulated server (300 steps, streamed, as the main job records it) is recorded once, then its events
are written again end to end by a `TraceWriter` — steps, sequence numbers and times shifted,
verified progress scaled to rise over the whole run — until the trace holds the steps asked for, with
incidents sprinkled in: a retried 429 every 97 steps, a watchdog firing every 1,000, a guard warning
every 2,500. So a longer trace has proportionally more markers, checkpoints and compactions, as a
longer real run would. Then, alternately in this one process:

- read: `read_trace(path)`, every event parsed and its request resolved;
- report: `build_report([path]).html()`, the same file read once, its metrics, series and transcript
  made, and the page rendered and checked for secrets.

The live console (`agentevals report --watch`), in the same run:

- update cost: a 10,000-step trace is followed by a `Watch` from its first 9,000 steps' worth of
  lines on; then, ten times, 100 more lines (events) are appended and the watch reads them and
  answers an update as the page asks for it (`refresh()` then `update(since, have)`: the page holds
  the section's parts of the last update), serialized as the server sends it. The
  median CPU time of one such update over building the whole report once is `update_ratio_to_build`
  (aim at most 0.05: the update reads only what was added, and redraws only the run that grew);
- page memory: the console is served on loopback to headless Chromium, whose page polls every 5 ms
  instead of every second while the trace gains a few events before each poll (at least one: the
  trace is made long enough, from 1,200 steps), so an hour of updates (3,600; 600 with --quick)
  runs in minutes. The page's JS heap and DOM nodes after it (both
  after a forced garbage collection, through the DevTools protocol) over the same right after the
  page loaded is `heap_ratio_after_hour` (aim at most 2), over the same after its first ten updates
  `heap_ratio_after_hour_to_warm` (what the hour itself added), and over a fresh page of the run as
  it ended, `heap_ratio_to_fresh`; the same for DOM nodes (`nodes_ratio_*`).

Prints one JSON line per figure: `ratio_to_read` (report over read, medians of CPU time, at 10,000
steps; aim under 2), the page's size at 1,000 and 10,000 steps and `size_growth` (10,000 over
1,000; aim under 3, which the downsampling and the sampled transcript bound). When a Chromium is
installed (`/usr/bin/chromium`) and Playwright with it, also the time to open the 10,000-step page
(`open_seconds`: to the load event, the script run) beside the time to open an empty page
(`open_ratio_to_blank`). Run from the repository root:

    python benchmarks/report.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import _figures as figures
from _tiles import record_tile, tiled_trace  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from pytest_agentevals import read_trace
from pytest_agentevals.report.build import build_report
from pytest_agentevals.trace.events import Event

RETRY_EVERY, WATCHDOG_EVERY, GUARD_EVERY = 97, 1_000, 2_500
SPREAD = 0.15  # more read/report rounds only while their ratios spread wider than this
WARM_UPDATES = 10  # the live page "warm": after its first updates


def _incidents(step: int, call: Event) -> list[Event]:
    """Events written just before the model call of `step`."""
    base = {"t": call["t"], "step": step}
    out: list[Event] = []
    if step % RETRY_EVERY == 0:
        response = {"status": 429, "headers": {"retry-after": "1"}, "json": {"type": "error"}}
        out.append(
            {**call, **base, "type": "model_call", "response": response, "usage": {}, "cost_usd": 0.0}
            | {"error": "HTTP 429: rate_limit_error: slow down"}
        )
    if step % WATCHDOG_EVERY == 0:
        out.append({**base, "type": "watchdog", "action": "ask", "reason": "no progress for 40 calls"})
        out.append({**base, "type": "watchdog", "action": "continue", "reason": "granted 40 more calls"})
    if step % GUARD_EVERY == 0:
        out.append(
            {
                **base,
                "type": "guard",
                "guard": "budget",
                "action": "warn",
                "reason": "a call ten times the median",
            }
        )
    return out


emit = partial(figures.emit, "report")


def open_times(page_path: Path, folder: Path, repeats: int) -> tuple[float, float] | None:
    """Seconds to open the page and an empty one in headless Chromium, to the load event (medians)."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(chromium).exists():
        return None
    blank = folder / "blank.html"
    blank.write_text("<!doctype html><title>blank</title><p>blank</p>")
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
    measure = (
        "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd / 1000; }"
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=[*args, "--disable-sync", "--no-first-run"]
        )
        result: dict[Path, list[float]] = {page_path: [], blank: []}
        for _ in range(repeats):
            for path in (page_path, blank):
                page = browser.new_page()
                page.goto(path.as_uri(), wait_until="load")
                result[path].append(float(page.evaluate(measure)))
                page.close()
        browser.close()
    return statistics.median(result[page_path]), statistics.median(result[blank])


def live_update_cost(path: Path, folder: Path, updates: int = 10, batch: int = 100) -> float:
    """Median CPU seconds of one live update of `batch` new events on the trace at `path`."""
    import json

    from pytest_agentevals.report.live import Watch

    lines = path.read_bytes().splitlines(keepends=True)
    live = folder / "live.trace.jsonl"
    cut = len(lines) - updates * batch - 1
    live.write_bytes(b"".join(lines[:cut]))
    watch = Watch([live])
    watch.refresh()
    version, state = watch.version, -1
    costs = []
    for index in range(updates):
        with live.open("ab") as handle:
            handle.write(b"".join(lines[cut + index * batch : cut + (index + 1) * batch]))

        def update() -> None:  # as the page asks: the parts of its section it holds are not sent
            nonlocal version, state
            watch.refresh()
            answer = watch.update(version, [state])
            json.dumps(answer)
            version, state = answer["version"], answer["runs"][0]["state"]

        costs.append(figures.cpu_seconds(update))
    return statistics.median(costs)


def live_memory(tile: list[Event], folder: Path, updates: int) -> dict[str, float] | None:
    """The watched page's heap and DOM nodes: loaded, after `updates` updates, and a fresh page."""
    import threading
    import time

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(chromium).exists():
        return None
    from pytest_agentevals.report.live import Watch
    from pytest_agentevals.report.serve import ConsoleServer

    start = 300 * 3  # about the first 300 steps' lines: the run has begun when the page opens
    steps = 1_200
    while True:  # long enough that every update has an event more (else the last ones wait for liveness)
        whole = tiled_trace(folder, tile, steps, _incidents).read_bytes().splitlines(keepends=True)
        if len(whole) - start - 1 >= updates:
            break
        steps += 300
    live = folder / "watched.trace.jsonl"
    live.write_bytes(b"".join(whole[:start]))
    per_update = max(1, (len(whole) - start - 1) // updates)
    watch = Watch([live], poll_ms=5)
    fed = {"next": start}
    read = watch.refresh

    def refresh() -> bool:  # a few more events before each poll: every poll is an update
        with live.open("ab") as handle:
            handle.write(b"".join(whole[fed["next"] : min(fed["next"] + per_update, len(whole) - 1)]))
        fed["next"] = min(fed["next"] + per_update, len(whole) - 1)
        return read()

    server = ConsoleServer(watch)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

    def measure(page: Any) -> tuple[float, float]:
        cdp = page.context.new_cdp_session(page)
        cdp.send("HeapProfiler.collectGarbage")
        cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        return metrics["JSHeapUsedSize"], metrics["Nodes"]

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=[*args, "--no-first-run"])
            page = browser.new_page()
            page.goto(server.url, wait_until="load")
            heap0, nodes0 = measure(page)
            # The page's version is read by a plain evaluate in the page's own world: a Playwright
            # locator would inject Playwright's utility script (about 0.35 MiB of source and code)
            # into the page's heap, and the heap measured would be Playwright's, not the console's.
            version = "Number(document.body.getAttribute('data-version') || 0)"
            version0 = int(page.evaluate(version))
            watch.refresh = refresh  # type: ignore[method-assign]
            seen: dict[int, tuple[float, float]] = {}
            for target in (WARM_UPDATES, updates // 2, updates):
                while int(page.evaluate(version)) < version0 + target:
                    time.sleep(0.2)
                if target < updates:
                    seen[target] = measure(page)
            watch.refresh = read  # type: ignore[method-assign]
            heap1, nodes1 = measure(page)
            fresh = browser.new_page()
            fresh.goto(server.url, wait_until="load")
            heap2, nodes2 = measure(fresh)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return {
        "heap_initial_mib": heap0 / 2**20,
        "heap_after_hour_mib": heap1 / 2**20,
        "heap_ratio_halfway": seen[updates // 2][0] / heap0,
        "heap_ratio_after_hour": heap1 / heap0,
        # Over the page once it has taken its first updates (its script's update code compiled and
        # run): what the hour added after that.
        "heap_ratio_after_hour_to_warm": heap1 / seen[WARM_UPDATES][0],
        "heap_ratio_to_fresh": heap1 / heap2,
        "nodes_ratio_after_hour": nodes1 / nodes0,
        "nodes_ratio_to_fresh": nodes1 / nodes2,
    }


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Where the benchmark's own time goes: each phase's wall seconds, as a figure of its own."""
    started = time.perf_counter()
    yield
    emit(f"phase {name}", "wall_s", time.perf_counter() - started)


def alternate_rounds(path: Path, least: int, most: int, spread: float) -> tuple[list[float], list[float]]:
    """Read and report CPU seconds, alternating (drift in the machine's load falls on both alike):
    `least` rounds, then more, up to `most`, while the rounds' ratios spread wider than `spread`
    (the slowest round's ratio over the fastest's, less one)."""
    read: list[float] = []
    built: list[float] = []
    while len(read) < most:
        read.append(figures.cpu_seconds(lambda: read_trace(path)))
        built.append(figures.cpu_seconds(lambda: build_report([path]).html()))
        ratios = [b / r for r, b in zip(read, built, strict=True)]
        if len(read) >= least and max(ratios) / min(ratios) - 1 <= spread:
            break
    return read, built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 3,000 steps, fewer repetitions")
    args = parser.parse_args()
    # Rounds: at least `least`, up to `most` while the ratio's rounds spread over SPREAD.
    small, large, least, most = (1_000, 3_000, 2, 3) if args.quick else (1_000, 10_000, 3, 5)
    total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with phase("record the tile"):
            tile = record_tile(folder, stream=True)
        sizes: dict[int, int] = {}
        with phase("traces and their pages"):
            for steps in (small, large):
                path = tiled_trace(folder, tile, steps, _incidents)
                report = build_report([path])  # built once: its page and its step count
                if report.runs[0].metrics.steps != steps:
                    raise SystemExit(f"the trace holds the wrong number of steps, not {steps}")
                page = report.html().encode("utf-8")
                sizes[steps] = len(page)
                (folder / f"report-{steps}.html").write_bytes(page)
                emit(f"{steps} steps", "report_mib", len(page) / 2**20)
                emit(f"{steps} steps", "trace_mib", path.stat().st_size / 2**20)
        emit(f"{large} over {small} steps", "size_growth", sizes[large] / sizes[small])
        path = folder / f"run-{large}.trace.jsonl"
        case = f"{large} steps"
        with phase("read vs report"):
            figures.cpu_seconds(lambda: read_trace(path))  # warm the page cache and the imports
            read, built = alternate_rounds(path, least, most, SPREAD)
        emit(case, "read_seconds", statistics.median(read), rounds=[round(v, 4) for v in read])
        emit(case, "report_seconds", statistics.median(built), rounds=[round(v, 4) for v in built])
        ratios = [b / r for r, b in zip(read, built, strict=True)]
        emit(
            case,
            "ratio_to_read",
            statistics.median(built) / statistics.median(read),
            rounds=[round(v, 3) for v in ratios],
        )
        with phase("open in Chromium"):
            opened = open_times(folder / f"report-{large}.html", folder, least)
        if opened is not None:
            emit(case, "open_seconds", opened[0])
            emit(case, "open_ratio_to_blank", opened[0] / max(opened[1], 1e-6))
        with phase("live update"):
            update = live_update_cost(path, folder)
        emit(case, "live_update_seconds_per_100_events", update)
        emit(case, "update_ratio_to_build", update / statistics.median(built))
        with phase("live page memory"):
            memory = live_memory(tile, folder, 600 if args.quick else 3_600)
        for metric, value in (memory or {}).items():
            emit(f"live console, {600 if args.quick else 3_600} updates", metric, value)
    emit("the whole benchmark", "wall_s", time.perf_counter() - total)


if __name__ == "__main__":
    main()
