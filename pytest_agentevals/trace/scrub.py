"""Secrets never reach a file: the one scrubber every trace writer owns (the history store and
`agentevals scan` use it too). docs/security.md says what it catches and what it cannot.

A secret is
- the value of an environment variable named `*_API_KEY`, `*TOKEN*`, `*SECRET*` or `*PASSWORD*`,
  read again whenever the environment changed (a `load_dotenv()` after the recorder started), or a
  value given to the scrubber; at least `MIN_SECRET_LENGTH` characters, and not a word that cannot
  be a secret (`NOT_SECRETS`, or one character repeated) — each matched raw, JSON-escaped and
  percent-encoded;
- a string shaped like a key (`SECRET_PATTERNS`);
- either of those under one more layer: percent-encoded, JSON-escaped (`trace/layers.py`) or in a
  base64 blob;
- the value of a request header, or URL query parameter, whose name says credential.

What is scrubbed are an event's string values and keys, never the serialized line (a replacement
there could break the JSON or rename a field), and never the trace's own fields (`STRUCTURAL`).
Streamed text is scrubbed joined, since a key split over pieces shows in none of them, and binary
bodies and files are scrubbed as bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import layers, streams
from .events import EVENT_TYPES, RUN_STATUSES, Event
from .jsonable import jsonable_default

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8

# Values that cannot be secrets, however a variable holding them is named: placeholders, and the
# words of the trace format and the Messages API (a secret equal to `tool_call` would otherwise
# rename events). Compared in lower case.
NOT_SECRETS = frozenset(
    {
        *EVENT_TYPES,
        *RUN_STATUSES,
        *("password", "passwd", "changeme", "change-me", "changeit", "placeholder", "undefined"),
        *("disabled", "enabled", "localhost", "redacted", REDACTED.lower(), "your-api-key"),
        *("anthropic", "assistant", "tool_use", "tool_result", "end_turn", "max_tokens", "messages"),
        *("text_delta", "input_json_delta", "thinking_delta", "signature_delta", "stop_sequence"),
        *("content_block_start", "content_block_delta", "content_block_stop", "message_start"),
        *("message_delta", "message_stop", "application/json", "text/event-stream"),
    }
)

# The trace's own fields, never scrubbed: they carry no user data (names, counters and hashes the
# recorder computes), and the format depends on them.
STRUCTURAL = frozenset(
    {"type", "v", "seq", "t", "step", "status", "provider", "stream", "totals", "usage", "observed_contract"}
)

# Secret-shaped strings wherever they appear (a key pasted into a prompt, an echo in a tool output).
# Each starts with a literal, so it is found by a substring search (see `_Compiled`); docs/security.md
# lists them.
SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9]{2,}-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"sk-(?:proj-)?[A-Za-z0-9_\-]{32,}"),  # OpenAI, project keys included
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{22,}"),  # GitHub fine-grained tokens
    re.compile(r"xox[abprse]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"xapp-\d-[A-Za-z0-9-]{10,}"),  # Slack app-level tokens
    re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}"),  # AWS access key ids (long-term, temporary)
    re.compile(r"AIza[0-9A-Za-z_\-]{35}"),  # Google API keys
    # Stripe secret and restricted keys: two patterns, as `(?:sk|rk)_` has no literal start (see
    # `_Compiled`) and was searched at every position, a sixth of a recording's scrubbing (cProfile).
    re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{20,}"),
    re.compile(r"rk_(?:live|test)_[0-9A-Za-z]{20,}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWTs
    # A PEM private key, its body included (newlines raw or escaped); bounded, as a key is a few KB.
    re.compile(
        r"-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----[A-Za-z0-9+/=\s\\:,\-]{0,16384}?"
        r"(?:-----END[A-Z ]{0,40} PRIVATE KEY-----)"
    ),
    re.compile(r"-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----"),  # a torn one: its header at least
)

# Base64 blobs (a framework's checkpoint state, msgpack or JSON inside) are decoded and searched:
# runs of at least BLOB_MIN_CHARS base64 characters, each decoded up to BLOB_MAX_CHARS (bounded work
# per blob), nested blobs to BLOB_DEPTH levels. A secret found inside is replaced by asterisks of its
# length and the blob re-encoded, so a length-prefixed format (msgpack) keeps its shape.
BLOB_MIN_CHARS = 40
BLOB_MAX_CHARS = 4 << 20
BLOB_DEPTH = 2
_BLOB = re.compile(r"[A-Za-z0-9+/_\-]{" + str(BLOB_MIN_CHARS) + r",}={0,2}")
_BLOB_BYTES = re.compile(_BLOB.pattern.encode("ascii"))
# Where the runs are is found in bytes, where a run of BLOB_MIN_CHARS is a substring search over the
# text translated to a mask: `_BLOB.finditer` tries its character class at every position of every
# line, most of the writer's time on a 300-step run (cProfile).
_BASE64_CHARS = (string.ascii_letters + string.digits + "+/_-").encode("ascii")
_BLOB_MASK = bytes(0x61 if byte in _BASE64_CHARS else 0x20 for byte in range(256))
_BLOB_NEEDLE = b"a" * BLOB_MIN_CHARS
BEARER = "bearer token"
KEY_PATTERN = "API-key pattern"

# Names of headers and query parameters that carry credentials, whichever client sends them: the
# anthropic SDK 2.x sends its key as `Authorization: Bearer`, 1.x as `x-api-key`; gateways use
# `x-auth-key`, `ocp-apim-subscription-key`, `x-gateway-auth`...
_SECRET_NAME = re.compile(r"auth|key|token|secret|passw|credential|cookie|session|signature", re.I)
_SECRET_ENV = re.compile(r"(_API_KEY$|TOKEN|SECRET|PASSWORD)", re.I)


def is_secret_header(name: str) -> bool:
    """Whether a header (or URL query parameter) of this name carries a credential."""
    return bool(_SECRET_NAME.search(name))


def is_secret_value(value: str) -> bool:
    """Whether `value` can be a secret: long enough, not a known non-secret, not one repeated character."""
    return len(value) >= MIN_SECRET_LENGTH and value.lower() not in NOT_SECRETS and len(set(value)) > 1


def secret_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """{value: name} of the `*_API_KEY`, `*TOKEN*`, `*SECRET*` and `*PASSWORD*` variables whose
    value can be a secret."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in sorted(environ.items()):
        if _SECRET_ENV.search(name) and is_secret_value(value):
            found.setdefault(value, name)
    return found


