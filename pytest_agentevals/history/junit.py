"""Read a JUnit XML file (with junitparser) into test attempts, reruns included.

The shapes reruns leave behind, all read as one attempt each:

- repeated `<testcase>` records with the same classname and name (pytest-rerunfailures writes one per
  attempt, and the records of attempts that were rerun are often empty): every record but the last
  is an attempt that failed, since only a failure is rerun; the last is what it says;
- `<flakyFailure>` / `<flakyError>` (Maven Surefire's shape, also written by other tools): failed
  attempts before the one the testcase records (it failed, then passed on a rerun);
- `<rerunFailure>` / `<rerunError>`: failed reruns after the testcase's own failure.

A file is assumed to hold one test session. Test ids are mapped back to pytest node ids (see
`TestIds`), layers from the `agentevals.layer` property the plugin writes or from the history.

A testcase a budget stopped is the attempt outcome `budget_stopped`: one carrying the
`agentevals.budget_stop` property the plugin writes (unless it was skipped), or one whose failure or
error is the project's `RunStopped` with status `budget_exhausted` (its message, as pytest writes it:
`pytest_agentevals.errors.RunStopped: the run_budget guard stopped the run as budget_exhausted: ...`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import ParseError

from junitparser import JUnitXmlError, Properties, Property, TestCase
from junitparser.junitparser import Error, Failure, Skipped
from junitparser.xunit2 import FlakyError, FlakyFailure, JUnitXml, RerunError, RerunFailure

from ..errors import HistoryError
from .model import BUDGET_STOPPED, ERROR, FAILED, PASSED, SKIPPED
from .variant import BUDGET_STOP_PROPERTY, LAYER_PROPERTY, VARIANT_PREFIX, VARIANT_PROPERTY, from_properties

SOURCE_PROPERTY = "agentevals_source"  # a testsuite property: the pytest session that wrote the file

# The tags of a testcase's children, as junitparser names them. What the testcase itself records...
_FINAL = {Failure._tag: FAILED, Error._tag: ERROR, Skipped._tag: SKIPPED}
# ...attempts that came before it (it failed, then passed on a rerun)...
_BEFORE = {FlakyFailure._tag: FAILED, FlakyError._tag: ERROR}
# ...and after it (the testcase's own failure came first, then failing reruns).
_AFTER = {RerunFailure._tag: FAILED, RerunError._tag: ERROR}
_PROPERTIES = Properties._tag
_PROPERTY = Property._tag
_RANK = {PASSED: 0, SKIPPED: 1, ERROR: 2, FAILED: 3}
# A failure's message when the project's budget stop raised it (RunStopped's own wording).
_BUDGET_STOP_MESSAGE = re.compile(r"\bRunStopped\b.{0,200}?\bstopped the run as budget_exhausted\b", re.S)


@dataclass(slots=True)
class Case:
    """One test in a JUnit file, with every attempt it made there in order."""

    classname: str
    name: str
    layer: str | None  # from the agentevals.layer property, if the plugin wrote one
    variant: str
    outcomes: list[tuple[str, float]] = field(default_factory=list)  # (outcome, seconds)


@dataclass(frozen=True)
class JUnitFile:
    path: Path
    digest: str  # sha256 of the bytes: the file's identity for idempotent ingest
    source: str | None  # the pytest session that wrote it, when the plugin was active
    cases: list[Case]


def _seconds(raw: str | None) -> float:
    if not raw:
        return 0.0
    try:
        return float(raw)
    except ValueError:
        try:
            return float(raw.replace(",", ""))  # "1,234.5", as some tools write it
        except ValueError:
            return 0.0


def _variant(properties: Any) -> tuple[str | None, str]:
    """(layer, variant) from a testcase's <properties> element, as the plugin writes them."""
    if len(properties) == 1 and properties[0].get("name") == LAYER_PROPERTY:
        return properties[0].get("value") or None, ""  # the common case: a layer, no variant
    ours = []
    for prop in properties:
        if prop.tag != _PROPERTY:
            continue
        name = prop.get("name") or ""
        if name in (LAYER_PROPERTY, VARIANT_PROPERTY) or name.startswith(VARIANT_PREFIX):
            ours.append((name, prop.get("value") or ""))
    return from_properties(ours)


def _stopped_by_budget(properties: Any) -> bool:
    """Whether a testcase's <properties> hold the plugin's budget-stop property."""
    if len(properties) == 1 and properties[0].get("name") == LAYER_PROPERTY:
        return False  # the common case: a layer, nothing else
    return any(prop.get("name") == BUDGET_STOP_PROPERTY for prop in properties if prop.tag == _PROPERTY)


