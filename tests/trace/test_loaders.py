"""The bounded loaders (`trace/loaders.py`, `trace/yaml_loader.py`) and every reader of an untrusted
file that uses them: a hostile file is one error of this project naming the file, never a traceback,
and a bomb is refused before it is built.
"""

from __future__ import annotations

import json
import tempfile
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_agentevals.errors import AgentEvalsError, ConfigError, TraceFormatError
from pytest_agentevals.guards.ledger import Ledger
from pytest_agentevals.history import quarantine
from pytest_agentevals.marathon.results import read_results
from pytest_agentevals.replay.loader import load_cassette
from pytest_agentevals.resume.fixture import Fixture
from pytest_agentevals.step.loader import load_goldens
from pytest_agentevals.trace.loaders import MAX_DEPTH, excerpt, load_json
from pytest_agentevals.trace.reader import read_trace
from pytest_agentevals.trace.yaml_loader import load_yaml

START = {"type": "run_start", "v": 1, "run_id": "r", "agent": "a", "started_at": "2026-01-01", "contract": {}}

# 9 levels of 9: 400 bytes standing for 490 million nodes.
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def fail(line: int, problem: str) -> ConfigError:
    return ConfigError(f"f.yaml:{line}", problem)


# -- the loaders ----------------------------------------------------------------------------------


def test_a_yaml_alias_bomb_is_refused_before_it_is_built() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(
            ConfigError, match=r"holds YAML aliases that expand 28 written nodes into 490,329,064"
        ):
            load_yaml(BOMB, fail)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # built, even its first level's lists would take gigabytes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("when:\n  expires: 2026-02-30\n", "f.yaml:2: when.expires: '2026-02-30' is not a date"),
        ("n: !!int abc\n", "f.yaml:1: n: 'abc' is not an integer"),
        ("n: !!float abc\n", "f.yaml:1: n: 'abc' is not a number"),
        ("n: " + "9" * 5000 + "\n", "f.yaml:1: n: '99999999"),
        ("x: !!python/object:os.system {}\n", "f.yaml:1: x: is not valid YAML here: the tag"),
        ("x: !custom 1\n", "f.yaml:1: x: is not valid YAML here: the tag '!custom'"),
        ("a: &a [1, *a]\n", "f.yaml:0: holds an alias that contains itself"),
        ("[" * 5000 + "]" * 5000, "f.yaml:1: is not valid YAML"),
        ("- " * 200 + "x\n", f"nested deeper than {MAX_DEPTH} levels"),
    ],
)
def test_a_hostile_yaml_is_one_error_naming_line_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_yaml(text, fail)
    assert message in str(caught.value)
    assert len(str(caught.value)) < 300  # a bounded excerpt, never a repr of what was loaded


def test_safe_yaml_still_loads() -> None:
    text = "d: &d {a: 1}\nx: {<<: *d, b: 2026-02-28, c: !!binary aGk=}\ny: [*d, *d]\n"
    assert load_yaml(text, fail) == {
        "d": {"a": 1},
        "x": {"a": 1, "b": __import__("datetime").date(2026, 2, 28), "c": b"hi"},
        "y": [{"a": 1}, {"a": 1}],
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 1000 + "]" * 1000, f"f.yaml:1: not valid JSON here: nested deeper than {MAX_DEPTH} levels"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"a":\n  ' + "1" * 5000 + "}", "f.yaml:2: not valid JSON here: a number of thousands of digits"),
        ('{"a":\n 1,,}', "f.yaml:2: not valid JSON (Expecting property name"),
    ],
)
def test_a_hostile_json_is_one_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_json(text, fail)
    assert message in str(caught.value)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
@pytest.mark.parametrize("opener", ["[", "{"], ids=["arrays", "objects"])
def test_nesting_is_refused_just_past_the_bound(as_bytes: bool, opener: str) -> None:
    # The depth walk is skipped for lines with too few brackets to be that deep: the bound must
    # still hold exactly, for either kind of bracket, and brackets inside strings open nothing.
    def nested(depth: int) -> str:
        if opener == "[":
            return "[" * depth + "]" * depth
        return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)

    def load(text: str) -> Any:
        return load_json(text.encode() if as_bytes else text, fail)

    assert load(nested(MAX_DEPTH)) is not None
    assert load(json.dumps({"text": opener * MAX_DEPTH * 2})) == {"text": opener * MAX_DEPTH * 2}
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load(nested(MAX_DEPTH + 1))


def test_an_excerpt_is_bounded() -> None:
    assert excerpt("x" * 10_000) == repr("x" * 60 + "...")


# -- every reader ----------------------------------------------------------------------------------


