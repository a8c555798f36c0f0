"""The endpoint's pytest face: the `agentevals_endpoint` fixture, a model endpoint for the test's
subprocesses. Registered by `pytest_agentevals.plugin`.

```python
@pytest.mark.replay("fix-bug")
def test_fix_bug(agentevals_replay, agentevals_endpoint):
    subprocess.run(["node", "agent.js"], env=agentevals_endpoint.env, check=True)
```

The endpoint answers for whatever the test's process records or replays when a request arrives —
the replay of `agentevals_replay`, the recording of `agentevals_recorder`, a resumed phase, a
marathon seed — exactly as an in-process agent's calls would be answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..settings import Settings

if TYPE_CHECKING:  # the server loads with the first test that asks for it
    from .server import ModelEndpoint


class EndpointPlugin:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings

    @pytest.fixture
    def agentevals_endpoint(self) -> Iterator[ModelEndpoint]:
        """A model endpoint on 127.0.0.1 for this test: `url` for a client's base URL, `env` for a
        subprocess. Its URL is the test's own (a token in the path), and it stops after the test."""
        from .server import ModelEndpoint

        with ModelEndpoint() as endpoint:
            yield endpoint

    @pytest.hookimpl(trylast=True)
    def pytest_agentevals_run_agent(self, run: Any) -> Any:
        """A replay of a run of `agentevals record` (a command, `-- COMMAND`, or a Python program,
        `agent.py` / `-m module`) that no hook of the user's took: the program again, in a fresh copy
        of its recorded workspace, if the repository allows it (`replay_programs`;
        endpoint/replayed.py)."""
        task = run.task
        if run.layer != "replay" or not isinstance(task, dict):
            return None
        if isinstance(task.get("command"), list):
            from .replayed import replay_command

            return replay_command(run.layer_run, task["command"])
        if "argv" in task:
            from .replayed import replay_program

            return replay_program(run.layer_run, task["argv"])
        return None
