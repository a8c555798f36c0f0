"""The resume layer's engine: checkpoint fixtures — their format, extraction, safe restore, the
environment contract — and booting from a checkpoint, from plain Python. No pytest here; `plugin.py`
is the face (registered by the plugin). See docs/resume.md.

    fixture, _ = extract("run.trace.jsonl", 120, "after-compaction", Path("fixtures"))
    fixture = open_fixture("after-compaction", Path("fixtures"))
    fixture.check_contract(declared={"db.schema": 3})          # ContractDrift on a drift
    leg = ResumeRun(RunSpec("leg", trace=..., workspace=..., runner=start_my_agent), fixture).start()
    point = resume_point_from_trace(Path("run.trace.jsonl"), "latest", workspace)  # a live run's own
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from ..contract import ContractDriftWarning, Drift
    from .boot import ResumePoint, resume_point_from_trace
    from .contract_guard import ContractGuard
    from .extraction import extract
    from .fixture import FORMAT_VERSION, Fixture
    from .phase import Phase
    from .restore import Entry
    from .run import ResumeRun
    from .store import names, open_fixture
    from .until import Condition, Until

__all__ = [
    "FORMAT_VERSION",
    "Condition",
    "ContractDriftWarning",
    "ContractGuard",
    "Drift",
    "Entry",
    "Fixture",
    "Phase",
    "ResumePoint",
    "ResumeRun",
    "Until",
    "extract",
    "names",
    "open_fixture",
    "resume_point_from_trace",
]

__getattr__, __dir__ = attach(
    __name__, __file__, deprecated={"ResumeSession": "pytest_agentevals.resume.run:resume_session"}
)
