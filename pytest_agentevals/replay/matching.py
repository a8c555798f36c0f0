"""The replay engine's matching, for another layer that answers model requests from recordings (the
step layer's decision cache): a recorded exchange found by its canonical request (`RequestIndex`,
`incoming_request`), answered at the SDK's request method when it provably is the request expected
(`serving_at_sdk`, `answers_at_sdk`), and a changed request told as the replay tells it
(`what_changed`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import diff, sdk, staleness
from .cassette import Interaction

Serve = Callable[[str, Mapping[str, Any], Callable[[Any], Any]], Interaction | None]


@contextlib.contextmanager
def serving_at_sdk(serve: Serve) -> Iterator[None]:
    """Within the block, the anthropic SDK's Messages requests are first offered to `serve(path, body,
    prepare)`: the exchange it returns answers the request with no HTTP at all; None sends it on into
    the SDK and its HTTP transport. Nothing changes when the SDK is not installed."""
    uninstall = sdk.install(serve)
    try:
        yield
    finally:
        uninstall()


def answers_at_sdk(
    expected: Interaction, path: str, body: Mapping[str, Any], prepare: Callable[[Any], Any]
) -> bool:
    """Whether the recorded exchange `expected` may answer this Messages request at the SDK's method:
    a successful model POST to the same path whose body provably is this one."""
    return sdk.answers(expected, path, body, prepare)


def what_changed(recorded: Mapping[str, Any], now: Mapping[str, Any], limit: int = 3) -> list[str]:
    """How a request (`now`, canonical) differs from the recorded one: the model id, system prompt
    and tool schemas that changed, the first difference's place, and the differences themselves (at
    most `limit`), one line each, as a stale cassette says them."""
    found = diff.request_differences(dict(recorded), dict(now))
    body, recorded_body = now.get("body"), recorded.get("body")
    lines: list[str] = []
    if isinstance(body, dict) and isinstance(recorded_body, dict):
        lines = staleness.request_contract_differences(recorded_body, body)
    lines.append(f"first difference in {diff.where(found, body)}:")
    if any(line.startswith("system prompt:") for line in lines):
        # the system prompt's diff is shown above, under its line: not twice
        found = [difference for difference in found if not difference.path.startswith("system")]
        if not found:
            lines[-1] = "first difference in field system (its diff is above)"
    lines.extend(diff.render_differences(found, limit=limit).split("\n") if found else [])
    return lines
