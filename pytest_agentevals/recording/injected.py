"""Which of a tool's arguments a framework injects rather than the model choosing them.

LangGraph passes a `RunnableConfig` (checkpoint namespaces, callbacks, objects that repr with memory
addresses), injected state and store, a tool-call id; pydantic-ai passes its `RunContext`. Recorded,
they would make every strict replay diverge, and they are not the model's decision anyway.

Told by the parameter's annotation (a string under `from __future__ import annotations`, so read by
name, never by importing a framework) and, for what an annotation may not say, by the value's type.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

# The names of the frameworks' injected types, as their annotations spell them.
INJECTED_TYPES = frozenset(
    {
        "RunnableConfig",  # langchain_core.runnables
        "InjectedToolArg",  # langchain_core.tools, and its subclasses below
        "InjectedToolCallId",
        "InjectedState",  # langgraph.prebuilt
        "InjectedStore",
        "ToolRuntime",
        "Runtime",  # langgraph.runtime
        "CallbackManagerForToolRun",
        "AsyncCallbackManagerForToolRun",
        "RunContext",  # pydantic_ai
    }
)
# Where a value of one of those types comes from: a value is only taken as injected when its class
# (or a base) is one of the frameworks'.
FRAMEWORK_MODULES = ("langchain_core.", "langgraph.", "pydantic_ai.")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def annotation_is_injected(annotation: Any) -> bool:
    """Whether an annotation names one of the injected types, anywhere in it (`Annotated[str,
    InjectedToolCallId]`, `RunContext[Deps]`, `Optional[RunnableConfig]`...)."""
    if annotation is inspect.Parameter.empty:
        return False
    text = annotation if isinstance(annotation, str) else _spelled(annotation)
    return any(name in INJECTED_TYPES for name in _NAME.findall(text))


def _spelled(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    text = repr(annotation)
    # An InjectedState() instance inside Annotated reprs as an object: name its class too.
    for part in getattr(annotation, "__metadata__", ()):
        text += " " + type(part).__name__
    return text


def injected_parameters(signature: inspect.Signature) -> set[str]:
    """The parameters whose annotations name an injected type."""
    return {
        name
        for name, parameter in signature.parameters.items()
        if annotation_is_injected(parameter.annotation)
    }


def is_injected_value(value: Any) -> bool:
    """Whether a value is a framework's context object (pydantic-ai's RunContext, LangGraph's
    ToolRuntime...), whatever the parameter's annotation says."""
    for klass in type(value).__mro__:
        if klass.__name__ in INJECTED_TYPES and klass.__module__.startswith(FRAMEWORK_MODULES):
            return True
    return False
