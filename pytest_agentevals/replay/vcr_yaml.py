"""vcrpy / pytest-recording YAML cassettes, replayed by the same engine: migrating needs no re-record.

Read with YAML's safe loader (vcrpy writes bodies as `!!binary` or text, both safe). A cassette
like this records HTTP only: its tools run for real during the replay, and it has no contract, so no
staleness check applies.

A cassette is untrusted data, and YAML aliases let 600 bytes stand for a billion nodes (vcrpy never
writes aliases; a hand-edited file may). It is read by the one bounded YAML loader,
`trace/yaml_loader.py`: composed first — aliases shared, nothing expanded — and refused when it would
expand to more than `MAX_EXPANSION` times its written nodes (at least `MIN_EXPANDED_NODES`), when
an alias contains itself, or when it holds an unsafe tag or a bad number or date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import CassetteError
from ..recording.providers import anthropic
from ..trace.yaml_loader import load_yaml
from .cassette import CORRUPT_FIX, Cassette, Interaction


def _load(path: Path) -> Any:
    def fail(line: int, problem: str) -> CassetteError:
        if "python/object" in problem:
            # vcrpy stored requests as Python objects before it versioned the format: the tag says so.
            problem = "is a vcrpy cassette from before vcrpy 1.0 (Python object tags)"
            return CassetteError(path, line, problem, migrate_fix(path))
        fix = ALIAS_FIX if "alias" in problem else CORRUPT_FIX
        return CassetteError(path, line, problem, fix)

    return load_yaml(path.read_bytes(), fail, python_tags=True)


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


def load_vcr_yaml(path: Path) -> Cassette:
    data = _load(path)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "request" in data[0]:
        # vcrpy before 1.0 wrote a bare list of interactions, without `version` or `interactions`.
        raise CassetteError(path, 0, "is a vcrpy cassette from before vcrpy 1.0", migrate_fix(path))
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(
            path, 0, "is not a vcrpy cassette: expected a mapping with an 'interactions' list", CORRUPT_FIX
        )
    interactions = [_interaction(path, n, raw) for n, raw in enumerate(data["interactions"], 1)]
    return Cassette(path=path, kind="vcr-yaml", interactions=interactions, tools=None)


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
