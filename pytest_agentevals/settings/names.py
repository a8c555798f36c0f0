"""The naming table: every name a user types — markers, their keywords, fixtures, settings, flags of
both commands, errors — declared once, with the rules they follow and the 0.x spellings that still
work for one release (each use warned with an `AgentEvalsDeprecationWarning`, or a line on stderr).
`tests/settings/test_names.py` holds the plugin, the `agentevals` command and `errors.py` to it, so a
new name that breaks a rule, or a name missing here, fails there.

The rules:
- one word per layer (`LAYER_WORDS`), the same word for its marker, its fixture (`agentevals_<word>`),
  its subcommand and its docs page; the recorder's fixture is named after what it gives;
- every other marker and fixture begins with `agentevals_`;
- a marker keyword that overrides a setting is the setting's key (`replay_mode=`, not `mode=`);
- a setting's pytest option is `--agentevals-<key>`, its `agentevals` flag `--<key>` (dashes for
  underscores); a folder setting is `<folder>_dir`, named after the folder it defaults to;
- where a command writes is `-o/--output`;
- an error is named for what went wrong and belongs to its layer's base (`ERRORS`).
"""

from __future__ import annotations

from .options import OPTIONS

LAYER_WORDS = ("step", "replay", "resume", "marathon")

MARKERS = {
    "step": "step",
    "replay": "replay",
    "resume": "resume",
    "marathon": "marathon",
    "agentevals_budget": "guards",
    "agentevals_metamorphic": "step",
    "agentevals_step_kind": "step",
}
FIXTURES = {
    "agentevals_recorder": "recording",
    "agentevals_replay": "replay",
    "agentevals_resume": "resume",
    "agentevals_marathon": "marathon",
    "agentevals_seed": "marathon",
    "agentevals_decide": "step",
    "agentevals_judge": "step",
    "agentevals_endpoint": "endpoint",
}
# The `agentevals` subcommands; `flaky` is the history's report (what its users call it).
COMMANDS = {
    "record": "recording",
    "show": "trace",
    "report": "report",
    "flaky": "history",
    "step": "step",
    "judge": "step",  # the step cases' judge, measured (`judge audit`)
    "replay": "replay",
    "promote": "replay",
    "import": "imports",  # runs kept elsewhere, read into traces (docs/imports.md)
    "export": "imports",  # and a trace written for other tools (OTLP)
    "resume": "resume",
    "contract": "adapters",  # the contract keys a harness's code implies (graph_contract)
    "scan": "report",
    "marathon": "marathon",
    "triage": "triage",
}
# Every error and warning a user may catch, and the base it belongs to.
ERRORS = {
    "AgentEvalsError": "Exception",
    "ConfigError": "AgentEvalsError",
    "TraceError": "AgentEvalsError",
    "TraceFormatError": "TraceError",
    "NewerTraceVersion": "TraceFormatError",
    "MessageFormatError": "TraceError",
    "RecordingError": "AgentEvalsError",
    "AmbiguousRun": "RecordingError",
    "SimError": "AgentEvalsError",
    "HistoryError": "AgentEvalsError",
    "LinkRefused": "AgentEvalsError",
    "GoldenError": "AgentEvalsError",
    "StaleGolden": "GoldenError",
    "ReplayError": "AgentEvalsError",
    "CassetteError": "ReplayError",
    "StaleCassette": "CassetteError",
    "UnrecordedRequest": "ReplayError",
    "ReplayDivergence": "ReplayError",
    "RunStopped": "AgentEvalsError",
    "GuardError": "AgentEvalsError",
    "LedgerError": "AgentEvalsError",
    "ReportError": "AgentEvalsError",
    "MarathonError": "AgentEvalsError",
    "CheckpointError": "AgentEvalsError",
    "ContractDrift": "CheckpointError",
    "TriageError": "AgentEvalsError",
    "AgentEvalsDeprecationWarning": "DeprecationWarning",
}
# Where each command writes (the flag every one of them spells `-o/--output`).
OUTPUT_COMMANDS = (
    "record",
    "replay",
    "report",
    "step extract",
    "marathon merge",
    "flaky migrate",
    "import",
    "export otlp",
    "triage shrink",
)

# The 0.x spellings, by kind: old -> new. Settings' keys and their marker keywords are declared with
# their option (`Option.old`, `Option.old_marker_kwargs`); the rest are listed here.
RENAMED: dict[str, dict[str, str]] = {
    "setting": {old: option.key for option in OPTIONS for old in option.old},
    "marker keyword": {
        old: str(option.marker_kwarg) for option in OPTIONS for old in option.old_marker_kwargs
    },
    "marker": {"metamorphic": "agentevals_metamorphic"},
    "fixture": {"agentevals_checkpoint": "agentevals_resume"},
    "flag": {
        "step extract --out": "--output",
        "marathon merge --out": "--output",
        "flaky migrate --to": "--output",
        "replay --mode": "--replay-mode",
        "promote --mode": "--replay-mode",
        "promote --cassette-dir": "--cassettes-dir",
        "marathon --marathon-dir": "--marathons-dir",
        **{f"--agentevals-{old.replace('_', '-')}": option.cli for option in OPTIONS for old in option.old},
    },
    "command": {"goldens": "step", "checkpoint": "resume"},
    "class": {
        "ReplaySession": "ReplayRun",
        "ResumeSession": "ResumeRun",
        "guards.Verdict": "guards.Ruling",
        "AgentRun.session": "AgentRun.layer_run",
    },
}


def folder_of(key: str) -> str:
    """The folder a `*_dir` setting is named after: its default's last part."""
    option = next(option for option in OPTIONS if option.key == key)
    return str(option.default).rstrip("/").rsplit("/", 1)[-1]


__all__ = [
    "COMMANDS",
    "ERRORS",
    "FIXTURES",
    "LAYER_WORDS",
    "MARKERS",
    "OUTPUT_COMMANDS",
    "RENAMED",
    "folder_of",
]
