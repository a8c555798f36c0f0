"""`@tool`'s binding of a call to its function's parameters (`recording/tools.py`): the plain
signatures' fast binder gives what `inspect.Signature.bind` and `apply_defaults` give, in the same
order, and the same TypeError for a call that does not fit."""

from __future__ import annotations

import inspect
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentevals.recording.tools import binder

P = inspect.Parameter
NAMES = ("a", "b", "c", "d", "e")
KINDS = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    """A valid signature: kinds in order, defaults only after defaults among the positional ones,
    sometimes `*args` or `**kwargs`."""
    count = draw(st.integers(0, len(NAMES)))
    kinds = sorted(draw(st.lists(st.sampled_from(KINDS), min_size=count, max_size=count)))
    parameters: list[P] = []
    defaulted = False
    for name, kind in zip(NAMES, kinds, strict=False):
        wants_default = draw(st.booleans())
        if kind is not P.KEYWORD_ONLY:
            wants_default = wants_default or defaulted
            defaulted = wants_default
        default = draw(st.sampled_from([None, 0, "x", (1,)])) if wants_default else P.empty
        parameters.append(P(name, kind, default=default))
    if draw(st.booleans()):
        at = next((i for i, p in enumerate(parameters) if p.kind is P.KEYWORD_ONLY), len(parameters))
        parameters.insert(at, P("args", P.VAR_POSITIONAL))
    if draw(st.booleans()):
        parameters.append(P("kwargs", P.VAR_KEYWORD))
    return inspect.Signature(parameters)


def through_inspect(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        return ("TypeError", str(exc))
    bound.apply_defaults()
    return list(bound.arguments.items())


def through_binder(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = binder(signature)(args, kwargs)
    except TypeError as exc:
        return ("TypeError", str(exc))
    return list(bound.items())


@settings(max_examples=400, deadline=None)
@given(
    signatures(),
    st.lists(st.integers(), max_size=6).map(tuple),
    st.dictionaries(st.sampled_from((*NAMES, "zz", "args", "kwargs")), st.integers(), max_size=6),
)
def test_the_binder_binds_every_call_as_inspect_does(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert through_binder(signature, args, kwargs) == through_inspect(signature, args, kwargs)


def test_a_method_s_call_binds_its_receiver_and_keywords_in_the_signature_s_order() -> None:
    def write_file(self: object, path: str, content: str = "", *, mode: str = "w") -> None: ...

    receiver = object()
    bound = binder(inspect.signature(write_file))((receiver,), {"content": "x", "path": "a.txt"})
    assert list(bound.items()) == [("self", receiver), ("path", "a.txt"), ("content", "x"), ("mode", "w")]
