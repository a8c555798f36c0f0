"""Framework adapters: LangChain / LangGraph (tools, checkpointer, step history) and pydantic-ai
(tools, step history).

Each module that names a framework imports it, and is imported only when that framework's object is
handed to it: importing this package (or `pytest_agentevals`) never imports a framework. Install
them with the extras `pytest-agentevals[langgraph]` and `pytest-agentevals[pydantic-ai]`.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .langchain_step import langchain_decision, langchain_messages
    from .langgraph_checkpointer import RecordedCheckpointer, boot_thread, graph_contract
    from .langgraph_import import ImportedThread, import_thread
    from .pydantic_ai_step import first_decision, pydantic_ai_decision, pydantic_ai_history
    from .wrap import tool, wrap_tools

__all__ = [
    "ImportedThread",
    "RecordedCheckpointer",
    "boot_thread",
    "first_decision",
    "graph_contract",
    "import_thread",
    "langchain_decision",
    "langchain_messages",
    "pydantic_ai_decision",
    "pydantic_ai_history",
    "tool",
    "wrap_tools",
]

__getattr__, __dir__ = attach(__name__, __file__)
