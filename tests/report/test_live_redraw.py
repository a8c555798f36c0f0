"""The live console's updates drawn from what changed (`report/redraw.py`): what a page puts together
from them is, after every update, the section and data a fresh render of the same trace gives; and
every text served still goes through the secret check, a new event's first of all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals.errors import ReportError
from pytest_agentevals.report.html import draw, run_data, run_section
from pytest_agentevals.report.live import Watch

from ..conftest import make_fake_key
from ..metrics_support import Run
from .test_browser import ARGS, CHROMIUM
from .test_live import append, lines_of, long_run, needs_chromium


class Page:
    """What the page's script keeps of a run's section: each part by its id, the state it holds."""

    def __init__(self) -> None:
        self.state = -1
        self.parts: dict[str, str] = {}
        self.sent = 0  # characters of html the updates carried

    def apply(self, served: dict[str, Any]) -> str:
        held: dict[str, str] = {}
        for group in ("outer", "transcript"):
            for part, html in served[group]:
                if html is None:
                    assert part in self.parts, "a part left out that the page does not hold"
                    html = self.parts[part]
                else:
                    self.sent += len(html)
                held[part] = html
        self.parts, self.state = held, served["state"]
        index = served["index"]
        return (
            f'<section class="run" id="run-{index + 1}" data-run="{index}">'
            + "".join(held[part] for part, _ in served["outer"])
            + '<section class="transcript">'
            + "".join(held[part] for part, _ in served["transcript"])
            + "</section></section>"
        )


def fresh(watch: Watch, index: int = 0) -> tuple[str, str]:
    """Run `index`'s section and data drawn from scratch, as the static page draws them."""
    view = watch.views()[index]
    chart = draw(view, watch.context_windows)
    html = "".join(fragment.text for fragment in run_section(index, view, chart))
    return html, json.dumps(run_data(view, chart, lines=False)[0], sort_keys=True)


def test_the_section_a_page_puts_together_is_a_fresh_render_after_every_update(tmp_path: Path) -> None:
    lines = lines_of(long_run(260))  # failed checks, checkpoints, a budget: every chart changes
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:9])
    clock = [0.0]
    watch = Watch([path], clock=lambda: clock[0], silent_after=30)
    watch.refresh()
    page, tab = Page(), Page()
    version = tab_version = watch.version
    at, sizes, updates = 9, [1, 2, 1, 5, 1, 3, 17, 1], 0
    while at < len(lines):
        if updates % 40 == 39:
            clock[0] += 45  # silent, then running again: the header alone changes
            assert watch.refresh()
            answer = watch.update(version, [page.state])
            assert 'data-field="status">silent for' in page.apply(answer["runs"][0])
            assert page.apply(answer["runs"][0]) == fresh(watch)[0]
            version = answer["version"]
        size = sizes[updates % len(sizes)]
        append(path, lines[at : at + size])
        at += size
        clock[0] += 1
        assert watch.refresh()
        answer = watch.update(version, [page.state])
        [served] = answer["runs"]
        expected_html, expected_data = fresh(watch)
        assert page.apply(served) == expected_html, f"update {updates}"
        assert json.dumps(served["data"], sort_keys=True) == expected_data
        # Whole, for a caller that holds nothing (the Python API, a page that knows no parts).
        assert watch.update(version)["runs"][0]["html"] == expected_html
        if updates % 3 == 0:  # another tab, a few updates behind: sent what it lacks
            assert tab.apply(watch.update(tab_version, [tab.state])["runs"][0]) == expected_html
            tab_version = watch.version
        version = answer["version"]
        updates += 1
    assert watch.runs[0].ended
    # Most of each update was held already: the parts sent are a fraction of the sections served.
    assert page.sent < 0.5 * updates * len(expected_html)


def test_a_state_the_console_no_longer_knows_gets_every_part_whole(tmp_path: Path) -> None:
    lines = lines_of(long_run(30))
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:20])
    watch = Watch([path])
    watch.refresh()
    since = watch.version
    append(path, lines[20:40])
    watch.refresh()
    for have in ([12345], [-1], []):
        served = watch.update(since, have)["runs"][0]
        assert all(html is not None for _, html in served["outer"] + served["transcript"])
        assert Page().apply(served) == fresh(watch)[0]


