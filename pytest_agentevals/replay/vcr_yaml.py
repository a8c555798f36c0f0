"""vcrpy / pytest-recording YAML cassettes, replayed by the same engine: migrating needs no re-record.

Read with YAML's safe loader (vcrpy writes bodies as `!!binary` or text, both safe). A cassette
like this records HTTP only: its tools run for real during the replay, and it has no contract, so no
staleness check applies.

A cassette is untrusted data, and YAML aliases let 600 bytes stand for a billion nodes (vcrpy never
writes aliases; a hand-edited file may). The document is composed first — aliases shared, nothing
expanded — and refused when it would expand to more than `MAX_EXPANSION` times its written nodes
(at least `MIN_EXPANDED_NODES`), or when an alias contains itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import CassetteError
from ..recording.providers import anthropic
from .cassette import CORRUPT_FIX, Cassette, Interaction

_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_EXPANSION = 10
MIN_EXPANDED_NODES = 100_000


class _CassetteLoader(_SafeBase):  # type: ignore[misc]
    """YAML's safe loader plus the few harmless Python tags vcrpy writes (str, unicode, tuple)."""


def _scalar(loader: Any, node: Any) -> Any:
    return loader.construct_scalar(node)


def _tuple(loader: Any, node: Any) -> Any:
    return tuple(loader.construct_sequence(node))


