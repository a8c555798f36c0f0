"""The live console, `agentevals report --watch`: the trace read as it grows (never from the start),
the page it serves updated in Chromium while a run writes its trace, a marathon folder in progress,
and Ctrl-C. The page is the static report's, with one more source in its policy (its own server)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import TraceError
from pytest_agentevals.report.build import build_report
from pytest_agentevals.report.live import Watch
from pytest_agentevals.trace.reader import TraceTail

from ..metrics_support import Run
from .test_browser import ARGS, CHROMIUM, NO_CHROMIUM


def long_run(calls: int) -> list[dict[str, Any]]:
    """`calls` steps: a model call, a tool call, a check every 5th step, a checkpoint every 10th."""
    run = Run(budget={"max_calls": calls + 10})
    for step in range(1, calls + 1):
        run.call(input=100 + step, write=0, read=50 * step, output=20, cost=0.001)
        run.tool("read_file", output=f"file {step}", path=f"f{step}.txt")
        if step % 5 == 0:
            run.verify(step / calls, passed=step % 15 != 0, name=f"check {step}")
        if step % 10 == 0:
            run.checkpoint()
    return run.end("ok")


def lines_of(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(event) + "\n" for event in events]


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines))
        handle.flush()


def test_the_tail_reads_only_what_was_added_and_waits_for_a_line_being_written(tmp_path: Path) -> None:
    lines = lines_of(long_run(20))
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:10])
    tail = TraceTail(path)
    assert len(tail.poll()) == 10
    append(path, [lines[10][:15]])  # a line half written
    assert tail.poll() == []
    # What was read is never read again: damaging an earlier line changes nothing for the tail.
    text = path.read_bytes()
    path.write_bytes(b"X" * len(lines[0]) + text[len(lines[0]) :])
    append(path, [lines[10][15:], *lines[11:20]])
    assert [event["seq"] for event in tail.poll()] == [json.loads(line)["seq"] for line in lines[10:20]]
    assert tail.offset == path.stat().st_size


def test_the_watched_run_is_the_static_reports_run_at_every_point(tmp_path: Path) -> None:
    lines = lines_of(long_run(30))
    path = tmp_path / "run.trace.jsonl"
    clock = [0.0]
    watch = Watch([tmp_path], clock=lambda: clock[0], silent_after=30)
    assert not watch.refresh()
    assert watch.runs == []  # an empty folder: nothing yet
    for cut in (7, 60, len(lines)):
        append(path, lines[len(path.read_text().splitlines()) if path.exists() else 0 : cut])
        watch.refresh()
        live, static = watch.views()[0], build_report([path]).runs[0]
        assert live.metrics == static.metrics
        assert live.transcript.lines == static.transcript.lines
        assert [r.step for r in live.transcript.records] == [r.step for r in static.transcript.records]
    assert watch.runs[0].ended


def test_a_run_that_stops_growing_is_silent_and_an_update_says_so(tmp_path: Path) -> None:
    lines = lines_of(long_run(5))
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:8])
    clock = [100.0]
    watch = Watch([path], clock=lambda: clock[0], silent_after=30)
    watch.refresh()
    version = watch.version
    assert 'data-field="status">running</span>' in watch.page()
    clock[0] += 95
    assert watch.refresh()
    update = watch.update(version)
    assert (
        'class="badge s-silent" data-field="status">silent for 1 m 35 s</span>' in update["runs"][0]["html"]
    )
    append(path, lines[8:])
    watch.refresh()
    assert 'data-field="status">ok</span>' in watch.update(update["version"])["runs"][0]["html"]


def test_a_named_file_that_is_not_a_trace_is_one_clear_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.trace.jsonl"
    readme.write_text("# not a trace\n")
    with pytest.raises(TraceError, match=r"README.trace.jsonl: not a trace"):
        Watch([readme]).refresh()


# -- in Chromium, as a person watches --------------------------------------------------------------------

# On a laptop without chromium the browser test skips; in CI it must run, so there it fails.
needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason=NO_CHROMIUM
)


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """`agentevals report --watch FOLDER` as a user starts it; its URL from its first line."""
    folder = tmp_path / "night"
    folder.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_agentevals", "report", "--watch", str(folder), "--silent-after", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    found = re.search(r"at (http://127\.0\.0\.1:\d+/) \(Ctrl-C stops\)", first)
    assert found, (first, process.stderr.read() if process.poll() is not None else "")
    try:
        yield process, found.group(1), folder
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@needs_chromium
def test_chromium_watches_a_run_while_it_writes_its_trace(
    console: tuple[subprocess.Popen[str], str, Path],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    process, url, folder = console
    lines = lines_of(long_run(60))
    trace = folder / "seed-0.trace.jsonl"
    append(trace, lines[:40])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        elsewhere: list[str] = []
        errors: list[str] = []
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(url)
                else (elsewhere.append(route.request.url), route.abort())
            ),
        )
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url, wait_until="load")
        steps = page.locator('section.run dd[data-field="steps"]')
        status = page.locator('section.run [data-field="status"]')
        first = int(steps.inner_text())
        assert 0 < first < 60
        expect(status).to_have_text("running")
        drawn = page.locator('svg[data-chart="spend"] .marker, svg[data-chart="progress"] .marker').count()
        # The run goes on: the header's steps and the charts grow, without a reload.
        page.evaluate("() => { window.__same_page = true; }")
        for cut in (80, 110, len(lines) - 1):
            append(trace, lines[len(trace.read_text().splitlines()) : cut])
            time.sleep(0.3)
        expect(steps).to_have_text("60", timeout=10_000)
        assert page.evaluate("() => window.__same_page === true")  # updated in place
        assert (
            page.locator('svg[data-chart="spend"] .marker, svg[data-chart="progress"] .marker').count()
            > drawn
        )
        # It stops writing: silent, with how long; then it ends: its end status.
        expect(status).to_have_text(re.compile(r"silent for \d"), timeout=10_000)
        append(trace, lines[-1:])
        expect(status).to_have_text("ok", timeout=10_000)
        # A marathon in progress: a second seed's trace appears in the folder and gets its section.
        append(folder / "seed-1.trace.jsonl", lines[:30])
        expect(page.locator("section.run")).to_have_count(2, timeout=10_000)
        expect(page.locator("#overview table.overview tbody tr")).to_have_count(2)
        policy = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
        assert policy is not None
        assert "connect-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert elsewhere == []
        assert errors == []
        browser.close()
    # Ctrl-C stops it cleanly.
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert "stopped watching" in out
    assert "Traceback" not in err


def test_the_console_answers_only_on_its_own_address(tmp_path: Path) -> None:
    import http.client
    import threading

    from pytest_agentevals.report.serve import ConsoleServer

    append(tmp_path / "run.trace.jsonl", lines_of(long_run(3)))
    server = ConsoleServer(Watch([tmp_path]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        assert server.server_address[0] == "127.0.0.1"

        def get(path: str, host: str) -> tuple[int, bytes]:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", path, headers={"Host": host})
            response = connection.getresponse()
            return response.status, response.read()

        assert get("/", f"127.0.0.1:{port}")[0] == 200
        assert get("/update?v=0", f"localhost:{port}")[0] == 200
        # A page elsewhere reaching it through a name that resolves here (DNS rebinding) is refused.
        status, body = get("/update?v=0", f"evil.example:{port}")
        assert status == 403
        assert b"only on its own address" in body
        assert get("/nothing", f"127.0.0.1:{port}")[0] == 404
        assert get("/lines?run=7", f"127.0.0.1:{port}")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_a_damaged_line_stops_the_watched_trace_there_and_says_so(tmp_path: Path) -> None:
    lines = lines_of(long_run(10))
    path = tmp_path / "run.trace.jsonl"
    append(path, [*lines[:6], '{"type": "note", "seq": \n', *lines[6:9]])
    watch = Watch([path])
    watch.refresh()
    run = watch.views()[0]
    assert run.damaged
    assert run.problems == [
        "line 7 is damaged (the line is not valid JSON (Expecting value, near '')): shown are the 6 events "
        "before it"
    ]
    append(path, lines[9:])
    watch.refresh()
    assert watch.views()[0].problems == run.problems  # said once, and read no further
    # A trace replaced by a shorter file while watched: said, not read from the start again.
    whole = tmp_path / "whole.trace.jsonl"
    append(whole, lines[:20])
    again = Watch([whole])
    again.refresh()
    whole.write_text(lines[0])
    again.refresh()
    assert "the file shrank from" in again.views()[0].problems[0]
