"""Peers' cassettes (issue 17): every shape vcrpy writes loads or is refused with our CassetteError, a
pre-1.0 cassette is told vcrpy's migration command, and a link under cassettes/ is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_agentevals.errors import CassetteError
from pytest_agentevals.replay import load_cassette

TORNADO = """\
interactions:
- request:
    body: null
    headers:
      User-Agent: [Tornado/6.0]
    method: GET
    uri: https://example.com/tornado
  response:
    body: {string: 'hello'}
    headers:
    - [Content-Type, [text/plain]]
    - [Set-Cookie, [a=1, b=2]]
    status: {code: 200, message: OK}
version: 1
"""

# vcrpy before 1.0: a bare list, requests as Python objects, response headers as raw lines.
PRE_1_0 = """\
- request: !!python/object:vcr.request.Request
    body: null
    headers: !!python/object/apply:__builtin__.frozenset
    - - !!python/tuple [User-Agent, vcrpy-test]
    host: httpbin.org
    method: GET
    path: /
    port: 80
    protocol: http
  response:
    body: {string: '<html/>'}
    headers: ["Content-Type: text/html\\r\\n"]
    status: {code: 200, message: OK}
"""

PRE_1_0_UNTAGGED = """\
- request: {body: null, headers: {}, host: httpbin.org, method: GET, path: /, port: 80, protocol: http}
  response:
    body: {string: '<html/>'}
    headers: ["Content-Type: text/html\\r\\n"]
    status: {code: 200, message: OK}
"""


def test_a_tornado_style_cassette_loads(tmp_path: Path) -> None:
    (tmp_path / "tornado.yaml").write_text(TORNADO)
    (interaction,) = load_cassette(tmp_path / "tornado.yaml").interactions
    assert interaction.vcr_form["headers"] == {"Content-Type": ["text/plain"], "Set-Cookie": ["a=1", "b=2"]}
    assert interaction.vcr_form["body"] == {"string": b"hello"}


@pytest.mark.parametrize(
    "headers",
    ["headers: 5", "headers: [[a, b, c]]", "headers: [{a: b}]"],
    ids=["number", "triple", "mapping"],
)
def test_headers_of_no_known_shape_are_our_error(tmp_path: Path, headers: str) -> None:
    shaped = TORNADO.replace(
        "    headers:\n    - [Content-Type, [text/plain]]\n    - [Set-Cookie, [a=1, b=2]]\n",
        f"    {headers}\n",
    )
    assert shaped != TORNADO
    (tmp_path / "odd.yaml").write_text(shaped)
    with pytest.raises(CassetteError, match=r"interactions\[0\]\.response\.headers"):
        load_cassette(tmp_path / "odd.yaml")


@pytest.mark.parametrize("text", [PRE_1_0, PRE_1_0_UNTAGGED], ids=["tagged", "untagged"])
def test_a_pre_1_0_cassette_is_told_the_migration_command(tmp_path: Path, text: str) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(text)
    with pytest.raises(CassetteError) as raised:
        load_cassette(path)
    message = str(raised.value)
    assert "from before vcrpy 1.0" in message
    assert f"`python -m vcr.migration {path}`" in message
    assert "not valid YAML" not in message


def test_the_migration_command_is_vcrpys_own() -> None:
    """The entry point the message names exists in the vcrpy installed (vcr/migration.py's main)."""
    import vcr.migration

    assert callable(vcr.migration.main)
    assert "python3 -m vcr.migration PATH" in (vcr.migration.__doc__ or "")


def test_a_linked_cassette_is_collected_and_fails_naming_the_link(pytester: pytest.Pytester) -> None:
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "real.trace.jsonl").write_text('{"type": "run_start", "v": 1}\n')
    folder = pytester.path / "cassettes"
    folder.mkdir()
    os.symlink(elsewhere / "real.trace.jsonl", folder / "linked.trace.jsonl")
    pytester.makepyfile(test_fine="def test_fine():\n    pass\n")
    for args in ((), ("cassettes",)):
        result = pytester.runpytest(*args)
        result.stdout.fnmatch_lines(
            ["E   CassetteError: */cassettes/linked.trace.jsonl: is a symbolic link (to */real.trace.jsonl)*"]
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
