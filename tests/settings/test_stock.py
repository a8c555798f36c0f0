"""Stock normalization rules: each folds what changes in real tool output (pytest's own output, `uname
-a` of real machines, temporary folders, pids, dates) and leaves text that only looks alike; turned
on by name (and version) in `replay_normalize`, a bad name or version one error naming the entry."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentevals.errors import ConfigError
from pytest_agentevals.replay import Normalizer
from pytest_agentevals.settings import rules
from pytest_agentevals.settings.stock import STOCK

pytest_plugins = ["pytester"]

# Captured from pytest 9.2.0 on Linux (`python -m pytest --durations=2 test_s.py`), then the same
# suite another time: only the times (and the '=' the summary line is centred with) differ.
PYTEST_RUN_1 = """\
test_s.py .F.                                                            [100%]

=================================== FAILURES ===================================
____________________________________ test_b ____________________________________
E   assert 1 == 2

test_s.py:3: AssertionError
============================= slowest 2 durations ==============================
0.02s setup    test_s.py::test_c
0.01s call     test_s.py::test_a
=========================== short test summary info ============================
FAILED test_s.py::test_b - assert 1 == 2
========================= 1 failed, 2 passed in 0.93s ==========================
"""
PYTEST_RUN_2 = (
    PYTEST_RUN_1.replace("0.02s setup", "0.03s setup")
    .replace("0.01s call", "0.15s call")
    .replace(
        "========================= 1 failed, 2 passed in 0.93s ==========================",
        "======================== 1 failed, 2 passed in 12.07s ==========================",
    )
)
PYTEST_QUIET = f"{'..':<73}[100%]\n2 passed, 1 deselected in 1.00s\n"
PYTEST_LONG = "==================== 3 passed in 75.20s (0:01:15) ====================\n"

# `uname -a` of real machines: this one's (a Firecracker VM), an AWS Ubuntu host, a Mac.
UNAME_HERE = "Linux vm 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux"
UNAME_UBUNTU = (
    "Linux ip-172-31-5-10 6.8.0-1015-aws #16~22.04.1-Ubuntu SMP Mon Aug 19 19:38:17 UTC 2024 "
    "x86_64 x86_64 x86_64 GNU/Linux"
)
UNAME_MAC = (
    "Darwin MacBook-Pro.local 23.1.0 Darwin Kernel Version 23.1.0: Mon Oct  9 21:27:24 PDT 2023; "
    "root:xnu-10002.41.9~6/RELEASE_ARM64_T6000 arm64"
)


def fold(names: list[Any], text: str) -> tuple[str, list[tuple[str, str]]]:
    """`text` as a tool result, folded by the named stock rules: the folded text, and (rule, text)
    of each fold."""
    normalizer = Normalizer(rules("replay_normalize", names), "test")
    body = {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": text}]}]}
    folded, folds = normalizer.fold(body)
    return folded["messages"][0]["content"][0]["content"], [(f.rule, f.text) for f in folds]


def test_pytest_timing_folds_two_real_runs_to_the_same_text_and_keeps_the_outcome() -> None:
    one, folds = fold(["pytest-timing"], PYTEST_RUN_1)
    two, _ = fold(["pytest-timing"], PYTEST_RUN_2)
    assert one == two
    assert "<pytest-timing.banner>1 failed, 2 passed in <pytest-timing>\n" in one
    assert "<pytest-timing.durations>s setup    test_s.py::test_c" in one
    assert ("pytest-timing", "0.93s ==========================") in folds
    # What says whether the suite passed stays compared.
    failing = PYTEST_RUN_2.replace("1 failed, 2 passed", "3 passed    ")
    assert fold(["pytest-timing"], failing)[0] != one
    assert fold(["pytest-timing"], PYTEST_QUIET)[0].endswith("2 passed, 1 deselected in <pytest-timing>\n")
    assert fold(["pytest-timing"], PYTEST_LONG)[1] == [
        ("pytest-timing", "75.20s (0:01:15) ===================="),
        ("pytest-timing.banner", "==================== "),
    ]


def test_pytest_timing_folds_a_live_pytest_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    out = "\n".join(pytester.runpytest_inprocess("-p", "no:agentevals", "--durations=0", "-vv").outlines)
    folded, folds = fold(["pytest-timing"], out)
    assert [rule for rule, _ in folds].count("pytest-timing") == 1
    assert "2 passed in <pytest-timing>" in folded
    assert "<pytest-timing.durations>s call" in folded


@pytest.mark.parametrize(
    "text",
    [
        "the build took 3.5s in total",  # prose with a time
        "I ran it in 0.5s",
        "2 passed the review in 0.3s of thought, said nobody",  # not at a line's start
        "0.25s later it called test_x",  # not a --durations line
        "version 1.02s",
    ],
)
def test_pytest_timing_leaves_other_times_alone(text: str) -> None:
    assert fold(["pytest-timing"], text) == (text, [])


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (UNAME_HERE, "Linux <uname> x86_64 GNU/Linux"),
        (UNAME_UBUNTU, "Linux <uname> x86_64 x86_64 x86_64 GNU/Linux"),
        (UNAME_MAC, "Darwin <uname> arm64"),
        (" - OS Version: Linux 6.8.0-1015-aws\n", " - OS Version: Linux <uname.release>\n"),
        ("OS Version: Darwin 23.1.0", "OS Version: Darwin <uname.release>"),
    ],
)
def test_uname_folds_real_machines_output(text: str, kept: str) -> None:
    assert fold(["uname"], text)[0] == kept


def test_two_machines_uname_fold_alike_and_the_architecture_is_kept() -> None:
    assert fold(["uname"], UNAME_HERE)[0] == fold(["uname"], UNAME_UBUNTU.replace(" x86_64 x86_64", ""))[0]
    assert fold(["uname"], UNAME_HERE)[0] != fold(["uname"], UNAME_HERE.replace("x86_64", "aarch64"))[0]


@pytest.mark.parametrize(
    "text",
    [
        "Linux is a kernel; version 6 came out",
        "python 3.11.7 on linux",
        "see Linux 6.8 release notes",  # no patch level: a release name, not a kernel string
        "Linux-6.8.0-1015-aws-x86_64-with-glibc2.35",  # platform.platform(): no space after Linux
    ],
)
def test_uname_leaves_other_text_alone(text: str) -> None:
    assert fold(["uname"], text) == (text, [])


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("rootdir: /tmp/pytest-of-root/pytest-161/test_c0", "rootdir: <tmp-paths>/test_c0"),
        ("wrote /tmp/tmpxyk7u0um/out.txt", "wrote <tmp-paths>/out.txt"),
        ("cd /var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/tmp1 && ls", "cd <tmp-paths>/tmp1 && ls"),
        ("/private/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/x", "<tmp-paths>/x"),
    ],
)
def test_tmp_paths_folds_temporary_folders(text: str, kept: str) -> None:
    assert fold(["tmp-paths"], text)[0] == kept


@pytest.mark.parametrize(
    "text", ["/tmp/notes.txt", "/tmp/tmp.txt", "/tmp/tmpfiles/x", "/home/dev/tmp/abc", "/var/folders/"]
)
def test_tmp_paths_leaves_other_paths_alone(text: str) -> None:
    assert fold(["tmp-paths"], text) == (text, [])


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("pid 7857", "pid <pids>"),
        ("Started server process [PID: 41021]", "Started server process [PID: <pids>]"),
        ("worker pid=123 exited", "worker pid=<pids> exited"),
    ],
)
def test_pids_folds_process_ids(text: str, kept: str) -> None:
    assert fold(["pids"], text)[0] == kept


@pytest.mark.parametrize("text", ["rapid 12 tests", "pidgin 3", "step 4242 of 5000", "port 8080"])
def test_pids_leaves_other_numbers_alone(text: str) -> None:
    assert fold(["pids"], text) == (text, [])


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("made at 2026-12-02T19:48:51Z.", "made at <dates>."),
        ("2026-12-02 19:48:51,123 INFO start", "<dates> INFO start"),
        ("due 2026-12-02, then", "due <dates>, then"),
        ("Wed Dec  2 19:48:51 UTC 2026", "<dates.date>"),
        ("Date: Wed, 02 Dec 2026 19:48:51 GMT", "Date: <dates.date>"),
    ],
)
def test_dates_folds_dates_and_times(text: str, kept: str) -> None:
    assert fold(["dates"], text)[0] == kept


@pytest.mark.parametrize("text", ["version 2026-13-45", "id 1234-56-78", "order 2026-12-022", "Wed Dec 2"])
def test_dates_leaves_what_is_no_date_alone(text: str) -> None:
    assert fold(["dates"], text) == (text, [])


def test_a_stock_rule_is_named_versioned_and_says_so_in_its_source() -> None:
    newest = rules("replay_normalize", ["uname"])
    pinned = rules("replay_normalize", ["uname:1"])
    table = rules("replay_normalize", [{"stock": "uname", "version": 1}])
    assert [rule.name for rule in newest] == ["uname", "uname.release"]
    assert newest == pinned == table
    assert {rule.source for rule in newest} == {"stock rule uname v1"}
    assert set(STOCK) == {"pytest-timing", "uname", "tmp-paths", "pids", "dates"}
    # Beside the user's own rules, in the order given.
    mixed = rules(
        "replay_normalize", ["pids", {"name": "today", "where": "/system", "pattern": "Today is (.+)"}]
    )
    assert [rule.name for rule in mixed] == ["pids", "today"]


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            "pytest-timings",
            "replay_normalize[0]: 'pytest-timings' is no stock rule (use one of dates, pids, ",
        ),
        ("uname:7", "replay_normalize[0]: uname has no version 7 (use one of its versions: 1)"),
        ({"stock": "uname", "version": "one"}, "replay_normalize[0]: uname has no version 'one'"),
        ({"stock": "uname", "versoin": 1}, "replay_normalize[0].versoin: unknown key of a stock rule"),
    ],
)
def test_a_bad_stock_reference_is_one_error_naming_the_entry(entry: Any, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        rules("replay_normalize", [entry])
    assert str(raised.value).startswith(said)


def test_a_stock_rule_named_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="two rules are named 'pids'"):
        rules("replay_normalize", ["pids", "pids:1"])