for _tag, _constructor in (
    ("tag:yaml.org,2002:python/str", _scalar),
    ("tag:yaml.org,2002:python/unicode", _scalar),
    ("tag:yaml.org,2002:python/tuple", _tuple),
):
    _CassetteLoader.add_constructor(_tag, _constructor)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def expansion(root: Any) -> tuple[int, int]:
    """(nodes the document expands to, nodes written) of a composed YAML node graph, in one pass
    over the written nodes; ValueError for an alias that contains itself."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
        elif key not in sizes:
            open_.add(key)
            stack.append((node, True))
            for child in _children(node):
                if id(child) in open_:
                    raise ValueError("an alias that contains itself")
                if id(child) not in sizes:
                    stack.append((child, False))
    return sizes[id(root)], len(sizes)


def _load(path: Path) -> Any:
    loader = _CassetteLoader(path.read_bytes())  # a safe loader (see above)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            expanded, written = expansion(node)
        except ValueError as exc:
            raise CassetteError(path, 0, f"holds {exc}", ALIAS_FIX) from None
        if expanded > max(MIN_EXPANDED_NODES, MAX_EXPANSION * written):
            raise CassetteError(
                path,
                0,
                f"holds YAML aliases that expand {written:,} written nodes into {expanded:,}",
                ALIAS_FIX,
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()


ALIAS_FIX = (
    "vcrpy never writes aliases: refused to expand them; restore the cassette from version control, "
    "re-record it, or write the repeated parts out"
)


def migrate_fix(path: Path) -> str:
    """How to bring a pre-1.0 vcrpy cassette to today's format: vcrpy's own migration script."""
    return (
        f"migrate it with vcrpy's script, `python -m vcr.migration {path}` (it rewrites the file in "
        "place: keep a copy), or re-record it"
    )


def _pre_1_0(exc: yaml.YAMLError) -> bool:
    """Whether a YAML error is the `!!python/object:vcr.request.Request` tag of a pre-1.0 cassette
    (vcrpy stored requests as pickled-like objects before it versioned the format)."""
    return isinstance(exc, yaml.constructor.ConstructorError) and "python/object" in str(exc)


def load_vcr_yaml(path: Path) -> Cassette:
    try:
        data = _load(path)
    except RecursionError:
        raise CassetteError(path, 0, "is nested too deeply to be a cassette", CORRUPT_FIX) from None
    except yaml.YAMLError as exc:
        if _pre_1_0(exc):
            raise CassetteError(
                path, 0, "is a vcrpy cassette from before vcrpy 1.0 (Python object tags)", migrate_fix(path)
            ) from None
        _raise_yaml(path, exc)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        # vcrpy before 1.0 wrote a bare list of interactions, without `version` or `interactions`.
        raise CassetteError(path, 0, "is a vcrpy cassette from before vcrpy 1.0", migrate_fix(path))
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(
            path, 0, "is not a vcrpy cassette: expected a mapping with an 'interactions' list", CORRUPT_FIX
        )
    interactions = [_interaction(path, n, raw) for n, raw in enumerate(data["interactions"], 1)]
    return Cassette(path=path, kind="vcr-yaml", interactions=interactions, tools=None)


def _raise_yaml(path: Path, error: yaml.YAMLError) -> NoReturn:
    """The CassetteError for YAML that does not parse, with the line where it can say one."""
    try:
        raise error
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 0
        raise CassetteError(path, line, f"is not valid YAML: {exc.problem}", CORRUPT_FIX) from None
    except yaml.YAMLError as exc:
        raise CassetteError(path, 0, f"is not valid YAML: {exc}", CORRUPT_FIX) from None


def _interaction(path: Path, number: int, raw: Any) -> Interaction:
    where = f"interactions[{number - 1}]"
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("request"), dict)
        or not isinstance(raw.get("response"), dict)
    ):
        raise CassetteError(path, 0, f"{where} needs a request and a response mapping", CORRUPT_FIX)
    request, response = raw["request"], raw["response"]
    for key in ("method", "uri"):
        if not isinstance(request.get(key), str):
            raise CassetteError(path, 0, f"{where}.request lacks {key!r}", CORRUPT_FIX)
    headers = _headers(path, f"{where}.request", request.get("headers"))
    fields: dict[str, Any] = {"method": request["method"], "url": request["uri"], "headers": headers}
    body = request.get("body")
    if isinstance(body, str):
        body = body.encode("utf-8")
    if body:
        stored = anthropic.decode_body(body, headers.get("content-type", "application/json"))
        if isinstance(stored.get("json"), dict):
            fields["body"] = stored["json"]
        else:
            fields["body_raw"] = stored
    served = _served(path, where, response)
    return Interaction(
        number=number,
        line=0,
        step=None,
        request=fields,
        response={"status": served["status"]["code"]},
        is_model=anthropic.is_messages_call(fields["method"], fields["url"]),
        vcr_form=served,
        raw_body=body or None,
    )


def _header_pairs(path: Path, where: str, raw: Any) -> list[tuple[str, list[str]]]:
    """(name, values) of stored headers: a mapping (requests, httpx, aiohttp) or a list of
    [name, values] pairs (vcrpy's tornado stub); a CassetteError for anything else."""
    if raw is None:
        return []
    if isinstance(raw, dict):
        items: list[Any] = list(raw.items())
    elif isinstance(raw, list | tuple):
        items = list(raw)
    else:
        raise CassetteError(path, 0, f"{where}.headers is neither a mapping nor a list of pairs", CORRUPT_FIX)
    out: list[tuple[str, list[str]]] = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2 or isinstance(item[0], dict | list):
            raise CassetteError(
                path, 0, f"{where}.headers holds {item!r}, not a [name, values] pair", CORRUPT_FIX
            )
        name, value = item
        values = value if isinstance(value, list | tuple) else [value]
        out.append((str(name), [str(v) for v in values]))
    return out


def _headers(path: Path, where: str, raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, values in _header_pairs(path, where, raw):
        key = name.lower()
        out[key] = ", ".join([out[key], *values]) if key in out else ", ".join(values)
    return out


def _served(path: Path, where: str, response: dict[str, Any]) -> dict[str, Any]:
    status: Any
    if "status_code" in response:  # the httpx format of vcrpy before 5.x
        status = {"code": response["status_code"], "message": ""}
        body = response.get("content")
    else:
        status = response.get("status")
        stored = response.get("body")
        body = stored.get("string") if isinstance(stored, dict) else stored
    if not isinstance(status, dict) or not isinstance(status.get("code"), int):
        raise CassetteError(path, 0, f"{where}.response lacks a status code", CORRUPT_FIX)
    if isinstance(body, str):
        body = body.encode("utf-8")
    if body is not None and not isinstance(body, bytes):
        raise CassetteError(path, 0, f"{where}.response.body is not a string or bytes", CORRUPT_FIX)
    headers: dict[str, list[str]] = {}
    for name, values in _header_pairs(path, f"{where}.response", response.get("headers")):
        headers.setdefault(name, []).extend(values)
    return {
        "status": {"code": status["code"], "message": str(status.get("message") or "")},
        "headers": headers,
        "body": {"string": body or b""},
    }
