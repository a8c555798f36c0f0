"""The resume layer's pytest face: its hooks.

`ResumeHookspecs` is registered by `pytest_agentevals.plugin` whenever the plugin loads, so every
face that boots from a checkpoint — this layer's fixture, the marathon layer's supervisor restarting
a crashed seed — can call `config.hook.pytest_agentevals_resume_agent(checkpoint=...)`.
"""

from __future__ import annotations

from typing import Any

import pytest

from .boot import ResumePoint


class ResumeHookspecs:
    @pytest.hookspec(firstresult=True)
    def pytest_agentevals_resume_agent(self, checkpoint: ResumePoint) -> Any:
        """Start the user's agent from a checkpoint and run it: the next leg of a resumed run.

        `checkpoint` has `name` (the fixture's, or None for a live run's own checkpoint), `state` (the
        agent's state, JSON), `workspace` (the restored workspace folder), `task` and `seed` (the source
        run's), `step`, `lineage` and `events` (the source trace up to the checkpoint). Called by
        `agentevals_checkpoint.run_agent()`, and by the marathon layer when it restarts a crashed
        seed. Return the agent's result (any value but None); return None from an implementation
        that does not handle this checkpoint's agent, so another one may.
        """

    @pytest.hookspec
    def pytest_agentevals_contract(self) -> dict[str, Any] | None:
        """What the harness declares about its environment, for checkpoint contracts: a dict of raw
        JSON values by key (`{"db.schema": 42, "fixtures.users": "sha256:..."}`). Every
        implementation's dict is merged. A resumed checkpoint compares the values it recorded with these
        before anything runs; a run recorded by the plugin stores them in `run_start.contract`.
        """
