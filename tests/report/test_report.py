"""The run report without a browser: what the page holds, bad input, escaping, the secret check,
long runs kept light, the markdown summary, the command and `pytest --agentevals-report`.
The page in a real browser is tests/test_report_browser.py."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import fields
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentevals.errors import ReportError, TraceError
from pytest_agentevals.metrics import MARKER_KINDS, RunMetrics, analyze
from pytest_agentevals.report.build import build_report, write_report
from pytest_agentevals.report.downsample import MAX_BUCKETS, bucket_calls
from pytest_agentevals.report.html import json_for_script
from pytest_agentevals.report.transcript import FULL_CHARS, LAST_STEPS, PREVIEW_CHARS, TIER_CAPS
from pytest_agentevals.report.verdicts import VerdictRow, verdicts_html

from ..conftest import REPO, make_fake_key, run_agentevals
from ..metrics_support import Run
from ..report_support import PAYLOADS, every_marker, with_payloads, write


class Tags(HTMLParser):
    """The elements and attribute names of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.names: Counter[str] = Counter()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names[tag] += 1
        self.attrs.update(name for name, _ in attrs)


DATA_BLOCK = re.compile(r'<script type="application/json" id="agentevals-data">(.*?)</script>', re.S)


def page_of(*paths: Path) -> str:
    return build_report(paths).html()


def data_of(html: str) -> dict[str, object]:
    (block,) = DATA_BLOCK.findall(html)
    return json.loads(block)  # type: ignore[no-any-return]


def chart(html: str, name: str, run: int = 0) -> str:
    """The SVG of one chart of one run."""
    return re.findall(rf'<svg class="chart" data-chart="{name}".*?</svg>', html, re.S)[run]


# -- what the page holds ------------------------------------------------------------------------------


def test_the_page_holds_the_header_every_metric_three_charts_and_every_marker(tmp_path: Path) -> None:
    events = every_marker()
    path = write(tmp_path / "run.trace.jsonl", events)
    metrics, series = analyze(events)
    html = page_of(path)
    assert {marker.kind for marker in series.markers} == set(MARKER_KINDS)  # the trace has them all
    # The header: status, cost, and every field of RunMetrics, each in a row of its own.
    assert re.search(r'data-field="status">error<', html)
    assert f'data-field="cost">${metrics.cost_usd:.4f}<' in html
    for item in fields(RunMetrics):
        assert f'data-metric="{item.name}"' in html
    # Three charts, each with one glyph per marker (no two of a kind share a pixel column here).
    for name in ("progress", "context", "spend"):
        svg = chart(html, name)
        for kind in MARKER_KINDS:
            expected = sum(1 for marker in series.markers if marker.kind == kind)
            assert len(re.findall(rf'class="marker k-{kind}" data-kind="{kind}"', svg)) == expected
        assert svg.count("<title>") >= len(series.markers)
    assert f'data-series="context" data-points="{len(series.calls)}"' in chart(html, "context")
    assert 'data-budget="max_call_tokens"' in chart(html, "spend")
    assert 'data-budget="max_cost_usd"' in chart(html, "spend")
    assert 'data-tokens="5000"' in chart(html, "context")  # the harness's high-water mark
    # The data the script reads: the buckets and every marker.
    run = data_of(html)["runs"][0]  # type: ignore[index]
    assert run["series"]["calls"]["s0"] == [c.step for c in series.calls]
    assert run["series"]["markers"]["kind"] == [m.kind for m in series.markers]


def test_the_page_makes_no_request_of_its_own(tmp_path: Path) -> None:
    html = page_of(write(tmp_path / "run.trace.jsonl", every_marker()))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    assert csp.group(1).startswith("default-src 'none';")
    assert "'unsafe-inline'" not in csp.group(1)  # the style and the script are allowed by their hashes
    assert not re.search(r"""(src|href|action|xlink:href)\s*=\s*["']?(https?:|//|data:text)""", html)
    assert "@import" not in html
    assert "url(" not in html