def test_a_secret_in_a_new_event_is_refused_in_the_update(tmp_path: Path) -> None:
    key = make_fake_key("live")
    run = Run()
    for step in range(40):
        run.call().tool("read_file", output=f"file {step}", path=f"f{step}.txt")
    lines = lines_of(run.end())
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:30])
    watch = Watch([path])
    watch.refresh()
    page = Page()
    version = watch.version
    for at in range(30, 50, 2):  # updates that each reuse most of what was checked before
        append(path, lines[at : at + 2])
        watch.refresh()
        answer = watch.update(version, [page.state])
        page.apply(answer["runs"][0])
        version = answer["version"]
    # Written past the scrubber, as an edited trace would be: a tool output holding a key.
    leak = {**json.loads(lines[50]), "output": f"the key is {key}"}
    assert leak["type"] == "tool_call"
    append(path, [json.dumps(leak) + "\n"])
    watch.refresh()
    with pytest.raises(ReportError, match=r"refused to write the live console's update: run 1 .*step"):
        watch.update(version, [page.state])
    with pytest.raises(ReportError):  # and again: a refused text is never taken for a checked one
        watch.update(version, [page.state])
    with pytest.raises(ReportError):  # whole, too
        watch.update(version)


def test_a_text_served_before_is_refused_once_the_environment_makes_it_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "Zp4q-" + "vK8s2LmN7xR" * 3  # no key shape: served while nothing says it is secret
    run = Run().call().tool("login", output=f"signed in with {token}")
    for _ in range(12):
        run.call().tool("read_file", output="ok")
    lines = lines_of(run.end())
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:2])
    watch = Watch([path])
    watch.refresh()
    since = watch.version
    append(path, lines[2:10])
    watch.refresh()
    page = Page()
    answer = watch.update(since, [page.state])
    assert token in page.apply(answer["runs"][0])
    monkeypatch.setenv("LOGIN_API_KEY", token)
    append(path, lines[10:12])  # the step with the token is unchanged: its record was checked before
    watch.refresh()
    with pytest.raises(ReportError, match=r"the value of \$LOGIN_API_KEY"):
        watch.update(answer["version"], [page.state])


@needs_chromium
def test_chromium_puts_the_parts_together_into_the_section_a_fresh_page_shows(tmp_path: Path) -> None:
    import threading

    from playwright.sync_api import sync_playwright

    from pytest_agentevals.report.serve import ConsoleServer

    lines = lines_of(long_run(120))
    path = tmp_path / "run.trace.jsonl"
    append(path, lines[:60])
    watch = Watch([path], poll_ms=20)
    server = ConsoleServer(watch)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    section = """() => {
        const copy = document.querySelector('section.run').cloneNode(true);
        copy.querySelectorAll('details[open]').forEach((d) => d.removeAttribute('open'));
        return copy.outerHTML;
    }"""
    version = "() => Number(document.body.getAttribute('data-version'))"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.goto(server.url, wait_until="load")
            opened = page.evaluate(
                "() => { const d = document.querySelector('details.step'); d.open = true; return d.id; }"
            )
            for cut in range(70, len(lines) - 1, 10):  # ten updates, each a few steps
                append(path, lines[len(path.read_text().splitlines()) : cut])
                with server.lock:  # as a request would: the server reads under it too
                    watch.refresh()
                    target = watch.version
                page.wait_for_function(f"() => ({version})() >= {target}")
            assert page.evaluate(version) == watch.version
            assert page.evaluate(f"() => document.getElementById('{opened}').open")  # kept open
            fresh_page = browser.new_page(viewport={"width": 1100, "height": 900})
            fresh_page.goto(server.url, wait_until="load")
            assert page.evaluate(section) == fresh_page.evaluate(section)
            # The charts read the run as it is now: the cursor's readout names a step past the first cut.
            chart = page.locator('svg[data-chart="spend"]')
            chart.scroll_into_view_if_needed()
            box = chart.bounding_box()
            assert box is not None
            page.mouse.move(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
            readout = page.locator("section.run .readout").inner_text()
            assert int(readout.split("·")[0].removeprefix("step ").replace(",", "")) > 30
            assert errors == []
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
