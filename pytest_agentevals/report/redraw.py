"""A watched run's section drawn again at each of the live console's updates, from what did not
change since the last one.

A run that grows by an event or two between updates mostly keeps its section as it was: its
charts change when a model call, a check or a marker arrives (or a number their legends show), and
its transcript's records when a step is added or an open step gains an event. `Redraw` keeps, per
run, what it drew the last time with what it drew it from, and draws again only what differs:

- the charts' buckets and scales (`html.draw`) and the series data the script reads, while
  `html.draw_inputs` (the series only grow: their lengths say when they changed) is the same;
- the charts' SVG, while `html.charts_inputs` is the same;
- each transcript record's HTML, while the record is the same one (the transcript builder keeps a
  finished record, and an open step's while it gains no event);
- the secret check's verdict (`secrets.Checked`): every text served is checked, and one found
  clean at the last update, served again unchanged, is not searched again.

What it gives is what `html.run_section` and `html.run_data` give for the run from scratch
(tests/report/test_live.py compares them after every update of a growing run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from . import secrets
from .downsample import CallBuckets, bucket_calls, series_json
from .html import (
    ChartMemo,
    Drawn,
    SectionParts,
    charts_html,
    charts_inputs,
    draw,
    draw_inputs,
    json_for_script,
    record_html,
    run_data,
    section_parts,
)
from .run import RunView
from .transcript import StepRecord

STATES_KEPT = 8  # the states of a section remembered, for pages a few updates behind (other tabs)


class Redraw:
    """One run's section and data, kept between updates (see the module's docstring)."""

    def __init__(self, context_windows: Mapping[str, int] | None = None) -> None:
        self._context_windows = context_windows
        # The inputs it was drawn from, the charts' buckets, the series data and its JSON.
        self._drawn: tuple[tuple[Any, ...], Drawn, dict[str, Any], str] | None = None
        self._charts: tuple[tuple[Any, ...], str] | None = None
        self._calls: tuple[int, CallBuckets] | None = None
        self._chart_memo: ChartMemo = {}  # each chart, with what it was drawn from
        self._records: dict[int, tuple[StepRecord, int, str]] = {}  # id -> the record, its run, its HTML
        self.checked = secrets.Checked()
        self._states: dict[int, frozenset[str]] = {}  # a state served -> the ids of its parts
        self._state = 0
        self._ids: dict[str, str] = {}  # the last state's parts: text -> id

    def draw(self, run: RunView) -> Drawn:
        """`html.draw(run)`, drawn again only when what it draws from changed."""
        return self._drawn_now(run)[1]

    def _drawn_now(self, run: RunView) -> tuple[tuple[Any, ...], Drawn, dict[str, Any], str]:
        inputs = draw_inputs(run)
        if self._drawn is None or self._drawn[0] != inputs:
            count = len(run.series.calls)  # the calls' buckets change only when a call is added
            if self._calls is None or self._calls[0] != count:
                self._calls = (count, bucket_calls(run.series.calls))
            drawn = draw(run, self._context_windows, self._calls[1])
            series = series_json(run.series, drawn.calls, drawn.progress)
            self._drawn = (inputs, drawn, series, json_for_script(series))
        return self._drawn

    def parts(self, index: int, run: RunView) -> tuple[SectionParts, dict[str, Any]]:
        """Run `index`'s section in its parts, as `html.section_parts` draws it, and its data for the
        script, as `html.run_data(..., lines=False)` makes it."""
        _, drawn, series, _ = self._drawn_now(run)
        inputs = charts_inputs(run)
        if self._charts is None or self._charts[0] != inputs:
            self._charts = (inputs, charts_html(run, drawn, self._chart_memo))
        used: dict[int, tuple[StepRecord, int, str]] = {}

        def record(run_index: int, step: StepRecord) -> str:
            known = self._records.get(id(step))
            if known is None or known[0] is not step or known[1] != run_index:
                known = (step, run_index, record_html(run_index, step))
            used[id(step)] = known  # held, so its id is not another record's while it is kept
            return known[2]

        parts = section_parts(index, run, drawn, charts=self._charts[1], record=record)
        self._records = used
        shown, _ = run_data(run, drawn, lines=False, series=series)
        return parts, shown

    def served(self, index: int, run: RunView, what: str, have: int | None = None) -> dict[str, Any]:
        """Run `index`'s part of an update, every text of it through the secret check (`ReportError`
        naming the place, as the static report's check): its data, and its section — whole
        (`html`), or, for a page that says which state of the section it holds (`have`, a `state`
        this gave before), as its parts, each `[id, html]`, the html left out (null) of a part the
        page holds already (`outer`: the section's own content; `transcript`: its transcript's)."""
        parts, shown = self.parts(index, run)
        fragments = parts.fragments()
        series, series_text = self._drawn_now(run)[2:]
        rest = {key: value for key, value in shown.items() if key != "series"}
        self.checked.check(
            [
                *(secrets.Placed(f.place, f.text) for f in fragments),
                # The data as two texts: its series (the same until the series grow) and the rest.
                secrets.Placed(f"{parts.where}: its data, series", series_text, series),
                secrets.Placed(f"{parts.where}: its data", json_for_script(rest), rest),
            ],
            what,
        )
        if have is None:
            return {"index": index, "html": "".join(f.text for f in fragments), "data": shown}
        known = self._states.get(have, frozenset())
        ids: dict[str, str] = {}  # text -> its part's id
        taken: set[str] = set()
        listed: list[list[list[str | None]]] = []
        for group in (parts.outer, parts.transcript):
            listed.append([])
            for fragment in group:
                text = fragment.text
                part = ids.get(text) or self._ids.get(text) or _digest(text)
                ids.setdefault(text, part)
                serial = 1
                unique = part
                while unique in taken:  # the same text twice in one section: each a part of its own
                    serial += 1
                    unique = f"{part}-{serial}"
                taken.add(unique)
                listed[-1].append([unique, None if unique in known else text])
        self._state += 1
        self._states[self._state] = frozenset(taken)
        while len(self._states) > STATES_KEPT:
            del self._states[next(iter(self._states))]
        self._ids = ids
        return {
            "index": index,
            "state": self._state,
            "outer": listed[0],
            "transcript": listed[1],
            "data": shown,
        }


def _digest(text: str) -> str:
    """A part's id: the same text, the same id."""
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=9).hexdigest()


__all__ = ["Redraw"]
