"""The repository's own layout: `pytest -m LAYER` at the root runs that layer of the example."""

from __future__ import annotations

import pytest

from ..conftest import REPO

COLLECT = ["--co", "-q", "-p", "no:cacheprovider", "--agentevals-history=off"]


def test_dash_m_at_the_root_collects_each_layer_of_the_example(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One collection for the layers: it walks the whole suite. pytest.main at the root in this
    # process (pytester drops what the run imports): the layout is what is tested, not a process, and
    # a process of its own imported every test module again, which a session of the suite (each xdist
    # worker collects every test) has already imported: 12 s -> under 1 s there.
    monkeypatch.chdir(REPO)
    done = pytester.runpytest_inprocess(*COLLECT, "-m", "step or replay or resume")
    assert done.ret == 0, done.stdout.str() + done.stderr.str()
    collected = done.outlines
    # The step layer: the example's golden step cases.
    assert "goldens/taskrunner.yaml::step-16-tool-choice" in collected
    assert any(line.startswith("goldens/taskrunner-stall.yaml::") for line in collected)
    # The replay layer: the example's recorded runs, replayed by their tests.
    assert "tests/replay/test_example.py::test_a_recorded_run_replays_offline" in collected
    # The resume layer: the example's checkpoint fixtures, booted by their tests.
    assert "fixtures/test_resume_examples.py::test_next_leg_after_compaction" in collected
