"""The replay engine: recorded runs re-executed offline, deterministic, fast, and loud when they diverge.

Works from plain Python, from pytest and from the command line; knows nothing of either face.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from .cassette import Cassette, Interaction, ToolRecord
    from .engine import MODES, Replayer
    from .index import RequestIndex, incoming_request, shape_key
    from .loader import load_cassette
    from .normalize import Folds, Normalizer
    from .profiles import CLAUDE_CODE, PROFILES, Client, Pin, Profile, client_of, profile_for
    from .report import Divergence, ReplayDivergenceWarning, ReplayReport
    from .session import ReplaySession
    from .tools import RecordedToolError

__all__ = [
    "CLAUDE_CODE",
    "MODES",
    "PROFILES",
    "Cassette",
    "Client",
    "Divergence",
    "Folds",
    "Interaction",
    "Normalizer",
    "Pin",
    "Profile",
    "RecordedToolError",
    "ReplayDivergenceWarning",
    "ReplayReport",
    "ReplaySession",
    "Replayer",
    "RequestIndex",
    "ToolRecord",
    "client_of",
    "incoming_request",
    "load_cassette",
    "profile_for",
    "shape_key",
]

__getattr__, __dir__ = attach(__name__, __file__)
