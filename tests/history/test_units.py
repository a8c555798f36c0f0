"""The pure parts of the flakiness history: Wilson intervals, verdicts, budget decisions, quarantine,
the CI environment and variants."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest

from pytest_agentevals.errors import ConfigError
from pytest_agentevals.history import ci_env, quarantine
from pytest_agentevals.history.budgets import BREACH, NOT_ENOUGH_DATA, OK, WARN, decide
from pytest_agentevals.history.store import RunFinal, RunLayer, VerdictCount
from pytest_agentevals.history.variant import canonical, from_properties
from pytest_agentevals.history.verdicts import FAIL, FLAKY, PASS, layer_metrics, verdict_of, verdicts
from pytest_agentevals.stats import demonstrated_upper, wilson

# -- statistics ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (3, 10, 0.1078, 0.6032),  # textbook value
        (12, 40, 0.1807, 0.4543),
        (0, 30, 0.0, 0.1135),
        (30, 30, 0.8865, 1.0),
    ],
)
def test_wilson_interval(k: int, n: int, low: float, high: float) -> None:
    interval = wilson(k, n)
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)


def test_wilson_without_data_is_everything_and_rejects_nonsense() -> None:
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_demonstrated_upper_bound_is_the_rule_of_three() -> None:
    assert demonstrated_upper(30) == pytest.approx(0.0950, abs=1e-4)
    assert demonstrated_upper(300) == pytest.approx(3 / 300, rel=0.01)
    assert demonstrated_upper(0) == 1.0


# -- verdicts --------------------------------------------------------------------------------------


def test_verdict_of_passes_and_failures() -> None:
    assert verdict_of(2, 0) == PASS
    assert verdict_of(0, 1) == FAIL
    assert verdict_of(1, 1) == FLAKY
    with pytest.raises(ValueError):
        verdict_of(0, 0)


def _counts(layer: str, n: int, flaky: int, *, test: str = "t", start: int = 0) -> list[VerdictCount]:
    """n verdicts of a layer, the first `flaky` of them FLAKY, each on its own commit."""
    return [
        VerdictCount(f"{test}{i % 7}", "", layer, f"sha{start + i}", 1, 1 if i < flaky else 0, start + i)
        for i in range(n)
    ]


def test_layer_metrics_keep_a_window_of_recent_verdicts_and_name_the_worst() -> None:
    # 10 old FLAKY verdicts fall out of a window of 40 once 40 clean ones come after them.
    old = _counts("resume", 10, 10, start=0)
    new = _counts("resume", 40, 0, start=100)
    metrics = layer_metrics("resume", verdicts(old + new), window=40)
    assert (metrics.verdicts, metrics.flaky) == (40, 0)
    assert metrics.demonstrated == pytest.approx(demonstrated_upper(40))
    wide = layer_metrics("resume", verdicts(old + new), window=50)
    assert (wide.verdicts, wide.flaky) == (50, 10)
    assert wide.demonstrated is None
    assert wide.offenders[0].flaky == 2
    assert wide.offenders[0].test_id in {"t0", "t1", "t2"}


def test_quarantined_tests_are_left_out_of_the_numbers() -> None:
    counts = _counts("step", 5, 5, test="bad") + _counts("step", 5, 0, test="good", start=10)
    metrics = layer_metrics("step", verdicts(counts), window=200, ignore=lambda t: t.startswith("bad"))
    assert (metrics.verdicts, metrics.flaky) == (5, 0)


def test_false_red_counts_runs_red_only_because_of_flaky_tests() -> None:
    counts = [
        VerdictCount("flaky", "", "resume", "c1", 1, 1, 1),
        VerdictCount("broken", "", "resume", "c2", 0, 1, 2),
        VerdictCount("flaky", "", "resume", "c2", 1, 0, 3),
    ]
    run_layers = [RunLayer(run, "resume", last) for run, last in (("r1", 1), ("r2", 2), ("r3", 4))]
    failing = [
        RunFinal("r1", "c1", "flaky", "", "resume", "failed", 1),  # red, only because of a flaky test
        RunFinal("r3", "c2", "broken", "", "resume", "failed", 3),  # red for real
    ]
    metrics = layer_metrics("resume", verdicts(counts), window=200, run_layers=run_layers, failing=failing)
    fr = metrics.false_red
    assert (fr.runs, fr.red, fr.false_red) == (3, 2, 1)
    assert fr.rate == pytest.approx(1 / 3)
    # Only the window's most recent runs count: r3 and r2, of which r3 went red for real.
    recent = layer_metrics("resume", verdicts(counts), window=2, run_layers=run_layers, failing=failing)
    assert (recent.false_red.runs, recent.false_red.red, recent.false_red.false_red) == (2, 1, 0)


# -- budget decisions, with their numbers ----------------------------------------------------------


def _decide(layer: str, n: int, k: int, budget: float, min_samples: int = 30) -> tuple[str, str]:
    metrics = layer_metrics(layer, verdicts(_counts(layer, n, k)), window=1000)
    decision = decide(metrics, budget, min_samples)
    return decision.status, decision.reason


def test_marathon_breaches_when_the_lower_bound_exceeds_the_budget() -> None:
    status, reason = _decide("marathon", 40, 20, 0.20)  # 50%, 95% CI 35.2-64.8%
    assert status == BREACH
    assert reason == (
        "20 FLAKY of 40 verdicts; rate 50.0% (95% CI 35.2%-64.8%) vs budget 20.0%: lower bound above budget"
    )


def test_marathon_warns_when_only_the_estimate_exceeds_the_budget() -> None:
    status, reason = _decide("marathon", 40, 12, 0.20)  # 30%, 95% CI 18.1-45.4%
    assert status == WARN
    assert "rate 30.0% (95% CI 18.1%-45.4%) vs budget 20.0%: estimate above budget" in reason


def test_marathon_within_budget_is_ok() -> None:
    status, reason = _decide("marathon", 40, 4, 0.20)
    assert status == OK
    assert reason == "4 FLAKY of 40 verdicts; rate 10.0% (95% CI 4.0%-23.1%) vs budget 20.0%"


def test_below_min_samples_is_not_enough_data_however_bad_it_looks() -> None:
    status, reason = _decide("marathon", 20, 15, 0.20)
    assert status == NOT_ENOUGH_DATA
    assert reason == "15 FLAKY of 20 verdicts; 20 < min_samples 30"


def test_zero_budget_breaches_on_any_flaky_verdict_even_with_little_data() -> None:
    status, reason = _decide("step", 3, 1, 0.0)
    assert status == BREACH
    assert reason == "1 FLAKY of 3 verdicts; the budget is 0: any flaky verdict breaches"


def test_zero_budget_clean_layer_reports_what_it_demonstrated() -> None:
    assert _decide("replay", 10, 0, 0.0)[0] == NOT_ENOUGH_DATA
    status, reason = _decide("replay", 60, 0, 0.0)
    assert status == OK
    assert reason == "0 FLAKY of 60 verdicts; flaky < 4.9% demonstrated (95%)"


# -- quarantine ------------------------------------------------------------------------------------


def test_quarantine_file_is_read_and_matched(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(
        "quarantine:\n"
        "  - test: tests/test_a.py::test_net\n"
        "    owner: alice\n"
        "    reason: DNS flaps (INFRA-1)\n"
        "    expires: 2030-01-31\n"
        "  - test: tests/test_a.py::test_old[2]\n"
        "    owner: bob\n"
        "    reason: old\n"
        "    expires: '2020-01-01'\n"
    )
    q = quarantine.load(path, today=dt.date(2029, 12, 1))  # 2030-01-31 is within a year of it
    today = dt.date(2025, 6, 1)
    assert q.protects("tests/test_a.py::test_net", today) is not None
    assert q.protects("tests/test_a.py::test_net[seed=3]", today) is not None  # every parametrization
    assert q.protects("tests/test_a.py::test_network", today) is None
    assert q.protects("tests/test_a.py::test_old[2]", today) is None  # expired
    assert [e.test for e in q.expired(today)] == ["tests/test_a.py::test_old[2]"]
    assert not q.entries[0].expired(dt.date(2030, 1, 31))  # valid through its expiry day
    assert q.entries[0].expired(dt.date(2030, 2, 1))


def test_missing_quarantine_file_is_empty(tmp_path: Path) -> None:
    assert quarantine.load(tmp_path / "absent.yaml").entries == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("quarantine: [{test: a, owner: b, reason: c}]", "entry 1 (a) expires: is missing"),
        ("quarantine: [{test: a, owner: b, reason: c, expires: soon}]", "'soon' is not a date"),
        ("quarantine: [{test: a, reason: c, expires: 2030-01-01}]", "entry 1 (a) owner: is missing"),
        ("quarantine: [{test: a, owner: b, reason: c, expires: 2030-01-01, why: x}]", "why: unknown field"),
        ("quarantine: [a, b", "is not valid YAML"),
        ("tests: []", "tests: unknown key"),
        ("!!python/object:os.system {}", "is not valid YAML"),  # the safe loader refuses it
    ],
)
def test_bad_quarantine_file_names_the_file_and_the_fix(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as excinfo:
        quarantine.load(path)
    assert str(path) in str(excinfo.value)
    assert message in str(excinfo.value)


# -- where a commit and run come from --------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {
                "GITHUB_ACTIONS": "true",
                "GITHUB_SHA": "a1",
                "GITHUB_REF_NAME": "main",
                "GITHUB_RUN_ID": "77",
                "GITHUB_RUN_ATTEMPT": "2",
            },
            ("a1", "main", "77-2", "github"),
        ),
        (
            {
                "GITHUB_ACTIONS": "true",
                "GITHUB_SHA": "a1",
                "GITHUB_HEAD_REF": "feature",
                "GITHUB_REF_NAME": "9/merge",
                "GITHUB_RUN_ID": "77",
            },
            ("a1", "feature", "77", "github"),
        ),
        (
            {"GITLAB_CI": "true", "CI_COMMIT_SHA": "b2", "CI_COMMIT_REF_NAME": "dev", "CI_PIPELINE_ID": "5"},
            ("b2", "dev", "5", "gitlab"),
        ),
        (
            {"CIRCLECI": "true", "CIRCLE_SHA1": "c3", "CIRCLE_BRANCH": "x", "CIRCLE_WORKFLOW_ID": "w"},
            ("c3", "x", "w", "circleci"),
        ),
        (
            {
                "BUILDKITE": "true",
                "BUILDKITE_COMMIT": "d4",
                "BUILDKITE_BRANCH": "y",
                "BUILDKITE_BUILD_ID": "b",
                "BUILDKITE_RETRY_COUNT": "1",
            },
            ("d4", "y", "b-1", "buildkite"),
        ),
        (
            {"JENKINS_URL": "http://j", "GIT_COMMIT": "e5", "BRANCH_NAME": "z", "BUILD_TAG": "jenkins-x-3"},
            ("e5", "z", "jenkins-x-3", "jenkins"),
        ),
        (
            {
                "TF_BUILD": "True",
                "BUILD_SOURCEVERSION": "f6",
                "BUILD_SOURCEBRANCHNAME": "m",
                "BUILD_BUILDID": "9",
            },
            ("f6", "m", "9", "azure"),
        ),
    ],
)
def test_commit_and_run_come_from_the_ci(
    env: dict[str, str], expected: tuple[str, ...], tmp_path: Path
) -> None:
    commit = ci_env.resolve_commit(tmp_path, env)
    assert (commit.sha, commit.branch, commit.run_id, commit.provider) == expected


def test_options_win_over_the_ci(tmp_path: Path) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "a1", "GITHUB_RUN_ID": "77"}
    commit = ci_env.resolve_commit(tmp_path, env, sha="mine", run_id="r")
    assert (commit.sha, commit.run_id) == ("mine", "r")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_commit_comes_from_git_outside_ci_and_a_dirty_tree_is_other_code(tmp_path: Path) -> None:
    assert ci_env.resolve_commit(tmp_path, {}).sha is None  # not a repository: unknown, never judged
    _git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    clean = ci_env.resolve_commit(tmp_path, {})
    assert (clean.sha, clean.branch, clean.run_id, clean.provider) == (head, "trunk", None, "git")
    (tmp_path / "a.py").write_text("x = 2\n")
    first = ci_env.resolve_commit(tmp_path, {}).sha
    (tmp_path / "a.py").write_text("x = 3\n")
    second = ci_env.resolve_commit(tmp_path, {}).sha
    assert first is not None
    assert first.startswith(head + "+dirty.")
    assert second is not None
    assert second != first


def test_outside_a_repository_no_git_process_is_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True).returncode != 0
    monkeypatch.delenv("GIT_DIR", raising=False)

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a git process was started: {args}")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert not ci_env.may_be_in_a_repository(tmp_path)
    assert ci_env.resolve_commit(tmp_path, {}) == ci_env.Commit(None, None, None, "none")


def _commit(cwd: Path, name: str) -> str:
    (cwd / name).write_text(name)
    _git(cwd, "add", name)
    _git(cwd, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", name)
    return _git(cwd, "rev-parse", "HEAD")


def test_the_commit_is_what_git_says_for_every_shape_of_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "trunk")
    assert ci_env.may_be_in_a_repository(repo)
    assert ci_env.from_git(repo) is None  # no commit yet: git knows no HEAD
    first = _commit(repo, "a")
    (repo / "sub").mkdir()
    assert ci_env.from_git(repo / "sub") == ci_env.Commit(first, "trunk", None, "git")
    _git(repo, "pack-refs", "--all")  # the branch's ref only in packed-refs now
    second = _commit(repo, "b")
    _git(repo, "pack-refs", "--all")
    assert ci_env.from_git(repo) == ci_env.Commit(second, "trunk", None, "git")
    _git(repo, "checkout", "-q", "--detach", first)  # detached HEAD: a commit, no branch
    assert ci_env.from_git(repo) == ci_env.Commit(first, None, None, "git")
    _git(repo, "checkout", "-q", "trunk")
    worktree = tmp_path / "wt"  # a linked worktree: `.git` is a file naming its git folder
    _git(repo, "worktree", "add", "-q", "-b", "side", str(worktree), first)
    assert (worktree / ".git").is_file()
    assert ci_env.from_git(worktree) == ci_env.Commit(first, "side", None, "git")
    link = tmp_path / "link"  # a link into the repository: git resolves it, and so is it found
    link.symlink_to(repo / "sub")
    assert ci_env.from_git(link) == ci_env.Commit(second, "trunk", None, "git")
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert ci_env.from_git(bare) == ci_env.Commit(second, "trunk", None, "git")


# -- variants --------------------------------------------------------------------------------------


def test_variant_is_canonical_json_of_what_the_properties_say() -> None:
    assert canonical({}) == ""
    assert canonical({"seed": 3, "model": "m"}) == '{"model":"m","seed":3}'
    layer, variant = from_properties(
        [
            ("agentevals.layer", "marathon"),
            ("agentevals.variant", '{"seed":3}'),
            ("agentevals.variant.model", "m"),
            ("other", "x"),
        ]
    )
    assert (layer, variant) == ("marathon", '{"model":"m","seed":3}')
    assert from_properties([]) == (None, "")


@pytest.mark.parametrize("expires", ["9999-12-31", "2027-12-03"])
def test_a_quarantine_that_ends_beyond_the_horizon_is_refused(tmp_path: Path, expires: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(f"quarantine: [{{test: a, owner: b, reason: c, expires: {expires}}}]\n")
    today = dt.date(2026, 12, 1)
    with pytest.raises(ConfigError, match=rf"entry 1 \(a\) expires: {expires} is more than 366 days away"):
        quarantine.load(path, today=today)
    path.write_text("quarantine: [{test: a, owner: b, reason: c, expires: 2027-12-02}]\n")  # a year and a day
    assert quarantine.load(path, today=today).entries[0].expires == dt.date(2027, 12, 2)
