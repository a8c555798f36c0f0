"""The documented trace schema, checked once, and a reader that holds every line of a file to it."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from jsonschema.validators import validator_for

import pytest_agentevals as ae

SCHEMA = json.loads(files("pytest_agentevals.trace").joinpath("schema.json").read_text())
# Built once: jsonschema.validate() checks the schema itself again on every call.
VALIDATOR = validator_for(SCHEMA)(SCHEMA)
VALIDATOR.check_schema(SCHEMA)


def read_valid(path: Path) -> list[dict[str, Any]]:
    """Every line of a trace file is JSON valid against the documented schema (the first error is
    raised); the events as the trace reader reads them back."""
    for line in path.read_text(encoding="utf-8").splitlines():
        VALIDATOR.validate(json.loads(line))
    return ae.read_trace(path)
