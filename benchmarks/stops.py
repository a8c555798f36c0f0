"""A budget stop through the model endpoint, per client: how many requests each client sends after the
guard stopped its run, and how many seconds it takes to give up, side by side in one run.

Each client runs in this process against the endpoint (recording, a `max_calls=1` budget) in front of
the simulated model: the first call is answered, the second is refused by the guard, and everything
the client sends after that is counted. The clients are the real ones, as their users run them:
litellm (`anthropic/` models: its own HTTP client), litellm with `num_retries=3`, mini-swe-agent's
`LitellmModel` (its default retry policy, 10 attempts with waits of 4 to 60 s), the anthropic SDK and
the openai SDK (each with its default `max_retries`). A client that is not installed is left out.

`python benchmarks/stops.py` (`--quick`: mini-swe-agent's policy capped at 3 attempts, for a run on
code whose stop a client retries).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# litellm fetches its price table from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._figures import emit
from pytest_agentevals import Recorder, model_endpoint
from pytest_agentevals.guards import guards_for
from pytest_agentevals.settings.budgets import Budget
from pytest_agentevals.sim import Reply, SimServer

KEY = "sk-ant-fake-" + "0" * 20
MODEL = "claude-sonnet-4-5"
ASK = [{"role": "user", "content": "say hi"}]


def _litellm(retries: int | None) -> Callable[[str], Any]:
    import litellm

    def call(url: str) -> Any:
        extra = {} if retries is None else {"num_retries": retries}
        return litellm.completion(
            model=f"anthropic/{MODEL}", messages=ASK, api_base=url, api_key=KEY, max_tokens=16, **extra
        )

    return call


def _mini_swe_agent(url: str) -> Any:
    from minisweagent.exceptions import FormatError
    from minisweagent.models.litellm_model import LitellmModel

    model = LitellmModel(
        model_name=f"anthropic/{MODEL}",
        model_kwargs={"api_base": url, "api_key": KEY, "max_tokens": 16},
        cost_tracking="ignore_errors",
    )
    try:
        return model.query(ASK)
    except FormatError:  # the scripted reply holds no bash action: the call itself went through
        return None


def _anthropic(url: str) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=url, api_key=KEY).messages.create(
        model=MODEL, max_tokens=16, messages=ASK
    )


def _openai(url: str) -> Any:
    import httpx
    import openai

    # The openai SDK's own request path and retry policy, on the Messages route the endpoint serves.
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY)
    return client.post(
        "/messages", body={"model": MODEL, "max_tokens": 16, "messages": ASK}, cast_to=httpx.Response
    )


CLIENTS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "litellm": ("litellm", lambda url: _litellm(None)(url)),
    "litellm num_retries=3": ("litellm", lambda url: _litellm(3)(url)),
    "mini-swe-agent LitellmModel": ("minisweagent", _mini_swe_agent),
    "anthropic SDK": ("anthropic", _anthropic),
    "openai SDK": ("openai", _openai),
}


def stopped_run(sim: SimServer, call: Callable[[str], Any], folder: Path) -> tuple[int, float, str]:
    """Requests sent after the stop, seconds from the stop to the client giving up, and what it raised."""
    guards = guards_for(Budget(max_calls=1))
    with (
        Recorder(folder / "run.trace.jsonl", http=False, guards=guards),
        model_endpoint(upstream=sim.url) as ep,
    ):
        call(ep.url)  # answered: the budget's one call
        before = ep.requests
        started = time.perf_counter()
        try:
            call(ep.url)
            raised = "nothing"
        except Exception as exc:  # what the client's user sees
            raised = type(exc).__name__
        seconds = time.perf_counter() - started
        return ep.requests - before, seconds, raised


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="mini-swe-agent's policy capped at 3 attempts")
    args = parser.parse_args()
    if args.quick:
        os.environ["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] = "3"
    import importlib.util

    with SimServer(lambda request: Reply.text("hi"), seed=1) as sim, tempfile.TemporaryDirectory() as tmp:
        for case, (module, call) in CLIENTS.items():
            if importlib.util.find_spec(module) is None:
                continue
            folder = Path(tmp) / case.replace(" ", "_")
            folder.mkdir()
            calls, seconds, raised = stopped_run(sim, call, folder)
            emit("stops", case, "requests_after_stop", calls, raised=raised)
            emit("stops", case, "seconds_to_give_up", seconds, digits=3)


if __name__ == "__main__":
    main()
