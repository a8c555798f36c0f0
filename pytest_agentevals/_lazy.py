"""A package's public names, imported when first used (PEP 562).

pytest imports this project's plugin for every session, and importing any module of a package runs
the package's `__init__.py`: a package that imported its engine there would load it for sessions
that never use it. So each package declares its public names once, as the imports of an
`if TYPE_CHECKING:` block (what type checkers and readers see), and ends with

    __getattr__, __dir__ = attach(__name__, __file__)

which reads that block and imports a name's module on the name's first use. A public name never
equals a submodule's name (a test checks): importing the submodule would bind the package
attribute to the module before the name was ever asked for.

A name of an earlier release that is spelled otherwise now keeps working for one release:
`attach(..., deprecated={"OldName": "NewName"})` answers it with the package's `NewName` (or, for
"module:attr", that module's attribute) and an `AgentEvalsDeprecationWarning` naming the new
spelling. Deprecated names are not public: they are in neither `__all__` nor `dir()`.
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from .errors import AgentEvalsDeprecationWarning


def homes(package: str, init_file: str) -> dict[str, str]:
    """Each name the `if TYPE_CHECKING:` block of a package's `__init__.py` imports, and the
    absolute name of its module."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    base = package.split(".")
                    base = base[: len(base) - statement.level + 1] if statement.level else []
                    module = ".".join([*base, *([statement.module] if statement.module else [])])
                    for alias in statement.names:
                        found[alias.asname or alias.name] = module
    return found


def attach(
    package: str, init_file: str, deprecated: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a package whose public names load on first use, and the
    `deprecated` names it still answers (old name -> a public name of the package, or
    "module:attr")."""
    table: dict[str, str] = {}
    folder = Path(init_file).parent
    old = dict(deprecated or {})

    def names() -> dict[str, str]:
        if not table:  # read with the first look-up: most sessions never make one
            table.update(homes(package, init_file))
        return table

    def __getattr__(name: str) -> Any:
        if not table and _is_submodule(folder, name):
            # `from package import submodule` asks the package first: no public name is a
            # submodule's, so the answer is no without parsing the block (most sessions ask only this).
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home = names().get(name)
        if home is None and name in old:
            return _deprecated(package, init_file, name, old[name], __getattr__)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # Not cached on the package: a name always comes from the module now in sys.modules, so a
        # test harness that drops modules between in-process runs (pytester) never mixes two copies.
        return getattr(importlib.import_module(home), name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names()})

    return __getattr__, __dir__


def _deprecated(package: str, init_file: str, name: str, new: str, lookup: Callable[[str], Any]) -> Any:
    module, _, attr = new.rpartition(":")
    spelled = f"{module}.{attr}" if module else f"{package}.{new}"
    warnings.warn(
        AgentEvalsDeprecationWarning(
            f"{package}.{name} is the 0.x name of {spelled}; use that (the old name goes in the next release)"
        ),
        stacklevel=_asker(init_file),
    )
    return getattr(importlib.import_module(module), attr) if module else lookup(new)


def _asker(init_file: str) -> int:
    """The stack level of the code that asked for a deprecated name, for `_deprecated`'s warning.

    Counted, not fixed: the root's `__getattr__` wraps this module's (for `__version__`), and a
    warning blamed on our own `__init__.py` is one Python's default filters hide outside tests.
    Frames of this module and of the package's `__init__.py` are skipped; importlib's are not
    counted, as `warnings` skips them itself."""
    own = {__file__, init_file}
    level = 2  # 1 is `_deprecated`; 2, the first frame that called it
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):
            if name not in own:
                return level
            level += 1
        frame = frame.f_back
    return level


def _is_submodule(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