def test_several_traces_get_an_overview_first(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        write(tmp_path / "seeds" / f"seed-{seed}.trace.jsonl", Run(seed=seed).calls(seed).verify(1.0).end())
    html = build_report([tmp_path / "seeds"]).html()
    assert html.index('id="overview"') < html.index('id="run-1"')
    assert len(re.findall(r'<tr data-run="\d+">', html)) == 3
    assert len(re.findall(r'<svg class="spark"', html)) == 9  # three small multiples per run
    assert html.count('<section class="run"') == 3


def test_the_marathon_verdict_section_is_empty_without_rows_and_drawn_with_them(tmp_path: Path) -> None:
    assert verdicts_html([]) == ""
    path = write(tmp_path / "run.trace.jsonl", Run().call().verify(1.0).end())
    rows = [
        VerdictRow.from_json(
            {
                "metric": "verified_pass",
                "n": 5,
                "value": 0.6,
                "low": 0.23,
                "high": 0.88,
                "threshold": ">= 0.5",
                "verdict": "inconclusive",
            }
        )
    ]
    report = build_report([path], verdicts=rows)
    assert 'data-verdict="inconclusive"' in report.html()
    assert "INCONCLUSIVE" in report.markdown()
    assert 'id="verdicts"' not in build_report([path]).html()


# -- escaping -----------------------------------------------------------------------------------------


def test_text_from_the_trace_is_escaped_everywhere(tmp_path: Path) -> None:
    path = write(tmp_path / "x<img src=y onerror=alert(1)>.trace.jsonl", with_payloads())
    html = page_of(path)
    for payload in PAYLOADS:
        assert payload not in html
    tags = Tags()
    tags.feed(html)
    assert tags.names["script"] == 2  # the data block and the page's own script
    assert not {"img", "iframe", "object", "embed", "link", "base"} & set(tags.names)
    assert not [attr for attr in tags.attrs if attr.startswith("on")]  # no event handler anywhere
    assert "&lt;/script&gt;&lt;script&gt;window.__xss" in html  # shown, as text
    # The data block parses back to the trace's own text.
    data = json.dumps(data_of(html), ensure_ascii=False)
    assert "\u2028" not in DATA_BLOCK.findall(html)[0]
    assert "<" not in DATA_BLOCK.findall(html)[0]
    assert "run" in data


@given(
    st.recursive(
        st.text() | st.integers() | st.none(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_json_for_script_never_holds_markup_and_reads_back(value: object) -> None:
    text = json_for_script(value)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == value


# -- bad input ----------------------------------------------------------------------------------------


def test_a_torn_trace_is_shown_and_says_so(tmp_path: Path) -> None:
    path = write(tmp_path / "torn.trace.jsonl", Run().calls(3).verify(0.5).end()[:-1])
    with path.open("a") as handle:
        handle.write('{"type": "note", "seq": 9, "t": 1.0, "st')  # a crash mid-write
    result = run_agentevals("report", path, "-o", tmp_path / "out.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (tmp_path / "out.html").read_text()
    problems = html[html.index('id="problems"') : html.index('id="run-1"')]
    assert "the last line is incomplete" in problems
    assert "no run_end" in problems
    assert 'data-field="steps">3<' in html
    assert "warning" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_trace_damaged_in_the_middle_shows_what_came_before_and_exits_1(tmp_path: Path) -> None:
    lines = [json.dumps(event) for event in Run().calls(4).end()]
    lines[3] = "{not json"
    path = tmp_path / "damaged.trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run_agentevals("report", path, "-o", tmp_path / "out.html", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    html = (tmp_path / "out.html").read_text()
    assert "line 4 is damaged" in html
    assert 'class="problems bad"' in html
    assert 'data-field="steps">2<' in html  # the two calls before the damaged line


def test_a_newer_version_trace_is_shown_as_far_as_it_can_be(tmp_path: Path) -> None:
    events = Run().calls(2).verify(1.0).end()
    events[0]["v"] = 2
    events.insert(2, {"type": "thought", "seq": 99, "t": 0.1, "step": 1, "text": "a kind from the future"})
    path = write(tmp_path / "newer.trace.jsonl", events)
    report = build_report([path])
    assert "written by trace format version 2" in report.problems[0]
    assert "1 event(s) of kinds it does not know" in report.problems[0]
    assert report.runs[0].metrics.steps == 2
    assert report.runs[0].metrics.verified_pass


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "the file is empty"),
        (b"# a README\n", "not a JSON object"),
        (b'{"type": "model_call"}\n', "not a run_start event"),
        (b'{"type": "run_start", "v": 0}\n', "format version 0"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not a JSON object"),
        (b'{"type": "run_start", "v": 1}\n', "run_start event lacks"),
    ],
)
def test_a_file_that_is_not_a_trace_is_one_clear_error(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "notes.trace.jsonl"
    path.write_bytes(content)
    with pytest.raises(TraceError, match=re.escape(said)):
        build_report([path])
    result = run_agentevals("report", path, "-o", tmp_path / "out.html", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.html").exists()


def test_no_trace_at_all_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no trace to report on"):
        build_report([tmp_path])
    assert "No run was recorded" in build_report([tmp_path], allow_empty=True).html()


# -- secrets ------------------------------------------------------------------------------------------


def test_a_report_that_would_hold_a_key_is_refused_naming_the_place(tmp_path: Path) -> None:
    key = make_fake_key("report")
    events = Run().call().tool("read_file", output=f"the key is {key}", path="env").call().end()
    path = write(tmp_path / "leaky.trace.jsonl", events)
    out = tmp_path / "out.html"
    result = run_agentevals("report", path, "-o", out, cwd=tmp_path)
    assert result.returncode == 2
    assert "step 1 of its transcript" in result.stderr
    assert str(path) in result.stderr
    assert key not in result.stderr
    assert key[:6] not in result.stderr  # its kind and length only (issue 35)
    assert f"API-key pattern ({len(key)} characters)" in result.stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".out.html*"))
    # The summary holds no transcript, so it is written; one naming the agent by the key is not.
    markdown = run_agentevals("report", "--format", "markdown", path, cwd=tmp_path)
    assert markdown.returncode == 0
    assert key not in markdown.stdout
    events[0]["agent"] = key
    markdown = run_agentevals("report", "--format", "markdown", write(path, events), cwd=tmp_path)
    assert markdown.returncode == 2
    assert "the Markdown summary" in markdown.stderr
    assert key not in markdown.stdout


def test_a_key_in_the_packed_step_list_is_found_and_placed(tmp_path: Path) -> None:
    key = make_fake_key("packed")
    # A check's name shows only in its step's line of the all-steps text (packed), on a step that is
    # neither first, last nor marked.
    run = Run().calls(5)
    run.verify(0.1, name=key)
    events = run.calls(30).end()
    # The fifth line of the first run's all-steps text: step 5's.
    with pytest.raises(ReportError, match=r"the data embedded in the page, at runs\[0\]\.lines_z\[4\]"):
        build_report([write(tmp_path / "packed.trace.jsonl", events)]).html()


def test_a_secret_environment_value_in_a_trace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "correct-horse-battery-" + "staple" * 2
    monkeypatch.setenv("MY_SERVICE_API_KEY", secret)
    path = write(tmp_path / "env.trace.jsonl", Run().call().note("connecting with " + secret).end())
    with pytest.raises(ReportError, match=r"the value of \$MY_SERVICE_API_KEY"):
        write_report(build_report([path]), tmp_path / "out.html")
    assert not (tmp_path / "out.html").exists()


# -- long runs stay light -----------------------------------------------------------------------------


def test_downsampling_keeps_the_extremes_of_every_bucket() -> None:
    run = Run()
    for i in range(5_000):
        run.call(read=100_000 if i == 1234 else 1000 + i % 7, output=10 if i != 4321 else 9_999)
    _, series = analyze(run.end())
    buckets = bucket_calls(series.calls)
    assert len(buckets) == MAX_BUCKETS < len(series.calls)
    assert sum(buckets.calls) == 5_000
    assert max(buckets.ctx_tokens) == 100_000  # the spike survives
    assert max(buckets.largest) == 100_000 + 10
    assert 1000 + 4321 % 7 + 9_999 in buckets.largest  # the largest output, the largest of its bucket
    assert min(min(buckets.ctx_a), min(buckets.ctx_b)) == min(c.context_pressure or 0 for c in series.calls)


def test_a_long_run_keeps_its_transcript_and_markers_bounded(tmp_path: Path) -> None:
    run = Run()
    for step in range(3_000):
        run.call(read=2000).tool("read_file", output="x" * 50, path=f"f{step}")
        run.checkpoint()
        if step % 500 == 0:
            run.tool("read_file", error="no such file", path="missing")
    events = run.end("error", error={"type": "RuntimeError", "message": "boom"})
    report = build_report([write(tmp_path / "long.trace.jsonl", events)])
    transcript = report.runs[0].transcript
    assert transcript.steps == 3_000
    assert len(transcript.lines) == 3_000
    assert transcript.sampled
    assert len(transcript.records) <= sum(TIER_CAPS) + LAST_STEPS + 3
    kept = {record.step for record in transcript.records}
    assert set(range(2_981, 3_001)) <= kept  # the last steps
    assert {1, 501, 1001, 1501, 2001, 2501} <= kept  # every failure (a tool error)
    html = report.html()
    glyphs = len(re.findall(r'class="marker k-checkpoint"', chart(html, "progress")))
    assert glyphs < 300  # 3,000 checkpoints, some hundreds of glyphs
    assert (
        sum(
            int(n)
            for n in re.findall(
                r'k-checkpoint" data-kind="checkpoint" data-step="\d+" data-count="(\d+)"',
                chart(html, "progress"),
            )
        )
        == 3_000
    )


def test_long_texts_are_cut_with_their_size_shown_and_the_rest_one_click_away(tmp_path: Path) -> None:
    output = "".join(f"line {i}\n" for i in range(4_000))
    path = write(
        tmp_path / "big.trace.jsonl", Run().call().tool("read_file", output=output, path="big").end()
    )
    html = page_of(path)
    assert output[:PREVIEW_CHARS] in html
    assert output[PREVIEW_CHARS:FULL_CHARS] in html
    assert output[FULL_CHARS : FULL_CHARS + 200] not in html
    assert f"cut at {FULL_CHARS:,} of {len(output):,} characters" in html
    assert "the rest: " in html
    assert "KB in all" in html


# -- markdown -----------------------------------------------------------------------------------------


def test_the_markdown_summary_has_the_headline_numbers_escaped(tmp_path: Path) -> None:
    events = Run().call(cost=0.5).verify(1.0).end()
    events[0]["agent"] = "a|b <script>x</script>"
    path = write(tmp_path / "md.trace.jsonl", events)
    result = run_agentevals("report", "--format", "markdown", path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "**1 run(s)** · **1 verified pass(es)**" in out
    assert "$0.5000" in out
    assert "a\\|b &lt;script&gt;" in out
    assert "<script>" not in out
    row = next(line for line in out.splitlines() if line.startswith("| 1."))
    assert row.count(" | ") == 8  # nine cells: nothing in the name broke the row


# -- the command and pytest ---------------------------------------------------------------------------


def test_agentevals_report_writes_the_page_and_prints_its_path(tmp_path: Path) -> None:
    write(tmp_path / "a.trace.jsonl", every_marker())
    result = run_agentevals("report", "a.trace.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("agentevals report: wrote report.html (1 run, ")
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")


RECORDING_TESTS = """
import pytest_agentevals as ae

def test_one(agentevals_recorder):
    ae.verification("one", True, progress=1.0)

def test_two(agentevals_recorder):
    ae.checkpoint({"n": 2}, name="cp " + "</script><script>alert(1)</script>")

def test_three():
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_pytest_writes_the_report_of_the_session_recorded_runs(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(RECORDING_TESTS)
    result = pytester.runpytest(
        "--agentevals-traces-dir=traces",
        "--agentevals-history=off",
        "--agentevals-report=out/report.html",
        *workers,
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["agentevals report: wrote *out/report.html (2 runs, *)"])
    html = (pytester.path / "out" / "report.html").read_text()
    assert html.count('<section class="run"') == 2
    assert "test_one" in html
    assert "test_two" in html
    assert "<script>alert(1)" not in html
    assert not list((pytester.path / "out").glob(".*tmp"))


def test_pytest_says_when_the_report_cannot_be_written(pytester: pytest.Pytester) -> None:
    key = make_fake_key("pytest")
    pytester.makepyfile(
        f"""
        import json, pytest_agentevals as ae

        def test_leaks(agentevals_recorder):
            ae.note("ok")
            # Written past the scrubber, as an edited trace would be.
            with open(agentevals_recorder.path, "a") as handle:
                event = {{"type": "note", "seq": 50, "t": 1.0, "step": 0, "message": {key!r}}}
                handle.write(json.dumps(event) + "\\n")
        """
    )
    result = pytester.runpytest(
        "--agentevals-traces-dir=traces", "--agentevals-history=off", "--agentevals-report=r.html"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["agentevals report: not written: refused to write the HTML report: *"])
    assert not (pytester.path / "r.html").exists()


def test_the_readme_shows_a_screenshot_of_the_example_runs_report() -> None:
    shot = REPO / "docs" / "report.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size < 600_000  # modest: a screenshot, not a poster
    assert "](docs/report.png)" in (REPO / "README.md").read_text()
