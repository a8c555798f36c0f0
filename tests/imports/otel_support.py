"""Real OpenTelemetry for the OTLP import tests: the SDK, its in-memory exporter, the OTLP protobuf
encoder and opentelemetry-instrumentation-anthropic (the `otel` extra, in `test`). Without them the
tests skip, saying why; under CI (`CI` set) they fail."""

from __future__ import annotations

import os
from typing import Any

import pytest


def need(module: str) -> Any:
    try:
        return pytest.importorskip(module, reason=f"needs {module}: pip install -e '.[otel]'")
    except pytest.skip.Exception:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {module} is not installed (pip install -e '.[otel]')")
        raise
