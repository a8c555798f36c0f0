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
    from .matching import answers_at_sdk, serving_at_sdk, what_changed
    from .normalize import Folds, Normalizer
    from .profiles import CLAUDE_CODE, PROFILES, Client, Pin, Profile, client_of, profile_for
    from .report import Divergence, ReplayDivergenceWarning, ReplayReport
    from .run import ReplayRun
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
    "ReplayRun",
    "Replayer",
    "RequestIndex",
    "ToolRecord",
    "answers_at_sdk",
    "client_of",
    "incoming_request",
    "load_cassette",
    "profile_for",
    "serving_at_sdk",
    "shape_key",
    "what_changed",
]

__getattr__, __dir__ = attach(__name__, __file__, deprecated={"ReplaySession": "ReplayRun"})
