"""One simulated model for every real-client test of the session (started once, not per test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_agentevals.sim import SimServer

from ..clients_support import scripted_model


@pytest.fixture(scope="session")
def model() -> Iterator[SimServer]:
    # seed: tool_use ids and message ids repeat from run to run, so recordings compare equal.
    with SimServer(scripted_model, seed=18) as sim:
        yield sim