def read(path: Path) -> JUnitFile:
    """Read and parse one JUnit XML file (see `parse`)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HistoryError(
            f"{path}: cannot be read ({exc.strerror}); check the path and permissions"
        ) from None
    return parse(path, data, digest_of(data))


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse(path: Path, data: bytes, digest: str) -> JUnitFile:
    """Parse the bytes of a JUnit XML file. Anything but JUnit XML raises HistoryError naming `path`."""
    try:
        xml = JUnitXml.fromstring(data)
    except ParseError as exc:
        raise HistoryError(
            f"{path}: is not well-formed XML ({exc}); a truncated artifact? regenerate it or leave it out"
        ) from None
    except JUnitXmlError:
        raise HistoryError(
            f"{path}: is XML but not JUnit XML (its root is neither <testsuites> nor <testsuite>); "
            "leave it out of the pattern"
        ) from None
    source: str | None = None
    by_test: dict[tuple[str, str], Case] = {}
    for suite in xml:
        props = suite.child(Properties)  # type: ignore[no-untyped-call]
        for prop in props or ():
            if prop.name == SOURCE_PROPERTY:
                source = prop.value
        # junitparser wraps every testcase, and every child of one, in a new object as it hands them
        # out; ingest reads hundreds of thousands of testcases, so it walks the suite's own
        # ElementTree elements (nested suites included) once instead.
        for case in suite._elem.iter(TestCase._tag):
            _add(by_test, case)
    return JUnitFile(path, digest, source, list(by_test.values()))


def _add(by_test: dict[tuple[str, str], Case], elem: Any) -> None:
    """Add the attempts one <testcase> element records."""
    classname: str = elem.get("classname") or ""
    name: str = elem.get("name") or ""
    final = PASSED
    before: list[str] = []
    after: list[str] = []
    properties = None
    stopped = False  # the failure or error is a budget's stop
    for child in elem:
        tag = child.tag
        if tag == _PROPERTIES:
            properties = child
        elif tag in _FINAL:
            if _RANK[_FINAL[tag]] > _RANK[final]:
                final = _FINAL[tag]
            if tag != Skipped._tag:
                message = child.get("message") or ""
                if "budget_exhausted" in message and _BUDGET_STOP_MESSAGE.search(message):
                    stopped = True
        elif tag in _BEFORE:
            before.append(_BEFORE[tag])
        elif tag in _AFTER:
            after.append(_AFTER[tag])
    key = (classname, name)
    known = by_test.get(key)
    if known is None:
        layer, variant = (None, "") if properties is None else _variant(properties)
        known = by_test[key] = Case(classname, name, layer, variant)
    elif known.outcomes and known.outcomes[-1][0] == PASSED:
        # An earlier record of the same test that passed was rerun, so it did not pass: pytest's
        # junitxml leaves the records of rerun attempts empty.
        known.outcomes[-1] = (FAILED, known.outcomes[-1][1])
    if final != SKIPPED and (stopped or (properties is not None and _stopped_by_budget(properties))):
        final = BUDGET_STOPPED
    outcomes = known.outcomes
    if before:
        outcomes.extend((outcome, 0.0) for outcome in before)
    outcomes.append((final, _seconds(elem.get("time"))))
    if after:
        outcomes.extend((outcome, 0.0) for outcome in after)


_PY_FILE = re.compile(r"(^test_.*|.*_test)$")


class TestIds:
    """Maps a JUnit (classname, name) back to a pytest node id.

    In order: a node id already in the history whose JUnit form matches; a module that exists under
    `rootdir` (the longest dotted prefix of the classname that is a .py file); pytest's naming
    conventions (test_*.py / *_test.py modules, Test* classes); else `classname::name` as is.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, rootdir: Path, known: Mapping[str, str | None]) -> None:
        self.rootdir = rootdir
        self.known = known
        self._by_junit = {mangle(test_id): test_id for test_id in known}
        self._modules: dict[str, tuple[str, list[str]] | None] = {}

    def nodeid(self, classname: str, name: str) -> str:
        found = self._by_junit.get((classname, name))
        if found is not None:
            return found
        module = self._module(classname)
        if module is None:
            found = f"{classname}::{name}" if classname else name
        else:
            path, classes = module
            found = "::".join([path, *classes, name])
        self._by_junit[(classname, name)] = found  # the same tests come back in every file
        return found

    def layer(self, nodeid: str) -> str | None:
        return self.known.get(nodeid)

    def _module(self, classname: str) -> tuple[str, list[str]] | None:
        if classname in self._modules:
            return self._modules[classname]
        parts = classname.split(".") if classname else []
        found: tuple[str, list[str]] | None = None
        for cut in range(len(parts), 0, -1):
            relative = "/".join(parts[:cut]) + ".py"
            if os.path.isfile(self.rootdir / relative):
                found = (relative, parts[cut:])
                break
        if found is None:
            cut = len(parts)
            while cut > 1 and parts[cut - 1][:1].isupper():
                cut -= 1
            if cut >= 1 and _PY_FILE.match(parts[cut - 1]):
                found = ("/".join(parts[:cut]) + ".py", parts[cut:])
        self._modules[classname] = found
        return found


def mangle(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's junitxml writes for a node id (as `mangle_test_address`)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]
