"""A database URL is cut where libpq cuts it, by a parser, never a pattern: its password, however
written (raw '/', '@', ':', '?', or percent-encoded), never appears in what `str()`, `repr()` or a
setting error shows."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from pytest_agentevals.errors import ConfigError
from pytest_agentevals.settings import Settings
from pytest_agentevals.settings.dburl import DatabaseURL, redact, secrets_of

SECRET = "Hunter/Two@Three:Four?Five%Six"
PIECES = ("Hunter", "Two", "Three", "Four", "Five", "Six")


def shows_no_piece(text: str) -> None:
    for piece in PIECES:
        assert piece not in text, text


ENCODED = f"postgresql://ci:{quote(SECRET, safe='')}@db.example:5432/evals"
WRITTEN = [
    pytest.param(ENCODED, id="percent-encoded"),
    pytest.param(f"postgresql://ci:{SECRET}@db.example:5432/evals", id="raw"),
    pytest.param(f"postgresql://ci:{SECRET}@db.example/evals?application_name=a@b", id="raw-at-in-query"),
    pytest.param(f"postgres://ci:{quote(SECRET, safe='')}@h1:5432,h2:5433/evals", id="host-list"),
    pytest.param(f"postgresql://ci:{quote(SECRET, safe='')}@[::1]:5432/evals", id="ipv6"),
    pytest.param(f"postgresql://db.example/evals?sslmode=require&password={quote(SECRET)}", id="param"),
    pytest.param(f"postgresql://db.example/evals?PassWord={SECRET}", id="param-raw"),
    pytest.param("postgresql://ci:Hunter:Two:Three@db.example/evals", id="colons"),
]


@pytest.mark.parametrize("url", WRITTEN)
def test_the_password_is_never_shown_however_it_is_written(url: str) -> None:
    database = DatabaseURL(url)
    shows_no_piece(str(database) + repr(database) + redact(url))
    assert "***" in str(database)


def test_the_server_and_the_rest_stay_readable() -> None:
    assert str(DatabaseURL(ENCODED)) == "postgresql://ci:***@db.example:5432/evals"
    shown = "postgresql://ci:***@db.example/evals?application_name=a%40b&sslmode=require"
    assert str(DatabaseURL(shown.replace("***", quote(SECRET, safe="")))) == shown
    assert str(DatabaseURL("postgresql://ci@db.example/evals")) == "postgresql://ci@db.example/evals"


def test_the_secret_forms_a_message_may_quote_are_as_written_and_decoded() -> None:
    assert secrets_of(ENCODED) == [quote(SECRET, safe=""), SECRET]
    assert secrets_of("postgresql://ci@db.example/evals") == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (f"postgresql://ci:{SECRET}@db.example:5432/evals", "write '@' as %40 and '/' as %2F"),
        ("postgresql://ci:Hunter@Two@db.example:5432/evals", "write '@' as %40 and '/' as %2F"),
        ("postgresql://ci:HunterTwo@db.example/evals?application_name=a@b", "is written unencoded"),
        ("postgresql://ci:HunterTwo@db.example:notaport/evals", "port 'notaport' is not a number"),
    ],
)
def test_a_url_libpq_would_cut_elsewhere_is_a_setting_error_without_the_password(
    url: str, problem: str, tmp_path: Path
) -> None:
    for where in ("history", "ledger"):
        with pytest.raises(ConfigError) as raised:
            Settings.resolve(tmp_path, pyproject={where: url}, environ={})
        message = str(raised.value)
        assert f"[tool.agentevals] {where}" in message
        assert problem in message
        shows_no_piece(message)
        assert "HunterTwo" not in message


def test_an_encoded_password_is_accepted() -> None:
    assert DatabaseURL.parse("history", ENCODED).url == ENCODED
