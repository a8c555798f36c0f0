"""Settings: every option declared once (`options.py`), resolved once into a frozen `Settings`
(`resolve.py`: CLI > marker > `[tool.agentevals]` > default), and the value types the options
parse — budgets, seed selections, contract tolerances, normalization rules, a program's argv — and
the pyramid's layers.
Nothing here imports an engine or a face, and only the settings' own pytest face (`plugin.py`:
the options and their resolution at configure) imports pytest: every part of the package may read
settings.
"""

from .layers import LAYERS, Layer
from .normalize import Rule, rules
from .options import (
    BY_KEY,
    CONTRACT_POLICIES,
    OPTIONS,
    RECORD_MODES,
    REPLAY_MODES,
    REPLAY_PROFILES,
    REPLAY_VIA,
    Option,
)
from .resolve import Settings, find_pyproject, read_pyproject

__all__ = [
    "BY_KEY",
    "CONTRACT_POLICIES",
    "LAYERS",
    "OPTIONS",
    "RECORD_MODES",
    "REPLAY_MODES",
    "REPLAY_PROFILES",
    "REPLAY_VIA",
    "Layer",
    "Option",
    "Rule",
    "Settings",
    "find_pyproject",
    "read_pyproject",
    "rules",
]
