"""The four layers of the eval pyramid: their markers, cadence and default flakiness budgets."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    name: str
    cadence: str
    runs_in: str
    checks: str
    default_flaky_budget: float

    @property
    def marker_help(self) -> str:
        return (
            f"{self.name}(*args, **kwargs): agentevals {self.name} layer ({self.cadence}, runs in "
            f"{self.runs_in}): {self.checks}."
        )


LAYERS: tuple[Layer, ...] = (
    Layer(
        "step",
        "every commit",
        "seconds",
        "one decision against a golden trace: tool choice and args, a compaction summary, an escalation call",
        0.0,
    ),
    Layer(
        "replay",
        "every merge",
        "minutes",
        "a recorded run re-executed offline with recorded model and tool responses",
        0.0,
    ),
    Layer(
        "resume",
        "daily",
        "about an hour",
        "boot from a stored mid-run checkpoint and run one phase live",
        0.05,
    ),
    Layer(
        "marathon",
        "nightly",
        "hours to days",
        "3-5 seeded end-to-end runs: progress-AUC, loop rate, verified pass, cost",
        0.20,
    ),
)

LAYER_NAMES: tuple[str, ...] = tuple(layer.name for layer in LAYERS)
BY_NAME: dict[str, Layer] = {layer.name: layer for layer in LAYERS}


def layer_of(marker_names: set[str] | frozenset[str]) -> str | None:
    """The layer a test belongs to, from the names of its markers.

    A test marked with more than one layer belongs to the lowest (cheapest) of them, because that is
    the gate it must pass first.
    """
    for name in LAYER_NAMES:
        if name in marker_names:
            return name
    return None