def test_a_deep_or_huge_trace_line_is_a_trace_format_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.trace.jsonl"
    deep = {"type": "note", "seq": 1, "t": 0.0, "text": "x", "data": json.loads("[" * 500 + "]" * 500)}
    path.write_text(json.dumps(START) + "\n" + json.dumps(deep) + "\n")
    with pytest.raises(
        TraceFormatError, match=r"deep\.trace\.jsonl:2: the line is not valid JSON here: nested"
    ):
        read_trace(path)
    path.write_text(json.dumps(START) + "\n" + '{"type": "note", "seq": ' + "7" * 5000 + "}\n")
    with pytest.raises(
        TraceFormatError,
        match=r"deep\.trace\.jsonl:2: the line is not valid JSON here: a number of thousands",
    ):
        read_trace(path)


def test_the_agentevals_command_says_what_is_wrong_with_a_deep_trace(tmp_path: Path) -> None:
    from ..conftest import run_agentevals

    path = tmp_path / "deep.trace.jsonl"
    path.write_text(json.dumps(START) + "\n" + '{"type": "note", "data": ' + "[" * 1000 + "]" * 1000 + "}\n")
    for command in (["show", str(path)], ["report", str(path), "-o", str(tmp_path / "r.html")]):
        result = run_agentevals(*command, cwd=tmp_path)
        shown = result.stdout + result.stderr
        assert "Traceback" not in shown
        assert "not valid JSON here: nested deeper than" in shown


def test_a_goldens_bomb_is_a_golden_error(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB + "cases: []\n")
    with pytest.raises(AgentEvalsError, match=r"bomb\.yaml: holds YAML aliases that expand"):
        load_goldens(path)


def test_a_ledger_nested_deep_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_text('{"days": ' + "[" * 1000 + "]" * 1000 + "}")
    with pytest.raises(AgentEvalsError, match=r"ledger\.json is corrupt: line 1 is not valid JSON here"):
        Ledger(path).state()


# -- Hypothesis: every reader loads or raises this project's error ------------------------------------

_YAML_HOSTILE = [
    BOMB,
    "a: &a [1, *a]\n",
    "x: !!python/object/apply:os.system [echo]\n",
    "x: !!int abc\n",
    "x: 2026-02-30\n",
    "x: " + "1" * 5000 + "\n",
    "- " * 300 + "x\n",
    "[" * 3000,
    "{a: 1\n",
    "? [a, b]\n: c\n",
    "<<: 1\n",
    "x: !!binary '%%%'\n",
    "x: !!timestamp nope\n",
    "\t\x00\ufeff",
]
_JSON_HOSTILE = [
    "[" * 2000 + "]" * 2000,
    '{"a": ' + "1" * 5000 + "}",
    '{"a": 1e999999}',
    '{"a": NaN}',
    '{"a": "\\ud800"}',
    "[" * 200_000,
    '{"type": "run_start", "v": ' + "9" * 4400 + "}",
    "\x80\x81",
]


def _hostile(pieces: list[str]) -> st.SearchStrategy[bytes]:
    text = st.sampled_from(pieces)
    truncated = st.tuples(text, st.integers(0, 5000)).map(lambda pair: pair[0][: pair[1]])
    joined = st.lists(st.one_of(text, truncated, st.text(max_size=20)), min_size=1, max_size=4).map("\n".join)
    return st.one_of(text, truncated, joined).map(lambda s: s.encode("utf-8", "surrogatepass"))


def _trace(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_trace(path)


def _results(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_results(path)


def _fixture(path: Path) -> Any:
    folder = path.parent / "fixture"
    folder.mkdir(exist_ok=True)
    (folder / "manifest.json").write_bytes(path.read_bytes())
    return Fixture.open(folder)


READERS: dict[str, tuple[str, Callable[[Path], Any], list[str]]] = {
    "trace": ("x.trace.jsonl", _trace, _JSON_HOSTILE),
    "cassette (trace)": ("x.trace.jsonl", load_cassette, _JSON_HOSTILE),
    "cassette (vcr yaml)": ("x.yaml", load_cassette, _YAML_HOSTILE),
    "golden": ("x.yaml", load_goldens, _YAML_HOSTILE),
    "quarantine": ("agentevals-quarantine.yaml", quarantine.load, _YAML_HOSTILE),
    "fixture manifest": ("manifest.json", _fixture, _JSON_HOSTILE),
    "results": ("results.jsonl", _results, _JSON_HOSTILE),
    "ledger": ("ledger.json", lambda path: Ledger(path).state(), _JSON_HOSTILE),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_loads_or_raises_this_projects_error(reader: str) -> None:
    name, read, pieces = READERS[reader]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_hostile(pieces))
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            message = ""
            try:
                read(path)
            except AgentEvalsError as exc:
                message = str(exc)
            assert len(message) < 2000  # bounded: never the repr of what was loaded

    check()