# -- the forms a value takes ------------------------------------------------------------------------

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _hex_digits(number: int, width: int) -> str:
    """`number` in hex, as a pattern that accepts either case of each letter."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{width}X}")


def _char_pattern(char: str, view: str) -> str:
    """A pattern for one character of a secret, in every form it takes: itself, JSON-escaped
    (`\\"`, `\\u00e9`), percent-encoded (`%22`, `+` for a space). `view` says where it is looked
    for: in a string ("text"), in a serialized JSON line ("line", where each form is escaped once
    more), or in bytes read as Latin-1 ("bytes", where a character is its UTF-8 bytes)."""
    if char in _UNRESERVED:
        return re.escape(char)
    raw = char.encode("utf-8").decode("latin-1") if view == "bytes" else char
    literals = {raw, json.dumps(char)[1:-1]}
    if char == " ":
        literals.add("+")
    if view == "line":
        literals = {json.dumps(literal, ensure_ascii=False)[1:-1] for literal in literals}
    forms = [re.escape(literal) for literal in sorted(literals, key=len, reverse=True)]
    forms.append("".join("%" + _hex_digits(byte, 2) for byte in char.encode("utf-8")))
    if not char.isascii() or not char.isprintable():  # the \uXXXX form, in either case
        slash = r"\\\\" if view == "line" else r"\\"
        units = char.encode("utf-16-be")
        forms.append(
            "".join(
                slash + "u" + _hex_digits(int.from_bytes(units[i : i + 2], "big"), 4)
                for i in range(0, len(units), 2)
            )
        )
    return "(?:" + "|".join(forms) + ")"


def value_pattern(value: str, view: str = "text") -> str:
    """A pattern matching `value` raw, JSON-escaped or percent-encoded (see `_char_pattern`)."""
    return "".join(_char_pattern(char, view) for char in value)


def literal_starts(pattern: str) -> tuple[str, ...]:
    """Literal texts one of which every match of `pattern` starts with (`sk-ant-`, `AKIA` or
    `ASIA`), or () when it has none this can read off: a leading `(?:A|B)` of plain words, then
    the plain characters up to the first special one, less one a quantifier makes optional."""
    heads = [""]
    group = re.match(r"\(\?:([A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)+)\)", pattern)
    if group is not None:
        heads, pattern = group.group(1).split("|"), pattern[group.end() :]
    plain = re.match(r"[A-Za-z0-9_\- ]*", pattern)
    literal = plain.group() if plain is not None else ""
    if pattern[len(literal) : len(literal) + 1] in ("?", "*", "{"):
        literal = literal[:-1]  # `ab?`: the b may be absent
    starts = tuple(head + literal for head in heads)
    return starts if all(starts) and not _top_level_bar(pattern) else ()


def _top_level_bar(pattern: str) -> bool:
    """Whether `pattern` has a `|` outside every group and class (`ab|cd`: no common start)."""
    depth, in_class, escaped = 0, False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


# The bearer pattern as it looks in a serialized line, where whitespace may be an escape.
_LINE_BEARER = r"(?i:bearer(?:\s|\\[nrtfb]|\\u00[0-9a-fA-F]{2})+[A-Za-z0-9._~+/\-]{16,}=*)"


Finding = tuple[int, int, str]  # start, end, what it is
# A pattern as searched: (regex, what it finds, a lower-case word the text must hold first, literal
# texts one of which it must hold first).
_Searched = tuple[re.Pattern[str], str, str | None, tuple[str, ...]]


def _holds_one(text: str, starts: tuple[str, ...]) -> bool:
    # The first start alone without a generator: most patterns have one.
    return starts[0] in text or (len(starts) > 1 and any(start in text for start in starts[1:]))


@dataclass
class _Compiled:
    """The patterns for one set of secret values, per view: one regex per value and per pattern.

    Kept apart on purpose: a regex that starts with a literal (`sk-ant-`, a key's first characters)
    is found by a fast substring search, hundreds of MB/s, while one alternation of them all is
    tried branch by branch at every position, a hundred times slower. The case-insensitive bearer
    pattern has no literal start; it runs only where the lowered text holds "bearer"."""

    values: dict[str, str]  # value -> what it is (for findings)
    _regexes: dict[str, list[_Searched]] = field(default_factory=dict)
    # (blob, depth) -> (what, replacement) or None: a trace repeats its blobs (a workspace file's
    # sha256 in every checkpoint that lists it), each decoded and searched once per set of secrets.
    blobs: dict[tuple[str, int], tuple[str, str] | None] = field(default_factory=dict)

    def regexes(self, view: str) -> list[_Searched]:
        """(regex, what it finds, a lower-case word the text must hold first, literal texts one of
        which it must hold) for each secret."""
        found = self._regexes.get(view)
        if found is None:
            found = [
                (re.compile(value_pattern(value, view)), what, None, ())
                for value, what in self.values.items()
            ]
            for pattern in SECRET_PATTERNS:
                if pattern.pattern.startswith("(?i)bearer"):
                    regex = re.compile(_LINE_BEARER) if view == "line" else pattern
                    found.append((regex, BEARER, "bearer", ()))
                else:
                    # Tried only on text that holds one of its literal starts: `in` finds a literal
                    # about four times faster than the regex engine's own search for the same
                    # prefix, and thirteen searches a line were most of `might_hold` (issue 22).
                    found.append((pattern, KEY_PATTERN, None, literal_starts(pattern.pattern)))
            self._regexes[view] = found
        return found

    def find(self, text: str, view: str) -> list[Finding]:
        """Every secret in `text`, left to right; where two overlap, the one starting first (then
        the longer) wins."""
        found: list[Finding] = []
        lowered: str | None = None
        for regex, what, hint, starts in self.regexes(view):
            if starts and not _holds_one(text, starts):
                continue
            if hint is not None:
                lowered = text.lower() if lowered is None else lowered
                if hint not in lowered:
                    continue
            found.extend((m.start(), m.end(), what) for m in regex.finditer(text) if m.end() > m.start())
        if len(found) < 2:
            return found
        found.sort(key=lambda item: (item[0], item[0] - item[1]))
        kept: list[Finding] = []
        for item in found:
            if not kept or item[0] >= kept[-1][1]:
                kept.append(item)
        return kept

    def search(self, text: str, view: str) -> bool:
        lowered: str | None = None
        for regex, _, hint, starts in self.regexes(view):
            if starts and not _holds_one(text, starts):
                continue
            if hint is not None:
                lowered = text.lower() if lowered is None else lowered
                if hint not in lowered:
                    continue
            if regex.search(text) is not None:
                return True
        return False


Redaction = tuple[int, int, str, str]  # start, end, what it is, what replaces it


def _replace(text: str, found: Iterable[tuple[Any, ...]]) -> str:
    """`text` with each finding replaced: by REDACTED, or by a redaction's own replacement."""
    parts: list[str] = []
    at = 0
    for item in found:
        start, end = item[0], item[1]
        parts.append(text[at:start])
        parts.append(item[3] if len(item) > 3 else REDACTED)
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _with_blobs(compiled: _Compiled, text: str, view: str, depth: int) -> list[Redaction]:
    """The secrets in `text` (replaced by REDACTED), and the base64 blobs outside them that hold one
    (replaced by the blob re-encoded with the secret masked), left to right."""
    found: list[Redaction] = [(a, b, what, REDACTED) for a, b, what in compiled.find(text, view)]
    if depth <= 0:
        return found
    decoded = _in_views(compiled, text, view, depth)
    if decoded:
        found = _merged(found, decoded)
    if len(text) < BLOB_MIN_CHARS:
        return found
    blobs: list[Redaction] = []
    for start, end, text_of in _blob_runs(text):
        if any(a < end and start < b for a, b, _, _ in found):
            continue  # already a secret (a JWT, a key): replaced whole
        blob = _blob_finding(compiled, start, end, text_of, depth)
        if blob is not None:
            blobs.append(blob)
    return sorted(found + blobs) if blobs else found


def _in_views(compiled: _Compiled, text: str, view: str, depth: int) -> list[Redaction]:
    """The secrets in `text`'s decoded views (`trace/layers.py`: percent-encoded, JSON-escaped),
    as spans of `text` itself."""
    found: list[Redaction] = []
    for decoded in layers.views(text):
        for a, b, what, _ in _with_blobs(compiled, decoded.text, view, depth - 1):
            found.append((decoded.original(a), decoded.original(b), f"{what}, {decoded.layer}", REDACTED))
    return found


def _merged(found: list[Redaction], more: list[Redaction]) -> list[Redaction]:
    """Both lists as one, left to right, overlapping spans made one (a key cut short by an escape in
    the text is found whole in a view: the whole is replaced)."""
    kept: list[Redaction] = []
    for item in sorted(found + more, key=lambda item: (item[0], -item[1])):
        if kept and item[0] < kept[-1][1]:
            last = kept[-1]
            if item[1] > last[1]:
                kept[-1] = (last[0], item[1], last[2], REDACTED)
            continue
        kept.append(item)
    return kept


def _blob_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, blob) of each base64 run in `text`, exactly as `_BLOB.finditer` finds them.

    The runs are found in the text's bytes, where base64 characters are the ASCII ones: the regex
    runs only from each run's start (the first place where BLOB_MIN_CHARS of them follow, as the
    regex scans left to right). Text that Latin-1 cannot encode is read as UTF-8, and each run's byte
    offset is turned into characters by decoding the bytes since the previous run."""
    try:
        raw, wide = text.encode("latin-1"), False  # one byte a character: offsets are the text's
    except UnicodeEncodeError:
        raw, wide = text.encode("utf-8", "surrogatepass"), True
    mask = raw.translate(_BLOB_MASK)
    at = mask.find(_BLOB_NEEDLE)
    byte_at = char_at = 0  # where the previous run ended, in bytes and in characters
    while at >= 0:
        match = _BLOB_BYTES.match(raw, at)
        assert match is not None  # the mask says BLOB_MIN_CHARS base64 characters start here
        end = match.end()
        blob = match.group().decode("ascii")
        if wide:
            char_at += len(raw[byte_at:at].decode("utf-8", "surrogatepass"))
            start = char_at
            byte_at, char_at = end, start + len(blob)
        else:
            start = at
        yield start, start + len(blob), blob
        at = mask.find(_BLOB_NEEDLE, end)


def _decode_blob(blob: str) -> tuple[bytes, bool, int] | None:
    """The bytes of a base64 run (standard or URL-safe alphabet, padding optional) up to
    BLOB_MAX_CHARS, whether it is URL-safe, and how many of its characters they are; None when it is
    not base64."""
    body = blob.rstrip("=")
    urlsafe = "-" in body or "_" in body
    if urlsafe and ("+" in body or "/" in body):
        return None  # two alphabets: not one blob
    body = body[:BLOB_MAX_CHARS]
    if len(body) % 4 == 1:
        body = body[:-1]  # a lone last character holds no whole byte
    padded = body + "=" * (-len(body) % 4)
    try:
        data = base64.urlsafe_b64decode(padded) if urlsafe else base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data, urlsafe, len(body)


BLOB_MEMO_CHARS = 4096  # blobs up to this long are remembered...
BLOB_MEMO_ENTRIES = 4096  # ...this many at most (then forgotten all at once): bounded memory


def _blob_finding(compiled: _Compiled, start: int, end: int, blob: str, depth: int) -> Redaction | None:
    """The blob at start:end, re-encoded with every secret inside masked, when it holds one."""
    key = (blob, depth)
    memo = compiled.blobs
    if key in memo:
        found = memo[key]
    else:
        found = _blob_replacement(compiled, blob, depth)
        if len(blob) <= BLOB_MEMO_CHARS:
            if len(memo) >= BLOB_MEMO_ENTRIES:
                memo.clear()
            memo[key] = found
    return None if found is None else (start, end, found[0], found[1])


def _blob_replacement(compiled: _Compiled, blob: str, depth: int) -> tuple[str, str] | None:
    """(what, the blob re-encoded with every secret inside masked) when the blob holds one."""
    decoded = _decode_blob(blob)
    if decoded is None:
        return None
    data, urlsafe, used = decoded
    inner = _with_blobs(compiled, data.decode("latin-1"), "bytes", depth - 1)
    if not inner:
        return None
    # Same-length masks keep every length prefix and offset of the decoded format (msgpack) valid.
    masks = [(a, b, what, "*" * (b - a) if r == REDACTED else r) for a, b, what, r in inner]
    masked = _replace(data.decode("latin-1"), masks).encode("latin-1")
    encoded = (base64.urlsafe_b64encode(masked) if urlsafe else base64.b64encode(masked)).decode("ascii")
    # The characters decoded are replaced; padding and anything past the bound stay as they were.
    return f"{inner[0][2]}, inside base64", encoded.rstrip("=") + blob[used:]


class _Environment:
    """The environment's secret values, read again only when the environment changed.

    Comparing os.environ's own dict with a copy is one C-level comparison (a microsecond), cheap
    enough to do before every event, so a variable set after the recording started is caught."""

    def __init__(self, environ: Mapping[str, str] | None) -> None:
        self._environ = os.environ if environ is None else environ
        self._seen: dict[Any, Any] | None = None
        self.variables: dict[str, str] = {}

    def changed(self) -> bool:
        raw = getattr(self._environ, "_data", None)
        current: Mapping[Any, Any] = raw if isinstance(raw, dict) else self._environ
        if self._seen is not None and current == self._seen:
            return False
        self._seen = dict(current)
        self.variables = secret_variables(self._environ)
        return True


class Scrubber:
    """Finds and replaces secrets in strings, bytes and whole trace events.

    Built once per writer; `add()` takes more secret values (they can be added, never removed).
    `redactions` counts what was replaced.
    """

    def __init__(self, extra_values: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        self._environment = _Environment(environ)
        self._given: dict[str, str] = {}
        self._compiled: _Compiled | None = None
        self._memo_scrub: Callable[[str], str] | None = None  # see memo()
        self._memo_of: _Compiled | None = None  # the secrets it was made with
        self.redactions = 0
        self.add(extra_values)

    def add(self, values: Iterable[str]) -> None:
        for value in values:
            if isinstance(value, str) and is_secret_value(value) and value not in self._given:
                self._given[value] = "a value given as a secret"
                self._compiled = None

    def _current(self) -> _Compiled:
        if self._environment.changed() or self._compiled is None:
            values = {value: f"the value of ${name}" for value, name in self._environment.variables.items()}
            values.update(self._given)
            self._compiled = _Compiled(values)
        return self._compiled

    # -- strings and bytes -----------------------------------------------------------------------

    def find(self, text: str) -> list[Finding]:
        """(start, end, what it is) of every secret in `text`, a base64 blob holding one included."""
        if len(text) < MIN_SECRET_LENGTH:
            return []
        compiled = self._current()
        return [(a, b, what) for a, b, what, _ in _with_blobs(compiled, text, "text", BLOB_DEPTH)]

    def scrub_text(self, text: str) -> str:
        if len(text) < MIN_SECRET_LENGTH:
            return text
        found = _with_blobs(self._current(), text, "text", BLOB_DEPTH)
        if not found:
            return text
        self.redactions += len(found)
        return _replace(text, found)

    def memo(self) -> Callable[[str], str]:
        """`scrub_text` for a batch of strings that repeat (the test ids of a JUnit file, the same
        in every file): each distinct string is searched once, a repeat answered from the memo,
        replaced again and counted again. The secrets are those of now: the environment is read
        again at the next call, which drops the memo if they changed — so call it once per batch.
        While the secrets stay the same it returns the same function, so a caller may remember
        what it derived from the answers for as long as it gets that function back."""
        compiled = self._current()
        if self._memo_of is not compiled or self._memo_scrub is None:
            self._memo_of = compiled
            self._memo_scrub = self._memo_function(compiled)
        return self._memo_scrub

    def _memo_function(self, compiled: _Compiled) -> Callable[[str], str]:
        memo: dict[str, tuple[str, int]] = {}  # text -> (scrubbed, secrets in it)

        def scrub(text: str) -> str:
            known = memo.get(text)
            if known is None:
                found = (
                    [] if len(text) < MIN_SECRET_LENGTH else _with_blobs(compiled, text, "text", BLOB_DEPTH)
                )
                known = memo[text] = (_replace(text, found) if found else text, len(found))
            self.redactions += known[1]
            return known[0]

        return scrub

    def find_bytes(self, data: bytes) -> list[Finding]:
        """Every secret in `data` (its UTF-8 bytes, or an escaped form, or inside a base64 blob in
        it), offsets in bytes."""
        found = _with_blobs(self._current(), data.decode("latin-1"), "bytes", BLOB_DEPTH)
        return [(a, b, what) for a, b, what, _ in found]

    def scrub_bytes(self, data: bytes) -> bytes:
        """`data` with every secret replaced; `data` itself when there is none."""
        text = data.decode("latin-1")
        found = _with_blobs(self._current(), text, "bytes", BLOB_DEPTH)
        if not found:
            return data
        self.redactions += len(found)
        return _replace(text, found).encode("latin-1")

    def might_hold(self, line: str) -> bool:
        """Whether a serialized JSON line might hold a secret in one of its strings. Never false
        when `scrub_event` would change something visible in the line: each pattern is matched in
        its serialized form, and each base64 blob (the same in a line as in its string) is
        decoded and searched. (Streams are not visible there; `prepare` handles them.)"""
        compiled = self._current()
        return (
            compiled.search(line, "line")
            or layers.line_may_hide(line)
            or any(_blob_finding(compiled, *run, BLOB_DEPTH) is not None for run in _blob_runs(line))
        )

    # -- events ----------------------------------------------------------------------------------

    def scrub_value(self, value: Any) -> Any:
        """`value` with every string and key scrubbed; a copy where something changed, else itself."""
        if isinstance(value, str):
            return self.scrub_text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] | None = None
            for position, (key, item) in enumerate(value.items()):
                new_key = self.scrub_text(key) if isinstance(key, str) else key
                new_item = self.scrub_value(item)
                if out is None and (new_key is not key or new_item is not item):
                    out = dict(list(value.items())[:position])
                if out is not None:
                    out[new_key] = new_item
            return value if out is None else out
        if isinstance(value, list | tuple):
            items = [self.scrub_value(item) for item in value]
            changed = any(new is not old for new, old in zip(items, value, strict=True))
            return items if changed or isinstance(value, tuple) else value
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.scrub_value(jsonable_default(value))  # as the writer will store it

    def prepare(self, event: Event) -> Event:
        """What is scrubbed in every event, whatever its line looks like: credential headers and
        query parameters by name, streamed content joined, binary bodies and files as bytes."""
        kind = event.get("type")
        if kind == "model_call":
            request, response = event.get("request"), event.get("response")
            if isinstance(request, dict):
                new_request = self._request(request)
                if new_request is not request:
                    event = {**event, "request": new_request}
            if isinstance(response, dict):
                new_response = self._body(response)
                if new_response is not response:
                    event = {**event, "response": new_response}
        elif kind == "checkpoint":
            workspace = event.get("workspace")
            files = workspace.get("files") if isinstance(workspace, dict) else None
            if isinstance(workspace, dict) and isinstance(files, dict):
                binary = {
                    path: self._body(entry)
                    for path, entry in files.items()
                    if isinstance(entry, dict) and "base64" in entry
                }
                if any(entry is not files[path] for path, entry in binary.items()):
                    event = {**event, "workspace": {**workspace, "files": {**files, **binary}}}
        return event

    def scrub_event(self, event: Event) -> Event:
        """The event with every secret replaced: `prepare`, then every string and key but the
        structural fields. The event is not changed; parts that changed are copies."""
        event = self.prepare(event)
        out = dict(event)
        for key, value in event.items():
            if key not in STRUCTURAL:
                out[key] = self.scrub_value(value)
        return out

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        out = request
        headers = request.get("headers")
        if isinstance(headers, dict) and any(
            isinstance(name, str) and is_secret_header(name) and value != REDACTED
            for name, value in headers.items()
        ):
            redacted = {
                name: REDACTED if isinstance(name, str) and is_secret_header(name) else value
                for name, value in headers.items()
            }
            out = {**out, "headers": redacted}
        url = request.get("url")
        if isinstance(url, str) and "?" in url:
            new_url = redact_query(url)
            if new_url != url:
                out = {**out, "url": new_url}
        raw = request.get("body_raw")
        if isinstance(raw, dict):
            new_raw = self._body(raw)
            if new_raw is not raw:
                out = {**out, "body_raw": new_raw}
        return out

    def _body(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored body (or workspace file): its stream scrubbed joined, its base64 as bytes."""
        sse = stored.get("sse")
        if isinstance(sse, list):
            redacted = streams.redact(sse, self._counted_spans, REDACTED)
            if redacted is not None:
                stored = {**stored, "sse": redacted}
        encoded = stored.get("base64")
        if isinstance(encoded, str):
            try:
                data = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                return stored  # not base64 after all: its text is scrubbed like any string
            scrubbed = self.scrub_bytes(data)
            if scrubbed is not data:
                stored = {**stored, "base64": base64.b64encode(scrubbed).decode("ascii")}
        return stored

    def _counted_spans(self, text: str) -> list[tuple[int, int]]:
        found = [(start, end) for start, end, _ in self.find(text)]
        self.redactions += len(found)
        return found


def redact_query(url: str) -> str:
    """`url` with the value of every query parameter whose name says credential replaced."""
    base, _, rest = url.partition("?")
    query, hash_mark, fragment = rest.partition("#")
    parts = []
    for part in query.split("&"):
        name, equals, value = part.partition("=")
        parts.append(f"{name}={REDACTED}" if equals and value and is_secret_header(name) else part)
    return f"{base}?{'&'.join(parts)}{hash_mark}{fragment}"
