"""The bounded YAML loader's fast path (`trace/yaml_plain.py`): plain data is built from the parser's
events, and every file that is not plain data is declined at its gate and read by the bounded path,
which refuses it as before. Each crafted file below is asserted declined by the fast path itself, so a
gate taken away fails here, not only in the end-to-end error."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentevals.errors import ConfigError
from pytest_agentevals.trace import yaml_loader
from pytest_agentevals.trace.loaders import MAX_DEPTH
from pytest_agentevals.trace.yaml_loader import bounded_yaml, load_yaml
from pytest_agentevals.trace.yaml_plain import DECLINED, build_plain

from .test_loaders import BOMB


def fail(line: int, problem: str) -> ConfigError:
    return ConfigError(f"f.yaml:{line}", problem)


def fast(text: str | bytes, *, python_tags: bool = False) -> Any:
    loader = (yaml_loader._PythonTagsLoader if python_tags else yaml_loader._Loader)(text)
    try:
        return build_plain(loader)
    finally:
        loader.dispose()


GOLDENS = """\
scenario: refactor
cases:
- id: step-1-tool-choice
  kind: tool_choice
  context:
    request:
      max_tokens: 512
      temperature: 0.5
      messages:
      - role: user
        content: 'Task 1: fix src/a.py; yes, on: 2026-02-01'
      - {role: assistant, content: [{type: tool_use, id: tu_1, name: read_file, input: {path: a.py}}]}
  expect:
    tool: write_file
    args: {path: {$regex: "^src/.*\\\\.py$"}, content: $any, lines: [1, 0x1f, 1_000, -2.5e3, .inf]}
  xfail: ~
  when: 2026-02-01 10:30:00
  flags: [yes, No, true, off, null, '', "", ""]
  text: |
    def f():
        return 1
