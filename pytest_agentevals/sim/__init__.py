"""A scripted Anthropic Messages API on loopback, for testing a harness without spending tokens.

```python
import anthropic
from pytest_agentevals.sim import Fault, FaultPlan, Reply, SimServer

script = [Reply.tool_use("read_file", {"path": "a.txt"}), Reply.text("done")]
with SimServer(script, seed=7, faults=FaultPlan(rate_limit=0.05, seed=7)) as sim:
    client = anthropic.Anthropic(base_url=sim.url, api_key=..., max_retries=2)
    ...
    sim.requests   # what the client sent, parsed
```

The real SDK talks to it unchanged: sync and async, `create(...)`, `create(stream=True)` and
`messages.stream(...)`; usage with simulated prompt caching (see `usage`); stop reasons; the API's
error bodies and `request-id` headers; and faults (429, 529, dropped connections, slow answers).
It imports nothing of this project but `errors`, so it can serve any test or example.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .judge import NoisyJudge
    from .script import Fault, FaultPlan, Policy, Reply, Script, SimRequest, StopReason
    from .server import SimExchange, SimServer
    from .usage import Usage, estimate_tokens

__all__ = [
    "Fault",
    "FaultPlan",
    "NoisyJudge",
    "Policy",
    "Reply",
    "Script",
    "SimExchange",
    "SimRequest",
    "SimServer",
    "StopReason",
    "Usage",
    "estimate_tokens",
]

__getattr__, __dir__ = attach(__name__, __file__)
