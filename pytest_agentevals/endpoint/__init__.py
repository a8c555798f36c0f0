"""The loopback model endpoint: any process that takes `ANTHROPIC_BASE_URL` (the Claude Code CLI, a
Node agent, a Python subprocess) records, replays and is guarded like an in-process agent.

```python
from pytest_agentevals import model_endpoint

with model_endpoint() as endpoint:                  # follows the run recording or replaying here
    subprocess.run(["node", "agent.js"], env=endpoint.env, check=True)
```
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .claude_session import write_claude_session
    from .command import run_command
    from .server import ModelEndpoint, conversation_state, model_endpoint

__all__ = ["ModelEndpoint", "conversation_state", "model_endpoint", "run_command", "write_claude_session"]

__getattr__, __dir__ = attach(__name__, __file__)
