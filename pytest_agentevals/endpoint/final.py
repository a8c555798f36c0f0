"""The endpoint's final answer: what a client is sent when the endpoint refuses a request for good (a
guard stopped the run, the replay diverged, no run is active), so that it gives up at once instead
of retrying into a stopped run.

What each client retries, as their sources read (docs/endpoint.md, "Stops"):
- the anthropic SDKs (Python, TypeScript), the Claude Code CLI (built on the TypeScript SDK) and the
  openai SDKs obey `x-should-retry: false` before looking at the status; without it they retry 408,
  409, 429 and 5xx. The CLI reports a 403 as a failed login, so it keeps the 500 it always had.
- litellm (its own HTTP client for `anthropic/` models) retries nothing by itself; given
  `num_retries` it retries every error whatever its status. It turns a 500 into
  `InternalServerError` and a 403 into `PermissionDeniedError`.
- agents on litellm retry by exception type: mini-swe-agent 2.4 retries everything but
  `AuthenticationError` (401), `PermissionDeniedError` (403), `NotFoundError` (404) and two kinds of
  bad request, 10 attempts with waits of 4 to 60 s: a 500 kept a stopped run retrying for minutes.
So a client that says it is an anthropic SDK or the CLI (its User-Agent) gets `FINAL`, a 500 with
the header, and every other one a 403 `permission_error` with the header, which no status-based or
type-based retry policy of those retries.
"""

from __future__ import annotations

# The refusal the anthropic SDKs and the Claude Code CLI take as final after one request.
FINAL = 500
# The refusal every other client takes as final: a request it is not permitted to make.
FORBIDDEN = 403

# User-Agent prefixes of the clients that obey `x-should-retry` and show a 500 as the API error it is.
_HEADER_OBEYED = ("anthropic/", "claude-cli/")


def final_answer(user_agent: str) -> tuple[int, str]:
    """The status and the error type of a final refusal to the client whose User-Agent is `user_agent`."""
    if user_agent.strip().lower().startswith(_HEADER_OBEYED):
        return FINAL, "api_error"
    return FORBIDDEN, "permission_error"
