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
import shutil
import statistics
import sys
import tempfile
from functools import partial
from pathlib import Path

import _figures as figures
from _tiles import record_tile, tiled_trace  # benchmarks/: the folder of the script run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the examples package

from pytest_agentevals import read_trace
from pytest_agentevals.report.build import build_report
from pytest_agentevals.trace.events import Event

RETRY_EVERY, WATCHDOG_EVERY, GUARD_EVERY = 97, 1_000, 2_500


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 3,000 steps, fewer repetitions")
    args = parser.parse_args()
    small, large, repeats = (1_000, 3_000, 3) if args.quick else (1_000, 10_000, 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tile = record_tile(folder, stream=True)
        sizes: dict[int, int] = {}
        for steps in (small, large):
            path = tiled_trace(folder, tile, steps, _incidents)
            page = build_report([path]).html().encode("utf-8")
            if build_report([path]).runs[0].metrics.steps != steps:
                raise SystemExit(f"the trace holds the wrong number of steps, not {steps}")
            sizes[steps] = len(page)
            (folder / f"report-{steps}.html").write_bytes(page)
            emit(f"{steps} steps", "report_mib", len(page) / 2**20)
            emit(f"{steps} steps", "trace_mib", path.stat().st_size / 2**20)
        emit(f"{large} over {small} steps", "size_growth", sizes[large] / sizes[small])
        path = folder / f"run-{large}.trace.jsonl"
        read: list[float] = []
        built: list[float] = []
        figures.cpu_seconds(lambda: read_trace(path))  # warm the page cache and the imports
        for _ in range(repeats):
            # Alternate, so drift in the machine's load falls on every side alike.
            read.append(figures.cpu_seconds(lambda: read_trace(path)))
            built.append(figures.cpu_seconds(lambda: build_report([path]).html()))
        case = f"{large} steps"
        emit(case, "read_seconds", statistics.median(read))
        emit(case, "report_seconds", statistics.median(built))
        emit(case, "ratio_to_read", statistics.median(built) / statistics.median(read))
        opened = open_times(folder / f"report-{large}.html", folder, repeats)
        if opened is not None:
            emit(case, "open_seconds", opened[0])
            emit(case, "open_ratio_to_blank", opened[0] / max(opened[1], 1e-6))


if __name__ == "__main__":
    main()
