"""Triage: from a failing run to the step that caused it, and to the smallest test that still fails.

Three steps, each usable alone, from Python and from `agentevals triage` (docs/triage.md):

- `rank`: over a marathon's seeds (passing and failing), the steps that separate failing runs from
  passing ones, with the evidence (spectrum-based; `steps` reads a trace into steps and features);
- `fork`: at a step k of a failing run, replay strictly up to k, put another decision at k, run
  forward live N times, seeded, under the guards: the recovery rate with its 95% interval;
- `shrink`: ddmin over the context of the decisive step, down to a step case that still fails,
  written as a test with the original run as its provenance.

No pytest here: the command line and the tests call the same functions.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .delta import Reduced, ddmin
    from .minimize import Decide, Shrunk, check_case, decision_key, load_case, shrink, write_case
    from .redrive import Drive, ForkResult, Redrive, fork, replacement_for
    from .spectrum import Candidate, Evidence, Ranking, RunRanking, closest_passing, ochiai, rank
    from .steps import Run, Step, load_run, load_runs, shape

__all__ = [
    "Candidate",
    "Decide",
    "Drive",
    "Evidence",
    "ForkResult",
    "Ranking",
    "Redrive",
    "Reduced",
    "Run",
    "RunRanking",
    "Shrunk",
    "Step",
    "check_case",
    "closest_passing",
    "ddmin",
    "decision_key",
    "fork",
    "load_case",
    "load_run",
    "load_runs",
    "ochiai",
    "rank",
    "replacement_for",
    "shape",
    "shrink",
    "write_case",
]

__getattr__, __dir__ = attach(__name__, __file__)
