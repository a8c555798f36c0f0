"""The endpoint per run (issue 31): each run open side by side gets a route of its own on one model
endpoint (`ModelEndpoint.route()`), so the subprocess agents of concurrent sessions are recorded each
into its own run; a request on no route, a closed one or an unknown one is refused, and so is one on
the endpoint's own URL when it could belong to either run."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import pytest

import pytest_agentevals as ae
from pytest_agentevals.endpoint.final import final_answer
from pytest_agentevals.sim import Reply, SimRequest, SimServer
from tests.conftest import make_fake_key

CHILD = """
import sys
import anthropic

name = sys.argv[1]
client = anthropic.Anthropic(max_retries=0)  # the key and base URL from the environment
for n in range(3):
    client.messages.create(
        model="sim-route-1", max_tokens=16, messages=[{"role": "user", "content": f"{name} call {n}"}]
    )
"""


def echo(request: SimRequest) -> Reply:
    return Reply.text("seen " + request.last_text)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[ae.ModelEndpoint]:
    key = make_fake_key("routes")
    with (
        SimServer(echo, seed=34) as sim,
        ae.ModelEndpoint(
            upstream=sim.url, environ={"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": key}
        ) as served,
    ):
        yield served


def asked(trace: Path) -> list[str]:
    return [
        event["request"]["body"]["messages"][-1]["content"]
        for event in ae.read_trace(trace)
        if event["type"] == "model_call"
    ]


def test_two_concurrent_runs_each_record_their_own_subprocess_through_their_own_route(
    endpoint: ae.ModelEndpoint, tmp_path: Path
) -> None:
    started = threading.Barrier(2)
    done: dict[str, subprocess.CompletedProcess[str]] = {}

    def one(name: str) -> None:
        with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name), endpoint.route() as route:
            started.wait()  # both runs open before either child starts
            done[name] = subprocess.run(
                [sys.executable, "-c", CHILD, name], env=dict(route.env), capture_output=True, text=True,
                timeout=120,
            )  # fmt: skip

    threads = [threading.Thread(target=one, args=(name,)) for name in ("north", "south")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in ("north", "south"):
        assert done[name].returncode == 0, done[name].stderr
        assert asked(tmp_path / f"{name}.trace.jsonl") == [f"{name} call {n}" for n in range(3)]


def test_a_request_on_no_route_an_unknown_or_a_closed_one_is_refused(
    endpoint: ae.ModelEndpoint, tmp_path: Path
) -> None:
    origin = endpoint.url.rsplit("/", 1)[0]
    with ae.Recorder(tmp_path / "r.trace.jsonl"):
        route = endpoint.route()
        route.close()
        for url in (
            f"{origin}/v1/messages",
            f"{origin}/agentevals-unknown/v1/messages",
            route.url + "/v1/messages",
        ):
            answer = httpx.post(url, json={"model": "sim-route-1", "max_tokens": 1, "messages": []})
            assert answer.status_code == 404, url
            assert "not this run's endpoint" in answer.text
    assert asked(tmp_path / "r.trace.jsonl") == []


def test_the_endpoints_own_url_refuses_a_request_that_could_belong_to_either_of_two_runs(
    endpoint: ae.ModelEndpoint, tmp_path: Path
) -> None:
    # The endpoint was started where no run was open: its own URL has no run of its own, and with two
    # runs open side by side a request there is refused, naming both, not filed under a guess.
    opened, release = threading.Barrier(3), threading.Event()

    def one(name: str) -> None:
        with ae.Recorder(tmp_path / f"{name}.trace.jsonl", agent=name):
            opened.wait()
            release.wait()

    threads = [threading.Thread(target=one, args=(name,)) for name in ("east", "west")]
    for thread in threads:
        thread.start()
    opened.wait()
    try:
        # http.client, not httpx: a request from this thread through the in-process patches would be
        # refused here already (this thread belongs to neither run), before it reached the endpoint.
        request = urllib.request.Request(
            endpoint.url + "/v1/messages",
            data=json.dumps({"model": "sim-route-1", "max_tokens": 1, "messages": []}).encode(),
            headers={"content-type": "application/json", "x-api-key": make_fake_key("routes")},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == final_answer("Python-urllib")[0]  # final for this client
        message = refused.value.read().decode()
        assert "east.trace.jsonl" in message
        assert "west.trace.jsonl" in message
        assert "route()" in message
    finally:
        release.set()
        for thread in threads:
            thread.join()


def test_an_in_process_client_on_a_route_is_recorded_once(endpoint: ae.ModelEndpoint, tmp_path: Path) -> None:
    trace = tmp_path / "inproc.trace.jsonl"
    with ae.Recorder(trace), endpoint.route() as route:
        client = anthropic.Anthropic(base_url=route.url, api_key=make_fake_key("routes"), max_retries=0)
        client.messages.create(
            model="sim-route-1", max_tokens=16, messages=[{"role": "user", "content": "once"}]
        )
    assert asked(trace) == ["once"]