"""


def test_plain_data_is_built_without_the_bounded_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = yaml.load(GOLDENS, Loader=yaml.SafeLoader)
    assert fast(GOLDENS) == expected
    assert fast(GOLDENS.encode()) == expected  # a cassette is read as bytes
    assert expected["cases"][0]["when"] == datetime.datetime(2026, 2, 1, 10, 30)
    assert math.isinf(expected["cases"][0]["expect"]["args"]["lines"][4])

    def no_walk(root: Any) -> Any:
        raise AssertionError("plain data went through the bounded walk")

    monkeypatch.setattr(yaml_loader, "_walk", no_walk)
    assert load_yaml(GOLDENS, fail) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", None, id="empty"),
        pytest.param("# only a comment\n", None, id="comment"),
        pytest.param("--- \n", None, id="an empty document"),
        pytest.param("hello\n", "hello", id="a bare scalar"),
        pytest.param("a: 1\na: 2\n", {"a": 2}, id="a repeated key"),
        pytest.param("'<<': 1\n", {"<<": 1}, id="a quoted merge key is a string"),
        pytest.param("- " * (MAX_DEPTH - 3) + "x\n", None, id="nested well within the bound"),
    ],
)
def test_plain_corner_cases_build_as_the_bounded_path_does(text: str, message: Any) -> None:
    assert fast(text) is not DECLINED
    assert fast(text) == bounded_yaml(text, fail)
    if message is not None:
        assert fast(text) == message


# Every way a file can be more than plain data: the fast path's gate must send each to the bounded
# path, which refuses it (or builds it) as it always did.
HOSTILE = [
    pytest.param(BOMB, "holds YAML aliases that expand 28 written nodes into 490,329,064", id="alias bomb"),
    pytest.param("a: &a [1, *a]\n", "f.yaml:0: holds an alias that contains itself", id="self alias"),
    pytest.param("a: *nowhere\n", "f.yaml:1: is not valid YAML: found undefined alias", id="unknown alias"),
    pytest.param(
        "x: !!python/object/apply:os.system ['touch pwned']\n",
        "f.yaml:1: x: is not valid YAML here: the tag",
        id="python tag",
    ),
    pytest.param("x: !custom 1\n", "the tag '!custom' is not one of YAML's safe tags", id="custom tag"),
    pytest.param("x: !!int abc\n", "f.yaml:1: x: 'abc' is not an integer", id="int tag"),
    pytest.param("when:\n  d: 2026-02-30\n", "f.yaml:2: when.d: '2026-02-30' is not a date", id="bad date"),
    pytest.param("n: " + "9" * 5000 + "\n", "f.yaml:1: n: '99999999", id="huge integer"),
    pytest.param("- " * 200 + "x\n", f"nested deeper than {MAX_DEPTH} levels", id="deep block"),
    pytest.param("[" * 5000 + "]" * 5000, "f.yaml:1: is not valid YAML", id="deep flow"),
    pytest.param("a: [1, 2\n", "is not valid YAML", id="cut short"),
    pytest.param("--- a\n--- b\n", "f.yaml:2: is not valid YAML: but found another", id="two documents"),
    pytest.param("? [a, b]\n: 1\n", "is not valid YAML", id="a sequence as a key"),
    pytest.param("x: =\n", "is not valid YAML", id="the value tag"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE)
def test_a_hostile_yaml_is_declined_by_the_fast_path_and_refused(
    text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert fast(text) is DECLINED
    with pytest.raises(ConfigError) as caught:
        load_yaml(text, fail)
    assert message in str(caught.value)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("d: &d {a: 1}\nx: {<<: *d, b: 2}\n", id="anchor, alias and merge"),
        pytest.param("a: &x 1\n", id="an anchor alone"),
        pytest.param("a: {<<: {b: 1}}\n", id="a merge key"),
        pytest.param("c: !!binary aGk=\n", id="binary"),
        pytest.param("s: !!str 12\n", id="a str tag"),
        pytest.param("s: ! 12\n", id="the non-specific tag"),
        pytest.param("s: !!set {a, b}\n", id="a set"),
    ],
)
def test_safe_yaml_beyond_plain_data_takes_the_bounded_path(text: str) -> None:
    assert fast(text) is DECLINED
    assert load_yaml(text, fail) == bounded_yaml(text, fail) == yaml.load(text, Loader=yaml.SafeLoader)


def test_vcrpys_python_tags_take_the_bounded_path() -> None:
    text = "a: !!python/unicode x\nb: !!python/tuple [1, 2]\n"
    assert fast(text, python_tags=True) is DECLINED
    assert load_yaml(text, fail, python_tags=True) == {"a": "x", "b": (1, 2)}


# -- the fast path and the bounded one agree on every document --------------------------------------

_PLAIN = st.sampled_from(
    [
        "x", "yes", "No", "on", "OFF", "true", "null", "~", "12", "-0", "0x1F", "0o17", "1_000", "1:30",
        "3.5", "-.inf", ".NaN", "1e3", "2026-02-01", "2026-02-01 10:30:00Z", "a b", "src/a.py", "$any",
    ]
)  # fmt: skip
_SAFE = st.one_of(_PLAIN, _PLAIN.map(lambda text: f"'{text}'"), _PLAIN.map(lambda text: f'"{text}"'))
_ANY = st.one_of(
    _SAFE,
    st.sampled_from(
        ["2026-02-30", "<<", "=", "9" * 5000, "!!str 1", "!!int x", "!custom 1", "&a 1", "*a", "! 1"]
    ),
)


def _flow(scalar: st.SearchStrategy[str], depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return scalar
    inner = _flow(scalar, depth - 1)
    return st.one_of(
        scalar,
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(scalar, inner), max_size=3).map(
            lambda pairs: "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}"
        ),
    )


def _document(scalar: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        _flow(scalar, 3),
        st.lists(st.tuples(scalar, _flow(scalar, 2)), min_size=1, max_size=4).map(
            lambda pairs: "".join(f"{key}: {value}\n" for key, value in pairs)
        ),
        st.lists(_flow(scalar, 2), min_size=1, max_size=4).map(
            lambda items: "".join(f"- {item}\n" for item in items)
        ),
    )


def _outcome(load: Any, text: str) -> tuple[str, str]:
    try:
        return "value", repr(load(text))  # repr: NaN is not equal to itself
    except ConfigError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_document(_SAFE), _document(_ANY)))
def test_the_fast_path_builds_what_the_bounded_path_builds_or_declines(text: str) -> None:
    built = fast(text)
    bounded = _outcome(lambda text: bounded_yaml(text, fail), text)
    if built is not DECLINED:
        assert bounded == ("value", repr(built)), text
    assert _outcome(lambda text: load_yaml(text, fail), text) == bounded
