"""What every pytest session pays for the plugin being installed, side by side with the same session
without it:

- `one test`: a folder with one plain test, `pytest -q` — the plugin with its defaults (the history
  on, as every user gets it) and with `--agentevals-history=off` (the plugin's load alone);
- `collect the suite`: `pytest --co tests` with the plugin against bare pytest collecting the same
  Python tests (the layers' markers left unregistered: `-o addopts=` drops `--strict-markers`);
- `collect the root`: `pytest --co` of this repository at its root — the suite and the example's
  four layers (goldens, cassettes, fixtures, marathons: what only the plugin collects) — against the
  same bare collection of the suite: what the example's pyramid adds on top;
- `import`: `python -c "import pytest_agentevals.plugin"` against `python -c "import pytest"`, and
  how many of the package's modules loading the plugin imports.

Every pytest here runs with `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` (this plugin then loaded with
`-p pytest_agentevals.plugin`): pytest and this plugin alone. The test extra installs other plugins
— Hypothesis' alone costs a session about 0.7 s — which pad both sides and dilute the ratio; the
`one test, as installed` case keeps them (the plugins autoloaded, this one disabled with
`-p no:agentevals` on the bare side), as a user with those plugins sees it. Each figure is the ratio
of the medians of the two commands' child-process CPU seconds (steadier than wall time on a shared
machine; wall-time ratios are printed beside them), the commands run in turn so the machine's drift
falls on both. Run from the repository root:

    python benchmarks/plugin_load.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import _figures as figures  # benchmarks/: the folder of the script run

REPO = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
PLUGIN = [*PYTEST, "-p", "pytest_agentevals.plugin"]

emit = partial(figures.emit, "plugin_load")


def child_seconds(args: Sequence[str], cwd: Path, autoload: bool = False) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=_env(autoload))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def _env(autoload: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # every run reads the same byte-compiled files
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # pytest and this plugin alone
    return env


def compare(
    case: str, plugin: Sequence[str], bare: Sequence[str], cwd: Path, repeats: int, autoload: bool = False
) -> None:
    child_seconds(plugin, cwd, autoload)  # warm-up: the file system cache, both sides
    child_seconds(bare, cwd, autoload)
    runs: dict[str, list[tuple[float, float]]] = {"plugin": [], "bare": []}
    for _ in range(repeats):
        runs["plugin"].append(child_seconds(plugin, cwd, autoload))
        runs["bare"].append(child_seconds(bare, cwd, autoload))
    cpu = {side: statistics.median(cpu for cpu, _ in values) for side, values in runs.items()}
    wall = {side: statistics.median(wall for _, wall in values) for side, values in runs.items()}
    emit(case, "cpu_ratio", cpu["plugin"] / cpu["bare"])
    emit(case, "wall_ratio", wall["plugin"] / wall["bare"])
    emit(case, "plugin_cpu_seconds", cpu["plugin"])
    emit(case, "bare_cpu_seconds", cpu["bare"])


def modules_loaded() -> tuple[int, int]:
    code = (
        "import sys, pytest_agentevals.plugin\n"
        "print(len([m for m in sys.modules if m.split('.')[0] == 'pytest_agentevals']))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    total = sum(1 for _ in (REPO / "pytest_agentevals").rglob("*.py"))
    return int(loaded.stdout.strip()), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    repeats = 3 if parser.parse_args().quick else 15
    with tempfile.TemporaryDirectory(prefix="agentevals-load-bench-") as folder:
        root = Path(folder)
        (root / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
        bare = [*PYTEST, "-q"]
        compare("one test, defaults", [*PLUGIN, "-q"], bare, root, repeats)
        compare("one test, history off", [*PLUGIN, "-q", "--agentevals-history=off"], bare, root, repeats)
        compare(
            "one test, as installed",
            [*PYTEST, "-q"],
            [*PYTEST, "-q", "-p", "no:agentevals"],
            root,
            repeats,
            autoload=True,
        )
    bare_suite = [*PYTEST, "--co", "-q", "-o", "addopts=-p pytester", "tests"]
    fewer = max(3, repeats // 3)
    compare(
        "collect the suite",
        [*PLUGIN, "--co", "-q", "--agentevals-history=off", "tests"],
        bare_suite,
        REPO,
        fewer,
    )
    compare("collect the root", [*PLUGIN, "--co", "-q", "--agentevals-history=off"], bare_suite, REPO, fewer)
    compare(
        "import",
        [sys.executable, "-c", "import pytest_agentevals.plugin"],
        [sys.executable, "-c", "import pytest"],
        REPO,
        repeats,
    )
    loaded, total = modules_loaded()
    emit("import", "modules_loaded", loaded, total=total)


if __name__ == "__main__":
    main()
