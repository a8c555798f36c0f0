"""A guard's stop is final for every client, not only the anthropic SDKs: litellm, an agent on litellm
with its own retry policy (mini-swe-agent) and the openai SDK each send one request after the stop
and give up, and a stopped run answers every later request at once, forwarding nothing.

The clients are the `clients` extra's (pyproject.toml; .ci/run installs it): without one, its test
skips, and fails when `CI` is set. Each runs in this process against the model endpoint of a
recording with a `max_calls=1` budget, in front of the session's simulated model. Figures in seconds:
`python benchmarks/stops.py`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_agentevals import ModelEndpoint, Recorder, model_endpoint
from pytest_agentevals.guards import guards_for
from pytest_agentevals.settings.budgets import Budget
from pytest_agentevals.sim import SimServer
from pytest_agentevals.trace.reader import read_trace

from ..clients_support import need
from ..conftest import make_fake_key

MODEL = "claude-sonnet-4-5"
ASK = [{"role": "user", "content": "say hi"}]
STOPPED = "the budget guard stopped the run"


@pytest.fixture(scope="module")
def litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as mp:
        # litellm fetches its price table from the network at import unless told not to; mini-swe-agent
        # writes a config folder under the home directory unless given one.
        mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        mp.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path_factory.mktemp("mswea")))
        mp.setenv("MSWEA_SILENT_STARTUP", "1")
        module = need("litellm")
        mp.setattr(module, "suppress_debug_info", True)
        yield module


def stopped_run(
    model: SimServer, path: Path, call: Callable[[str], Any]
) -> tuple[ModelEndpoint, list[BaseException]]:
    """One answered call, then three more into the stopped run; what each of those raised."""
    raised: list[BaseException] = []
    with (
        Recorder(path, http=False, guards=guards_for(Budget(max_calls=1))),
        model_endpoint(upstream=model.url) as endpoint,
    ):
        call(endpoint.url)
        assert (endpoint.requests, endpoint.forwarded) == (1, 1)
        for _ in range(3):
            with pytest.raises(Exception) as error:
                call(endpoint.url)
            raised.append(error.value)
    return endpoint, raised


def test_litellm_gives_up_after_one_request(model: SimServer, litellm: ModuleType, tmp_path: Path) -> None:
    def call(url: str) -> Any:
        return litellm.completion(
            model=f"anthropic/{MODEL}", messages=ASK, api_base=url, api_key=make_fake_key(), max_tokens=16
        )

    endpoint, raised = stopped_run(model, tmp_path / "run.trace.jsonl", call)
    assert endpoint.requests == 1 + 3  # one request per call after the stop: no retry
    assert endpoint.forwarded == 1  # nothing after the stop went upstream
    assert all(isinstance(error, litellm.PermissionDeniedError) for error in raised)
    assert STOPPED in str(raised[0])
    end = read_trace(tmp_path / "run.trace.jsonl")[-1]
    assert end["status"] == "budget_exhausted"


def test_litellm_num_retries_resends_every_error_and_each_is_refused_at_once(
    model: SimServer, litellm: ModuleType, tmp_path: Path
) -> None:
    # litellm's own retries (num_retries) re-send whatever failed, whatever its status: docs/endpoint.md
    # tells litellm users to leave it unset; each re-sent request is refused without going upstream.
    def call(url: str) -> Any:
        return litellm.completion(
            model=f"anthropic/{MODEL}",
            messages=ASK,
            api_base=url,
            api_key=make_fake_key(),
            max_tokens=16,
            num_retries=2,
        )

    endpoint, raised = stopped_run(model, tmp_path / "run.trace.jsonl", call)
    assert endpoint.requests == 1 + 3 * 3
    assert endpoint.forwarded == 1
    assert all(isinstance(error, litellm.PermissionDeniedError) for error in raised)


def test_mini_swe_agents_retry_policy_gives_up_after_one_request(
    model: SimServer, litellm: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its default policy, but 3 attempts: a stop it took for retryable would show as 3 requests (after
    # waits of 4 and 8 s) instead of a ten-attempt storm of minutes.
    monkeypatch.setenv("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "3")
    need("minisweagent")
    from minisweagent.exceptions import FormatError
    from minisweagent.models.litellm_model import LitellmModel

    def call(url: str) -> Any:
        agent_model = LitellmModel(
            model_name=f"anthropic/{MODEL}",
            model_kwargs={"api_base": url, "api_key": make_fake_key(), "max_tokens": 16},
            cost_tracking="ignore_errors",
        )
        try:
            return agent_model.query(ASK)
        except FormatError:  # the scripted answer holds no bash action; the call went through
            return None

    endpoint, raised = stopped_run(model, tmp_path / "run.trace.jsonl", call)
    assert endpoint.requests == 1 + 3
    assert endpoint.forwarded == 1
    assert all(isinstance(error, litellm.PermissionDeniedError) for error in raised)


def test_the_openai_sdk_gives_up_after_one_request(model: SimServer, tmp_path: Path) -> None:
    openai = need("openai")
    import httpx

    def call(url: str) -> Any:
        # The SDK's own request path and retry policy (max_retries=2 by default), on the Messages route.
        client = openai.OpenAI(base_url=url + "/v1", api_key=make_fake_key())
        body = {"model": MODEL, "max_tokens": 16, "messages": ASK}
        return client.post("/messages", body=body, cast_to=httpx.Response)

    endpoint, raised = stopped_run(model, tmp_path / "run.trace.jsonl", call)
    assert endpoint.requests == 1 + 3
    assert all(isinstance(error, openai.PermissionDeniedError) for error in raised)
    assert STOPPED in str(raised[0])


def test_an_in_process_litellm_agent_gives_up_at_a_stop_too(
    model: SimServer, litellm: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded in this process (no endpoint): the stop is raised in litellm's transport, and litellm
    # makes its error of the exception's status_code, so mini-swe-agent's policy aborts there too.
    monkeypatch.setenv("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "3")
    need("minisweagent")
    from minisweagent.exceptions import FormatError
    from minisweagent.models.litellm_model import LitellmModel

    sent = []
    completion = litellm.completion

    def counted(*args: Any, **kwargs: Any) -> Any:
        sent.append(1)
        return completion(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", counted)
    agent_model = LitellmModel(
        model_name=f"anthropic/{MODEL}",
        model_kwargs={"api_base": model.url, "api_key": make_fake_key(), "max_tokens": 16},
        cost_tracking="ignore_errors",
    )
    with Recorder(tmp_path / "run.trace.jsonl", guards=guards_for(Budget(max_calls=1))):
        with contextlib.suppress(FormatError):
            agent_model.query(ASK)
        with pytest.raises(litellm.PermissionDeniedError, match=STOPPED):
            agent_model.query(ASK)
    assert len(sent) == 2  # the answered call, and one attempt into the stop
