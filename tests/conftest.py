"""Fixtures shared by the project's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def make_fake_key(label: str = "test") -> str:
    """An Anthropic-shaped key that is obviously fake, built at run time so no key-shaped literal
    sits in the repo."""
    return "sk-ant-" + "api03-" + f"fake{label}" + "Q" * 40


@pytest.fixture
def fake_api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fake key, also exported as ANTHROPIC_API_KEY the way a user's shell would."""
    key = make_fake_key()
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    return key


@pytest.fixture
def repo_root() -> Path:
    return REPO
