"""Metrics: pure functions of a trace's events (or of a slice of them). No I/O but `compute_file`,
no pytest; the loop guard and the reports build on them. Formulas: docs/metrics.md."""

from .loops import Action, LoopDetector, LoopHit, action_of, actions_of

__all__ = ["Action", "LoopDetector", "LoopHit", "action_of", "actions_of"]
