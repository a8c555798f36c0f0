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
        fix = ALIAS_FIX if "alias" in problem else CORRUPT_FIX
        return CassetteError(path, line, problem, fix)

    return load_yaml(path.read_bytes(), fail, python_tags=True)


ALIAS_FIX = (
    "vcrpy never writes aliases: refused to expand them; restore the cassette from version control, "
    "re-record it, or write the repeated parts out"
)


def load_vcr_yaml(path: Path) -> Cassette:
    data = _load(path)
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
    headers = _headers(request.get("headers"))
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


def _headers(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        out[str(name).lower()] = str(value)
    return out


def _served(path: Path, where: str, response: dict[str, Any]) -> dict[str, Any]:
    status: Any
    if "status_code" in response:  # the httpx format of vcrpy before 5.x
        status = {"code": response["status_code"], "message": ""}
        body = response.get("content")
    else:
        status = response.get("status")
        body = (response.get("body") or {}).get("string")
    if not isinstance(status, dict) or not isinstance(status.get("code"), int):
        raise CassetteError(path, 0, f"{where}.response lacks a status code", CORRUPT_FIX)
    if isinstance(body, str):
        body = body.encode("utf-8")
    headers: dict[str, Any] = response.get("headers") or {}
    return {
        "status": {"code": status["code"], "message": str(status.get("message") or "")},
        "headers": {
            str(name): [str(v) for v in (value if isinstance(value, list) else [value])]
            for name, value in headers.items()
        },
        "body": {"string": body or b""},
    }
