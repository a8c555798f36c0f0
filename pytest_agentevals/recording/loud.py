"""Errors raised inside the SDK's transport that reach the caller at once, unchanged.

vcrpy's transport stubs ask our cassettes first, so a replay (an unrecorded request) or a guard (a
spent budget) can refuse a request by raising from there, before anything is sent. The anthropic
SDK wraps any transport exception that is not its own in `APIConnectionError` and retries it;
`loud()` gives our error the SDK's base class as a mixin (only when the SDK is already imported), so
it is neither retried nor wrapped.
"""

from __future__ import annotations

import sys

from ..errors import AgentEvalsError

_loud_classes: dict[tuple[type, type], type] = {}


def loud(error: AgentEvalsError) -> AgentEvalsError:
    """`error`, as an instance of a subclass that the anthropic SDK re-raises without retrying.

    The copy is still an instance of the original class (`except ReplayDivergence` catches it) and
    reads the same; it is only made when `anthropic` is imported already.
    """
    sdk = sys.modules.get("anthropic")
    base = getattr(sdk, "AnthropicError", None)
    if not isinstance(base, type) or isinstance(error, base):
        return error
    cls = type(error)
    loud_cls = _loud_classes.get((cls, base))
    if loud_cls is None:
        loud_cls = type(
            cls.__name__, (cls, base), {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        )
        _loud_classes[(cls, base)] = loud_cls
    copy: AgentEvalsError = Exception.__new__(loud_cls)
    copy.args = error.args
    copy.__dict__.update(error.__dict__)
    copy.__dict__["original"] = error
    return copy
