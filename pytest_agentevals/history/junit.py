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
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree.ElementTree import ParseError

from junitparser import JUnitXmlError, Properties, TestCase
from junitparser.junitparser import Element, Error, Failure, Skipped
from junitparser.xunit2 import FlakyError, FlakyFailure, JUnitXml, RerunError, RerunFailure

from ..errors import HistoryError
from .model import ERROR, FAILED, PASSED, SKIPPED
from .variant import LAYER_PROPERTY, VARIANT_PREFIX, VARIANT_PROPERTY, from_properties

SOURCE_PROPERTY = "agentevals_source"  # a testsuite property: the pytest session that wrote the file

# Attempts that came before the one the testcase records (it failed, then passed on a rerun)...
_BEFORE = {FlakyFailure: FAILED, FlakyError: ERROR}
# ...and after it (the testcase's own failure came first, then failing reruns).
_AFTER = {RerunFailure: FAILED, RerunError: ERROR}


@dataclass
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


def _seconds(case: TestCase) -> float:
    try:
        value = case.time
    except (ValueError, TypeError):
        return 0.0
    return float(value) if value else 0.0


def _properties(element: Element) -> Properties | None:
    props: Properties | None = element.child(Properties)  # type: ignore[no-untyped-call]
    return props


def _variant(case: TestCase) -> tuple[str | None, str]:
    """(layer, variant) from the properties the plugin wrote into a testcase, if any."""
    props = _properties(case)
    if props is None:
        return None, ""
    ours = []
    for prop in props:
        name = prop.name or ""
        if name in (LAYER_PROPERTY, VARIANT_PROPERTY) or name.startswith(VARIANT_PREFIX):
            ours.append((name, prop.value or ""))
    return from_properties(ours)


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
        for prop in _properties(suite) or ():
            if prop.name == SOURCE_PROPERTY:
                source = prop.value
        for case in suite:
            _add(by_test, case)
    return JUnitFile(path, digest, source, list(by_test.values()))


def _add(by_test: dict[tuple[str, str], Case], case: TestCase) -> None:
    classname: str = case.classname or ""
    name: str = case.name or ""
    final = PASSED
    before: list[str] = []
    after: list[str] = []
    for entry in case:
        kind = type(entry)
        if kind is Failure:
            final = FAILED
        elif kind is Error:
            final = final if final == FAILED else ERROR
        elif kind is Skipped:
            final = final if final in (FAILED, ERROR) else SKIPPED
        elif kind in _BEFORE:
            before.append(_BEFORE[kind])
        elif kind in _AFTER:
            after.append(_AFTER[kind])
    key = (classname, name)
    known = by_test.get(key)
    if known is None:
        layer, variant = _variant(case)
        known = by_test[key] = Case(classname, name, layer, variant)
    elif known.outcomes and known.outcomes[-1][0] == PASSED:
        # An earlier record of the same test that passed was rerun, so it did not pass: pytest's
        # junitxml leaves the records of rerun attempts empty.
        known.outcomes[-1] = (FAILED, known.outcomes[-1][1])
    known.outcomes.extend((outcome, 0.0) for outcome in before)
    known.outcomes.append((final, _seconds(case)))
    known.outcomes.extend((outcome, 0.0) for outcome in after)


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
            return f"{classname}::{name}" if classname else name
        path, classes = module
        return "::".join([path, *classes, name])

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
