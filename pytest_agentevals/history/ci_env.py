"""Which commit, branch and CI run a test outcome belongs to: from the CI's environment, else git.

The option (`--agentevals-sha`, `--agentevals-run-id`) wins over both. Outside CI the run id is made
up per session, and a working tree with uncommitted changes gets its own "commit": the HEAD sha with a
digest of the diff, so a test fixed between two local runs is not mistaken for a flaky one.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Commit:
    sha: str | None  # None when neither the CI, git nor an option says
    branch: str | None
    run_id: str | None  # None outside CI: the caller makes one up
    provider: str  # "github", "gitlab", ... "git" or "none": where the values came from


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _github(env: Mapping[str, str]) -> Commit:
    run = _first(env, "GITHUB_RUN_ID")
    attempt = _first(env, "GITHUB_RUN_ATTEMPT")
    # A re-run of the same workflow run keeps GITHUB_RUN_ID: its attempt makes it another run.
    run_id = f"{run}-{attempt}" if run and attempt else run
    branch = _first(env, "GITHUB_HEAD_REF", "GITHUB_REF_NAME")
    return Commit(_first(env, "GITHUB_SHA"), branch, run_id, "github")


def _gitlab(env: Mapping[str, str]) -> Commit:
    branch = _first(env, "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME")
    return Commit(_first(env, "CI_COMMIT_SHA"), branch, _first(env, "CI_PIPELINE_ID", "CI_JOB_ID"), "gitlab")


def _circleci(env: Mapping[str, str]) -> Commit:
    run = _first(env, "CIRCLE_WORKFLOW_ID", "CIRCLE_BUILD_NUM")
    return Commit(_first(env, "CIRCLE_SHA1"), _first(env, "CIRCLE_BRANCH"), run, "circleci")


def _buildkite(env: Mapping[str, str]) -> Commit:
    build = _first(env, "BUILDKITE_BUILD_ID")
    retry = _first(env, "BUILDKITE_RETRY_COUNT")
    run_id = f"{build}-{retry}" if build and retry and retry != "0" else build
    return Commit(_first(env, "BUILDKITE_COMMIT"), _first(env, "BUILDKITE_BRANCH"), run_id, "buildkite")


def _jenkins(env: Mapping[str, str]) -> Commit:
    branch = _first(env, "CHANGE_BRANCH", "BRANCH_NAME", "GIT_BRANCH")
    return Commit(_first(env, "GIT_COMMIT"), branch, _first(env, "BUILD_TAG", "BUILD_NUMBER"), "jenkins")


def _azure(env: Mapping[str, str]) -> Commit:
    branch = _first(env, "SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCHNAME")
    return Commit(_first(env, "BUILD_SOURCEVERSION"), branch, _first(env, "BUILD_BUILDID"), "azure")


def _travis(env: Mapping[str, str]) -> Commit:
    branch = _first(env, "TRAVIS_PULL_REQUEST_BRANCH", "TRAVIS_BRANCH")
    return Commit(_first(env, "TRAVIS_COMMIT"), branch, _first(env, "TRAVIS_BUILD_ID"), "travis")


def _bitbucket(env: Mapping[str, str]) -> Commit:
    run = _first(env, "BITBUCKET_PIPELINE_UUID", "BITBUCKET_BUILD_NUMBER")
    return Commit(_first(env, "BITBUCKET_COMMIT"), _first(env, "BITBUCKET_BRANCH"), run, "bitbucket")


# (the variable that says we are on this CI, how to read it), in the order they are tried.
PROVIDERS: tuple[tuple[str, Callable[[Mapping[str, str]], Commit]], ...] = (
    ("GITHUB_ACTIONS", _github),
    ("GITLAB_CI", _gitlab),
    ("CIRCLECI", _circleci),
    ("BUILDKITE", _buildkite),
    ("JENKINS_URL", _jenkins),
    ("TF_BUILD", _azure),
    ("TRAVIS", _travis),
    ("BITBUCKET_BUILD_NUMBER", _bitbucket),
)


def from_ci(env: Mapping[str, str]) -> Commit | None:
    """What the CI's environment says, or None when this is not a CI we know."""
    for flag, read in PROVIDERS:
        if env.get(flag, "").strip():
            return read(env)
    return None


def _git(args: list[str], cwd: Path) -> bytes | None:
    import subprocess  # only a session in a repository starts git

    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def may_be_in_a_repository(cwd: Path) -> bool:
    """Whether git could find a repository from `cwd`: a `.git` (folder, or the file of a worktree or
    submodule) in it or a folder above, a folder above that is a bare repository, or `GIT_DIR` set.
    False means git would find none, so no git process is started for nothing (every session outside
    a repository paid one); True only means "ask git", which has the last word."""
    if os.environ.get("GIT_DIR"):
        return True
    try:
        places = {cwd.absolute(), cwd.resolve()}  # git walks the physical path; either way, ask it
    except OSError:
        return True
    for place in places:
        for folder in (place, *place.parents):
            if os.path.lexists(folder / ".git"):
                return True
            if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
                return True
    return False


def from_git(cwd: Path) -> Commit | None:
    """HEAD's sha and branch, the sha suffixed with a digest of the diff when the tree has changes."""
    if not may_be_in_a_repository(cwd):
        return None
    # HEAD's sha and its branch name in one git process (both fail together: no commit yet, no repo).
    head = _git(["rev-parse", "HEAD", "--abbrev-ref", "HEAD"], cwd)
    if head is None:
        return None
    lines = head.decode().split("\n")
    sha = lines[0].strip()
    branch = lines[1].strip() if len(lines) > 1 and lines[1].strip() else None
    diff = _git(["diff", "HEAD", "--no-ext-diff", "--binary"], cwd)
    if diff:
        sha = f"{sha}+dirty.{hashlib.sha256(diff).hexdigest()[:12]}"
    return Commit(sha, None if branch == "HEAD" else branch, None, "git")


def resolve_commit(
    cwd: Path,
    env: Mapping[str, str],
    *,
    sha: str | None = None,
    run_id: str | None = None,
    branch: str | None = None,
) -> Commit:
    """Commit, branch and run: the explicit values first, then the CI, then git (for sha and branch)."""
    found = from_ci(env)
    if found is None or found.sha is None:
        git = from_git(cwd) if sha is None or branch is None else None
        if git is not None:
            found = Commit(
                found.sha if found and found.sha else git.sha,
                found.branch if found and found.branch else git.branch,
                found.run_id if found else None,
                found.provider if found else "git",
            )
    found = found or Commit(None, None, None, "none")
    return Commit(sha or found.sha, branch or found.branch, run_id or found.run_id, found.provider)


def local_run_id() -> str:
    """A run id for a session outside CI: unique, so each local session is a run of its own."""
    return "local-" + uuid.uuid4().hex[:12]
