"""The run report in a real browser: headless Chromium (Debian's `chromium` package, which .ci/run
installs when it is missing) driven by Playwright through its `executable_path` — Playwright never
downloads a browser here. Every request the page makes is routed and refused, so a page that reached
for anything but itself fails; so does a console error, a page error or a dialog."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_agentevals import read_trace
from pytest_agentevals.metrics import MARKER_KINDS, analyze
from pytest_agentevals.report.build import build_report, write_report

from ..conftest import REPO, run_agentevals
from ..report_support import PAYLOAD, PAYLOADS, every_marker, with_payloads, write

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

NO_CHROMIUM = (
    "no chromium on this machine: the browser tests need Debian's chromium package "
    "(apt-get install -y chromium; .ci/run installs it when it is missing)"
)
# On a laptop without chromium the browser tests skip; in CI they must run, so there it fails.
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason=NO_CHROMIUM)


@dataclass
class Opened:
    page: Any
    requests: list[str] = field(default_factory=list)  # every request but the page itself
    errors: list[str] = field(default_factory=list)  # console errors and warnings, page errors
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.requests == []
        assert self.errors == []
        assert self.dialogs == []


def wait_for_text(locator: Any) -> None:
    """Wait until the element shows some text. Not `page.wait_for_function`: it evaluates its
    string with eval, which the report's Content-Security-Policy refuses, as it should."""
    from playwright.sync_api import expect

    expect(locator).to_have_text(re.compile(r"\S"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"CI is set and there is {NO_CHROMIUM}")

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def open_(path: Path) -> Opened:
        uri = path.resolve().as_uri()
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        contexts.append(context)
        page = context.new_page()
        opened = Opened(page)

        def route(route: Any) -> None:
            if route.request.url == uri:
                route.continue_()
            else:
                opened.requests.append(route.request.url)
                route.abort()

        context.route("**/*", route)
        page.on("console", lambda m: opened.errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: opened.errors.append(str(error)))
        page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(uri, wait_until="load")
        return opened

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The example agent's run, recorded against the simulated model as the main job records it
    (fewer tasks), and its report written by `agentevals report`."""
    folder = tmp_path_factory.mktemp("example")
    trace, page = folder / "taskrunner.trace.jsonl", folder / "report.html"
    recorded = run_agentevals(
        "record", "-o", trace, "--agent", "taskrunner",
        "-m", "examples.taskrunner", "--tasks", "24", "--seed", "1", "--stream", "--sim",
        "--compact-at", "1500",
        cwd=REPO,
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    reported = run_agentevals("report", trace, "-o", page, cwd=folder)
    assert reported.returncode == 0, reported.stderr
    return trace, page


def test_the_example_runs_report_loads_clean_and_draws_the_run(
    open_page: Any, example_report: tuple[Path, Path]
) -> None:
    trace, path = example_report
    metrics, series = analyze(read_trace(trace))
    opened = open_page(path)
    page = opened.page
    assert page.locator('[data-field="status"]').first.text_content() == "ok"
    assert page.locator('[data-field="cost"]').text_content() == f"${metrics.cost_usd:.4f}"
    assert page.locator("svg.chart").count() == 3
    # Every series of the three charts holds the known trace's points (a short run: none downsampled).
    drawn = {
        ("progress", "progress"): len(series.progress),
        ("progress", "checks-passed"): sum(1 for point in series.progress if point.passed),
        ("progress", "checks-failed"): sum(1 for point in series.progress if not point.passed),
        ("context", "context"): len(series.calls),
        ("spend", "cost"): len(series.calls),
        **{
            ("spend", kind): sum(1 for call in series.calls if getattr(call, f"{kind}_tokens") > 0)
            for kind in ("input", "cache_write", "cache_read", "output")
        },
    }
    for (chart, name), points in drawn.items():
        path = page.locator(f'svg[data-chart="{chart}"] [data-series="{name}"]')
        assert path.get_attribute("data-points") == str(points), (chart, name)
    assert sum(drawn[("spend", kind)] for kind in ("cache_write", "output")) > 0
    for chart in ("progress", "context", "spend"):
        for kind in {marker.kind for marker in series.markers}:
            glyphs = page.locator(f'svg[data-chart="{chart}"] g.marker[data-kind="{kind}"]')
            counts = [int(n) for n in glyphs.evaluate_all("els => els.map(e => e.dataset.count)")]
            assert sum(counts) == sum(1 for marker in series.markers if marker.kind == kind)
    assert page.locator('svg[data-chart="context"] g.hwm').count() == 1  # the compaction mark
    # The script: a cursor and readout over the charts, the packed step list, a marker opening its step.
    page.locator('svg[data-chart="spend"]').hover()  # its middle
    assert re.match(r"step \d+ · verified [\d.]+% · ", page.locator(".readout").text_content())
    assert page.locator('svg[data-chart="progress"] .cursor').get_attribute("visibility") == "visible"
    page.locator("details.all-steps > summary").click()
    wait_for_text(page.locator("details.all-steps pre"))
    lines = page.locator("details.all-steps pre").text_content().splitlines()
    # `agentevals record` checkpoints the folder before the program starts: a step 0 of its own.
    starts = [e["name"] for e in read_trace(trace) if e["type"] == "checkpoint" and e.get("step") == 0]
    assert starts == ["program start"]
    assert len(lines) == metrics.steps + 1
    assert lines[0].startswith("step     0")
    assert "[checkpoint]" in lines[0]
    assert lines[1].startswith("step     1")
    marker = page.locator('svg[data-chart="progress"] g.marker[data-kind="compaction"]').first
    marker.hover()
    assert page.locator("#tip").is_visible()
    assert "compaction" in page.locator("#tip").text_content()
    marker.click(force=True)
    step = marker.get_attribute("data-step")
    assert page.locator(f'details.step[data-step="{step}"]').first.get_attribute("open") is not None
    opened.assert_clean()


def test_every_kind_of_marker_is_on_all_three_charts_with_its_tooltip(open_page: Any, tmp_path: Path) -> None:
    events = every_marker()
    _, series = analyze(events)
    path = tmp_path / "report.html"
    write_report(build_report([write(tmp_path / "run.trace.jsonl", events)]), path)
    opened = open_page(path)
    page = opened.page
    assert page.locator('[data-field="status"]').first.text_content() == "error"
    for chart in ("progress", "context", "spend"):
        for kind in MARKER_KINDS:
            expected = [m for m in series.markers if m.kind == kind]
            glyphs = page.locator(f'svg[data-chart="{chart}"] g.marker[data-kind="{kind}"]')
            assert glyphs.count() == len(expected) == 1
            assert expected[0].label in glyphs.locator("title").text_content()
    for key in ("max_calls", "max_call_tokens", "max_cost_usd"):
        assert page.locator(f'svg[data-chart="spend"] [data-budget="{key}"]').count() == 1
    opened.assert_clean()


def test_text_from_the_trace_stays_text_and_no_script_of_its_runs(open_page: Any, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    trace = write(tmp_path / "x<img src=y onerror=alert(9)>.trace.jsonl", with_payloads())
    write_report(build_report([trace]), path)
    opened = open_page(path)
    page = opened.page
    # Open everything a person could open, point at every marker, unpack the step list.
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    # The step list unpacks asynchronously after its details open: wait for it, null-safe.
    wait_for_text(page.locator("details.all-steps pre"))
    for marker in page.locator("g.marker").all():
        marker.hover(force=True)
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("script").count() == 2
    assert page.locator("img, iframe, object, embed").count() == 0
    shown = page.locator("details.step pre").all_text_contents()
    assert "output " + PAYLOAD in shown  # the tool's output, character for character, as text
    assert all(payload in page.locator("body").text_content() for payload in PAYLOADS)
    opened.assert_clean()


def test_a_damaged_trace_says_so_at_the_top(open_page: Any, tmp_path: Path) -> None:
    events = every_marker()[:-1]  # no run_end: killed
    trace = write(tmp_path / "killed.trace.jsonl", events)
    with trace.open("a") as handle:
        handle.write('{"type": "note", "seq": 99, "t": 3.0, "st')
    path = tmp_path / "report.html"
    write_report(build_report([trace]), path)
    opened = open_page(path)
    problems = opened.page.locator("#problems")
    assert problems.is_visible()
    assert "no run_end" in problems.text_content()
    assert "incomplete" in problems.text_content()
    assert problems.bounding_box()["y"] < opened.page.locator("svg.chart").first.bounding_box()["y"]
    opened.assert_clean()


def test_twenty_seeds_overview_fits_two_screens_at_1400px_with_runs_named_by_test_and_seed(
    browser: Any, tmp_path: Path
) -> None:
    from ..metrics_support import Run

    night = tmp_path / "night" / "tests--test_taskrunner_marathon"
    for seed in range(20):
        run = Run(seed=seed)
        run.events[0]["agent"] = "test_taskrunner_marathon"
        for step in range(1, 30):
            run.call(input=100, write=0, read=40 * step, output=20, cost=0.001).tool("read", path=f"{step}")
            if step % 4 == 0:
                run.verify(step / 30, passed=step % 8 != 0)
        write(night / f"seed-{seed}.trace.jsonl", run.end("ok"))
    page_path = tmp_path / "night.html"
    write_report(build_report([tmp_path / "night"]), page_path, root=tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(page_path.as_uri(), wait_until="load")
    table = page.locator("#overview table.overview")
    box = table.bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= 2 * 900, box  # the overview within two screens
    names = table.locator("td.name").all_inner_texts()
    assert names == [
        f"test_taskrunner_marathon seed={seed}" for seed in range(20)
    ]  # seeds as seeds, in order
    rows = [row.bounding_box()["height"] for row in table.locator("tbody tr").all()]
    assert max(rows) < 45  # one line a run: no name wrapped
    assert page.locator("section.run h2 small").first.inner_text() == "seed=0"
    page.close()


def test_dense_markers_are_a_band_of_counts_and_failed_checks_and_tool_results_read_apart(
    open_page: Any, tmp_path: Path
) -> None:
    from ..metrics_support import Run

    run = Run()
    for step in range(1, 261):
        run.call(input=100, write=0, read=20 * step, output=20, cost=0.001)
        run.tool("run_check", output="ok", task=f"T{step:03d}")
        if step % 2 == 0:
            run.checkpoint()
        if step % 10 == 0:
            run.verify(step / 260, passed=step % 40 != 0, name=f"T{step:03d}")
    run.watchdog("no progress", "ask")
    trace = write(tmp_path / "dense.trace.jsonl", run.end("ok"))
    page_path = tmp_path / "dense.html"
    write_report(build_report([trace]), page_path, root=tmp_path)
    opened = open_page(page_path)
    page = opened.page
    chart = page.locator('svg[data-chart="progress"]')
    bands = chart.locator(".marker.band.k-checkpoint")
    # 130 checkpoints: a band of counts, each count readable, all of them there; no line each.
    assert 10 < bands.count() <= 40
    assert sum(int(text) for text in bands.locator("text").all_text_contents()) == 130
    assert chart.locator(".marker.k-checkpoint line").count() == 0
    assert chart.locator(".marker.k-watchdog line").count() == 1  # a rare kind keeps its glyph and line
    # Six failed checks, said in the legend, each a red line up the chart.
    expect_text = page.locator(".failed-checks").first.inner_text()
    assert expect_text == "▲ 6 checks failed"
    assert chart.locator(".checks-ko").get_attribute("data-points") == "6"
    # The transcript tells the tool's own result from the harness's check.
    step_40 = page.locator('details.step[data-step="40"] > summary').first.inner_text()
    assert "tool run_check(task=T040) → returned" in step_40
    assert "harness check T040 FAILED" in step_40
    opened.assert_clean()


def test_a_triage_result_is_its_own_section_linked_to_its_runs(open_page: Any, tmp_path: Path) -> None:
    import json

    from examples.taskrunner import planted
    from pytest_agentevals.report.triage import load_triage
    from pytest_agentevals.triage import fork, load_runs, rank

    runs = planted.record_runs(tmp_path / "night", [7, 0, 5], tasks=10)  # seed 7 meets the flaw
    loaded = load_runs(run.trace for run in runs)
    ranking = rank(loaded)
    k = runs[0].mistake_step
    assert k is not None
    forked = fork(loaded[0], k, drive=planted.drive, model=planted.model, passing=ranking.passing, n=2)
    ranked_file, fork_file = tmp_path / "rank.json", tmp_path / "fork.json"
    data = ranking.to_json(3)
    data["runs"][0]["candidates"][1]["decision"] = PAYLOAD  # text from a file stays text
    ranked_file.write_text(json.dumps(data))
    fork_file.write_text(json.dumps(forked.to_json()))
    page_path = tmp_path / "report.html"
    triage = [load_triage(ranked_file), load_triage(fork_file)]
    write_report(build_report([run.trace for run in runs], triage=triage), page_path, root=tmp_path)
    opened = open_page(page_path)
    page = opened.page
    section = page.locator("#triage")
    assert section.is_visible()
    first = section.locator('.ranked[data-run="seed 7"] tbody tr').first
    assert first.get_attribute("data-step") == str(k)
    assert "t008-notes.txt" in first.inner_text()
    assert "call:read_file(path=a#-a.a): 1/1 failing, 0/2 passing" in first.inner_text()
    assert PAYLOAD in section.inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"
    verdict = section.locator(".fork p").first
    assert verdict.inner_text() == f"cannot tell at {k}: 2/2 (0.34\N{EN DASH}1.00)"  # two re-drives are few
    assert "verdict-inconclusive" in (verdict.get_attribute("class") or "")
    # The ranked run's name links to its run's section on the same page.
    section.locator('.ranked[data-run="seed 7"] h3 a').click()
    assert page.evaluate("location.hash") == "#run-1"
    assert page.locator("#run-1").is_visible()
    opened.assert_clean()
