"""The replay engine: a recorded run re-executed offline, deterministic, and loud when it diverges.

```python
from pytest_agentevals.replay import Replayer

with Replayer("cassettes/fix-bug.trace.jsonl", mode="strict") as replay:
    run_my_agent(replay.cassette.task)       # the SDK and @tool calls get the recorded answers
print(replay.report.summary())
```

Modes:
- `strict` (default): every model call must be one that was recorded (the k-th call the k-th
  recorded one; concurrent calls may come in any order). The first divergence raises
  `ReplayDivergence` with the call, a diff of the request against the recording and the nearest
  recorded candidates; a run that ends early is a divergence too.
- `sequential`: recorded responses are served in recorded order (per method and path) whatever
  the request; divergences are collected in `report` (and noted in the trace of an active
  recorder), not raised.

While a replay runs the network is blocked except loopback, `@tool` functions answer from the
recording without running, and a request with nothing recorded to answer it raises
`UnrecordedRequest` at once, from inside the transport, unretried by the SDK.

A failure is sticky: once the replay has failed, every later request fails too, and leaving the
block raises the failure even if the harness caught it (a supervisor that swallows errors cannot
turn a divergence into a pass).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..contract import Tolerance
from ..errors import AgentEvalsError, ReplayDivergence, UnrecordedRequest, loud
from ..recording import active, harness
from ..recording.patching import patched
from ..recording.providers.anthropic import is_messages_call
from ..recording.recorder import current_recorder
from ..settings import REPLAY_MODES, REPLAY_VIA
from ..settings.normalize import Rule
from ..trace.canonical import canonical_request, scrubbed_canonical
from ..trace.fidelity import CONTENT, require
from ..trace.scrub import Scrubber
from . import diff, network, sdk, staleness
from .cassette import Cassette, Interaction
from .content import ContentMatch
from .index import RequestIndex, incoming_request
from .loader import load_cassette
from .normalize import Folded, Folds, Normalizer
from .profiles import Profile, profile_for, recorded_client
from .report import Divergence, ReplayReport
from .tools import ToolPlayer, jsonable, recorded_exception
from .transport import ReplayCassette

MODES = REPLAY_MODES  # one list of modes, shared with the settings that choose among them
PROFILE_CHOICES = ("auto", "off")
VIA_CHOICES = REPLAY_VIA  # where requests are answered: the SDK's request method, or its HTTP transport

SEQUENTIAL_HINT = (
    'if the change is intended, re-record the cassette, or replay with replay_mode="sequential" to test '
    "the changed harness against the recorded model answers"
)
# A request built from the workspace differs in a replay when the tools that changed it were answered
# from the recording: said at the divergence, since the diff alone shows only a changed prompt.
SIDE_EFFECTS_HINT = (
    "{count} tool call(s) of this replay were answered from the recording and never ran, so what they "
    "did to the workspace in the recorded run did not happen: if the harness read the workspace to "
    "build this request, record that check as a tool (@ae.tool) so it replays too "
    "(docs/replay.md#side-effects-in-a-replay)"
)


class Replayer:
    """Replays one cassette for the duration of a `with` block (or between `start()` and `stop()`).

    `cassette` is a path (a `.trace.jsonl` trace, or a vcrpy/pytest-recording `.yaml` cassette) or
    a loaded `Cassette`. `from_step` starts after the last checkpoint at or before that step (its
    state is `cassette.checkpoint["state"]`). `packages` are compared with the recorded versions
    before anything runs, and the model id, system prompt and tool schemas of the first model
    request with the recording's (`check_contract=False` skips both); a drift that a tolerance of
    `tolerate` covers (the `contract_tolerate` setting, parsed) is noted in `report.tolerated`
    instead of failing. `rerecord` is the command a stale-cassette message suggests. `allow_live`
    lets unmatched requests go to the network instead of failing (record mode "new");
    `block_network=False` leaves sockets alone.

    Requests are compared strictly, except for what declared rules fold (`normalize.py`): the
    profile of the client that made the recording, when one covers it (`profile="auto"`; the Claude
    Code CLI's, `profiles.py`), and the user's `normalize` rules. Every fold is in `report.folds`.

    `before_serve(request)` is asked of every request (vcrpy's) before it is matched, and may raise
    to refuse it: a resumed leg's guards see its replayed calls as they see live ones.
    """

    def __init__(
        self,
        cassette: str | Path | Cassette,
        *,
        mode: str = "strict",
        from_step: int | None = None,
        packages: Iterable[str] = ("anthropic",),
        check_contract: bool = True,
        tolerate: Sequence[Tolerance] = (),
        rerecord: str | None = None,
        allow_live: bool = False,
        block_network: bool = True,
        normalize: Sequence[Rule] = (),
        profile: str = "auto",
        via: str = "sdk",
        before_serve: Callable[[Any], None] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"replay mode {mode!r} is not one of {', '.join(MODES)}")
        if profile not in PROFILE_CHOICES:
            raise ValueError(f"replay profile {profile!r} is not one of {', '.join(PROFILE_CHOICES)}")
        if via not in VIA_CHOICES:
            raise ValueError(f"replay via {via!r} is not one of {', '.join(VIA_CHOICES)}")
        self.via = via
        self.before_serve = before_serve
        self.cassette = cassette if isinstance(cassette, Cassette) else load_cassette(cassette, from_step)
        self.mode = mode
        self.packages = tuple(packages)
        self.check_contract = check_contract
        self.tolerate = tuple(tolerate)
        self.rerecord = rerecord
        self.allow_live = allow_live
        self.block_network = block_network and not allow_live
        self.report = ReplayReport(
            self.cassette.path,
            mode,
            recorded_http=len(self.cassette.interactions),
            recorded_tools=len(self.cassette.tools or ()),
        )
        self.profile: Profile | None = None
        self.normalizer: Normalizer | None = None
        self._recorded_folds: dict[int, list[Folded]] = {}
        self._normalize(tuple(normalize), profile)
        self.content: ContentMatch | None = None
        self._match_content()
        self.failure: AgentEvalsError | None = None
        self.live_requests = 0
        self._lock = threading.RLock()
        self._index = RequestIndex(self.cassette.interactions)
        self._queues: dict[tuple[str, str], list[Interaction]] = {}
        self._heads: dict[tuple[str, str], int] = {}
        for interaction in self.cassette.interactions:
            self._queues.setdefault(interaction.route, []).append(interaction)
        self._tools = ToolPlayer(self.cassette.tools, mode) if self.cassette.tools is not None else None
        self._calls = 0
        self._scrubber = Scrubber()
        self._model_checked = False
        self._raised: list[BaseException] = []
        self._patches: Any = None
        self._unserve: Any = None
        self._unblock: Any = None
        self._running = False
        self._frames: list[active.Frame] = []

    def _normalize(self, user_rules: tuple[Rule, ...], profile: str) -> None:
        """Choose the rules (the recording client's profile, then the user's), and fold the recorded
        requests once. A copy of the cassette holds the folded forms: a loaded cassette may be shared."""
        client = recorded_client(i.request for i in self.cassette.interactions if i.is_model)
        if profile == "auto":
            self.profile = profile_for(client)
            if client is not None and self.profile is None:
                self.report.notes.append(
                    f"recorded by {client.name} {client.version_text} ({client.seen_as}): no normalization "
                    "profile covers that version, so its requests are compared byte-strict"
                )
        elif client is not None:
            self.report.notes.append(f"recorded by {client.name} {client.version_text}: profiles are off")
        rules = (*(self.profile.rules if self.profile else ()), *user_rules)
        if not rules:
            return
        labels = []
        if self.profile is not None:
            assert client is not None
            labels.append(f"the {self.profile.name} profile ({client.name} {client.version_text})")
        if user_rules:
            labels.append("[tool.agentevals] replay_normalize")
        self.normalizer = Normalizer(rules, " and ".join(labels))
        self.report.folds = Folds(self.normalizer)
        copies = []
        for interaction in self.cassette.interactions:
            canonical = interaction.canonical
            body, folded = self.normalizer.fold(canonical.get("body"))
            copy = dataclasses.replace(
                interaction, _canonical={**canonical, "body": body}, _fingerprint=None, _served=None
            )
            self._recorded_folds[id(copy)] = folded
            copies.append(copy)
        self.cassette = dataclasses.replace(self.cassette, interactions=copies, _by_fingerprint=None)

    def _match_content(self) -> None:
        """At the `content` tier (an imported trace), requests are matched on their messages, system
        and tools (`content.py`), said in the report; an `outline` trace cannot be replayed at all."""
        fidelity = require(self.cassette.run_start, "replay", self.cassette.path)
        if fidelity.tier != CONTENT:
            return
        rules = [rule.name for rule in self.normalizer.rules] if self.normalizer is not None else []
        self.content = ContentMatch(fidelity, rules)
        self.report.notes.append(self.content.note())
        copies = [
            dataclasses.replace(
                interaction,
                _canonical=self.content.project(interaction.canonical, recorded=True),
                _fingerprint=None,
                _served=None,
            )
            for interaction in self.cassette.interactions
        ]
        folds = {
            id(copy): self._recorded_folds.get(id(old), [])
            for old, copy in zip(self.cassette.interactions, copies, strict=True)
        }
        self._recorded_folds = folds
        self.cassette = dataclasses.replace(self.cassette, interactions=copies, _by_fingerprint=None)

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> Replayer:
        if self._running:
            raise AgentEvalsError(f"the replay of {self.cassette.path} is already running")
        if self.check_contract:
            self._check_staleness(
                staleness.check_packages(self.cassette.contract, self.packages, self.tolerate)
            )
        if self.block_network:
            self._unblock = network.block(self._fail)
        self._patches = patched(
            ReplayCassette(self._decide, self._live, self.allow_live), str(self.cassette.path)
        )
        self._patches.__enter__()
        if self.via == "sdk":
            self._unserve = sdk.install(self.serve)
        label = f"the replay of {self.cassette.path}"
        if self._tools is not None and not self.allow_live:
            # with allow_live (record mode "new") tools run for real
            self._frames.append(active.push_source(self, label))
        # the model endpoint answers other processes' requests with it
        self._frames.append(active.push_replayer(self, label))
        self._running = True
        return self

    def stop(self, error: BaseException | None = None) -> None:
        """Stop replaying. Raises the replay's failure unless `error` is (or wraps) it already, and,
        in strict mode when the run ended normally, a divergence if recorded calls were left over."""
        if not self._running:
            return
        self._running = False
        while self._frames:
            active.pop(self._frames.pop())
        if self._unserve is not None:
            self._unserve()
            self._unserve = None
        self._patches.__exit__(None, None, None)
        if self._unblock is not None:
            self._unblock()
            self._unblock = None
        if self.failure is not None:
            if error is not None and self._was_raised(error):
                return
            if error is None:
                raise self.failure
            # The run ended with another error: a framework that wrapped the divergence (litellm
            # re-raises it under pages of its own frames) or one the divergence led to. The replay's
            # message comes first: the divergence is raised, the other error named in one note (it
            # stays reachable as __context__, not printed).
            self.failure.add_note(f"(the run then ended with {_one_line(error)})")
            raise self.failure from None
        if error is None:
            self._check_finished()

    def __enter__(self) -> Replayer:
        return self if self._running else self.start()  # the pytest fixture may have started it

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop(exc)

    @property
    def running(self) -> bool:
        return self._running

    def _was_raised(self, error: BaseException) -> bool:
        """Whether `error` is the replay's failure itself, as it was raised (not wrapped)."""
        return error is self.failure or any(error is raised for raised in self._raised)

    def _fail(self, error: AgentEvalsError) -> AgentEvalsError:
        """Keep the first failure; return the error to raise (in the SDK's non-retried form)."""
        with self._lock:
            if self.failure is None:
                self.failure = error
                self.report.failed(error)
        raised = loud(error)
        self._raised.append(raised)
        return raised

    def _sticky(self) -> AgentEvalsError:
        assert self.failure is not None
        return self._fail(self.failure)

    # -- HTTP ------------------------------------------------------------------------------------

    def answer(self, request: Any) -> dict[str, Any] | None:
        """The recorded response to a request another process sent (the model endpoint's; `request`
        has vcrpy's `method`, `uri`, `headers` and `body`), in vcrpy's form; None when record mode
        "new" lets it go live. Raises as an in-process request would: a divergence, an unrecorded
        request, a stale cassette, or the replay's earlier failure — each kept for the report."""
        return self._decide(request)

    def _decide(self, vcr_request: Any) -> dict[str, Any] | None:
        if self.before_serve is not None:
            self.before_serve(vcr_request)  # e.g. a resumed leg's guards: a replayed call passes them too
        head = canonical_request(vcr_request.method, vcr_request.uri, None)
        route = (head["method"], head["path"].split("?", 1)[0])
        is_model = is_messages_call(head["method"], vcr_request.uri)
        with self._lock:
            if self.failure is not None and self.mode == "strict" and not self.allow_live:
                raise self._sticky()
            interaction = self._same_bytes(head, route, vcr_request.body, is_model)
            if interaction is not None:
                self._calls += 1
            else:
                interaction = self._match(vcr_request, is_model)
                if interaction is None:
                    self.live_requests += 1
                    return None
            self.report.served_http += 1
        served = interaction.served_response()
        recorder = current_recorder()
        if recorder is not None:
            recorder.record_http(vcr_request, served, 0.0)
        return served

    def serve(self, path: str, body: Mapping[str, Any], prepare: Callable[[Any], Any]) -> Interaction | None:
        """The SDK path (`sdk.py`): the recorded exchange to answer a Messages request with, taken,
        when the request provably is the one expected next (`sdk.same_body`); None sends it on into
        the SDK and the HTTP path, which decides as it always has (and raises what it raises), so
        this path only ever says yes where that one would. `path` is the URL's path and query."""
        if (
            self.normalizer is not None
            or self.content is not None
            or self.allow_live
            or current_recorder() is not None
        ):
            return None  # every request folded and counted; one that may go live; a trace to write
        with self._lock:
            if self.failure is not None or not self._model_checked:
                return None  # the sticky failure, and the first model request's stale-cassette check
            route = ("POST", path.split("?", 1)[0])
            if self.mode == "strict":
                expected = self._index.next_unused()
            else:
                queue, position = self._queues.get(route, []), self._heads.get(route, 0)
                expected = queue[position] if position < len(queue) else None
            if expected is None or not sdk.answers(expected, path, body, prepare):
                return None
            self._index.mark_used(expected)
            if self.mode == "sequential":
                self._heads[route] = self._heads.get(route, 0) + 1
            self._calls += 1
            self.report.served_http += 1
            self.report.served_sdk += 1
        return expected

    def _same_bytes(
        self, head: dict[str, Any], route: tuple[str, str], raw: Any, is_model: bool
    ) -> Interaction | None:
        """The fast path: the recorded exchange expected next, when the request's bytes are exactly
        the ones the recorded request serializes to (no parsing of the growing history at all). Off
        while rules normalize: every request is then folded, so the report counts every fold."""
        if not isinstance(raw, bytes) or (is_model and not self._model_checked) or self.normalizer:
            return None
        if self.content is not None:
            return None  # an imported request has no bytes to compare
        if self.mode == "strict":
            expected = self._index.next_unused()
        else:
            queue, position = self._queues.get(route, []), self._heads.get(route, 0)
            expected = queue[position] if position < len(queue) else None
        if expected is None:
            return None
        canonical = expected.canonical
        if canonical["method"] != head["method"] or canonical["path"] != head["path"]:
            return None
        if self.cassette.request_bytes(expected) != raw:
            return None
        self._index.mark_used(expected)
        if self.mode == "sequential":
            self._heads[route] = self._heads.get(route, 0) + 1
        return expected

    def _match(self, vcr_request: Any, is_model: bool) -> Interaction | None:
        """The general path: parse and canonicalize the request, then match it by mode."""
        fields, canonical = incoming_request(vcr_request)
        if self._index.find(canonical) is None:
            # Recordings hold requests scrubbed: a live one carrying a secret (a key in a prompt or a
            # URL) matches once scrubbed alike, and a divergence shows it scrubbed, not the secret.
            canonical = scrubbed_canonical(fields, self._scrubber)
        folded: list[Folded] = []
        if self.normalizer is not None:
            body, folded = self.normalizer.fold(canonical.get("body"))
            canonical = {**canonical, "body": body}
        if self.content is not None:
            canonical = self.content.project(canonical)
        self._calls += 1
        number = self._calls
        if is_model and not self._model_checked:
            self._model_checked = True
            self._check_first_model_request(canonical)
        if self.mode == "strict":
            found = self._strict(number, canonical, is_model)
        else:
            found = self._sequential(number, canonical, is_model)
        if found is not None:
            self._count_folds(fields, found, folded)
        return found

    def _count_folds(self, fields: dict[str, Any], interaction: Interaction, folded: list[Folded]) -> None:
        if self.report.folds is not None:
            self.report.folds.add(folded, self._recorded_folds.get(id(interaction), []))
        body = fields.get("body")
        if isinstance(body, dict) and "metadata" in body:
            # The canonical form leaves `metadata` out for every client (user and session ids): listed.
            recorded = interaction.request.get("body")
            recorded_metadata = recorded.get("metadata") if isinstance(recorded, dict) else None
            self.report.metadata_left_out += 1
            if recorded_metadata != self._scrubber.scrub_event({"metadata": body["metadata"]})["metadata"]:
                self.report.metadata_differed += 1

    def _live(self, vcr_request: Any, response: dict[str, Any]) -> None:
        recorder = current_recorder()
        if recorder is not None:
            recorder.record_http(vcr_request, response, 0.0)

    def _check_first_model_request(self, canonical: dict[str, Any]) -> None:
        if not self.check_contract or self.content is not None:
            return  # at the content tier, system and tools are part of every match
        recorded = next((i for i in self.cassette.interactions if i.is_model), None)
        body = canonical.get("body")
        if recorded is None or not isinstance(body, dict):
            return
        recorded_body = recorded.canonical.get("body")
        if not isinstance(recorded_body, dict) or recorded_body == body:
            return
        fields = ("model", "system", "tools") if self.mode == "strict" else ("model",)
        self._check_staleness(staleness.check_request(recorded_body, body, fields, self.tolerate))

    def _check_staleness(self, found: staleness.Staleness) -> None:
        self.report.tolerated.extend(found.tolerated)  # shown in the report, passing or not
        if found.differences:
            raise self._fail(staleness.stale(self.cassette.path, found.differences, self.rerecord))

    def _strict(self, number: int, canonical: dict[str, Any], is_model: bool) -> Interaction | None:
        found = self._index.take(canonical)
        if found is not None or self.allow_live:
            return found
        route = (canonical["method"], canonical["path"].split("?", 1)[0])
        left = [i for i in self._index.unused() if i.route == route]
        if not left:
            raise self._fail(self._unrecorded(number, canonical, is_model))
        expected = left[0]
        found_differences = diff.request_differences(expected.canonical, canonical)
        locator = diff.where(found_differences, canonical.get("body"))
        kind = "model call" if is_model else "HTTP call"
        lines = [
            f"replay diverged at {kind} {number} of the run: the request differs from "
            f"{expected.label} of {self.cassette.path} in {locator}",
            diff.render_differences(found_differences),
        ]
        candidates = diff.nearest(left, canonical)
        if candidates:
            lines.append("nearest recorded requests:")
            lines.extend(f"  - {interaction.label}: {what}" for interaction, what in candidates)
        if self.report.served_tools:
            lines.append(SIDE_EFFECTS_HINT.format(count=self.report.served_tools))
        lines.append(SEQUENTIAL_HINT)
        raise self._fail(ReplayDivergence("\n".join(lines)))

    def _unrecorded(self, number: int, canonical: dict[str, Any], is_model: bool) -> UnrecordedRequest:
        route = f"{canonical['method']} {canonical['path']}"
        same_route = sum(
            1 for i in self.cassette.interactions if i.route[1] == canonical["path"].split("?", 1)[0]
        )
        kind = "model call" if is_model else "HTTP call"
        if same_route:
            why = (
                f"all {same_route} recorded {route} exchanges were already served: "
                "the run goes on past the recording"
            )
        else:
            why = f"the recording holds no {route} request"
        return UnrecordedRequest(
            f"{kind} {number} of the run ({route}) is not in the recording {self.cassette.path}: {why}. "
            "Nothing was sent: the network is blocked during a replay. Re-record the cassette "
            "(pytest --agentevals-record=all, or agentevals record), or with --agentevals-record=new "
            "let requests missing from it go live and be added"
        )

    def _sequential(self, number: int, canonical: dict[str, Any], is_model: bool) -> Interaction | None:
        route = (canonical["method"], canonical["path"].split("?", 1)[0])
        queue = self._queues.get(route, [])
        head = self._heads.get(route, 0)
        if head >= len(queue):
            if self.allow_live:
                return None
            raise self._fail(self._unrecorded(number, canonical, is_model))
        self._heads[route] = head + 1
        interaction = queue[head]
        self._index.mark_used(interaction)
        if interaction.canonical != canonical:
            found = diff.request_differences(interaction.canonical, canonical)
            kind = "model call" if is_model else "HTTP call"
            self._diverged(
                Divergence(
                    "model" if is_model else "http",
                    number,
                    f"{kind} {number}: the request differs from {interaction.label} in "
                    f"{diff.where(found, canonical.get('body'))}; served the recorded response",
                    diff.render_differences(found),
                )
            )
        return interaction

    def _diverged(self, divergence: Divergence) -> None:
        self.report.divergences.append(divergence)
        harness.note(
            "replay divergence", kind=divergence.kind, call=divergence.call, headline=divergence.headline
        )

    # -- tools (the ToolSource protocol) -----------------------------------------------------------

    def tool_result(self, name: str, tool_input: dict[str, Any]) -> Any:
        """The recorded answer to a `@tool` call: its output, or its exception raised again."""
        assert self._tools is not None
        live = jsonable(tool_input)
        with self._lock:
            if self.failure is not None and self.mode == "strict":
                raise self._sticky()
            match = self._tools.take(name, live)
            number = self._tools.calls
            if match.record is not None:
                self.report.served_tools += 1
        if match.divergent:
            self._tool_divergence(number, name, live, match.record, match.expected)
        record = match.record
        assert record is not None
        if record.error is not None:
            raise recorded_exception(record.error)
        return record.output

    def _tool_divergence(self, number: int, name: str, live: Any, record: Any, expected: Any) -> None:
        if expected is None:
            raise self._fail(
                UnrecordedRequest(
                    f"tool call {number} of the run ({name!r}) is not in the recording "
                    f"{self.cassette.path}: every recorded tool call was already served. The tool did "
                    "not run; re-record the cassette if the harness now calls more tools"
                )
            )
        if expected.name == name:
            found = diff.differences(expected.input, live, "input")
            detail = diff.render_differences(found)
            headline = (
                f"tool call {number} of the run: {name!r} was called with other arguments than "
                f"{expected.label}"
            )
        else:
            detail = (
                f"  recorded: {expected.name}({diff.short(expected.input)})\n"
                f"  now:      {name}({diff.short(live)})"
            )
            headline = f"tool call {number} of the run: {name!r} was called where {expected.label} was next"
        if self.mode == "strict":
            raise self._fail(ReplayDivergence(f"replay diverged at {headline}\n{detail}\n{SEQUENTIAL_HINT}"))
        if record is None:
            raise self._fail(
                UnrecordedRequest(
                    f"{headline}, and no recorded call of {name!r} is left to answer it with; the tool "
                    "did not run. Re-record the cassette"
                )
            )
        self._diverged(Divergence("tool", number, headline + "; served its recorded answer", detail))

    # -- the end -----------------------------------------------------------------------------------

    def _check_finished(self) -> None:
        if self.allow_live:
            return  # record mode "new": the run may take another path; what it did is being saved
        unused = self._index.unused()
        unused_tools = self._tools.unused() if self._tools is not None else []
        if not unused and not unused_tools:
            return
        parts = []
        if unused:
            parts.append(
                f"{len(unused)} recorded HTTP exchange(s) were never requested, from {unused[0].label}"
            )
        if unused_tools:
            parts.append(
                f"{len(unused_tools)} recorded tool call(s) never made, from {unused_tools[0].label}"
            )
        headline = (
            f"the run ended after {self._calls} HTTP call(s) and "
            f"{self._tools.calls if self._tools else 0} tool call(s), earlier than the recording: "
            + "; ".join(parts)
        )
        if self.mode == "strict":
            error = ReplayDivergence(
                f"replay diverged: {headline} ({self.cassette.path}). The harness stopped before the "
                f"recorded run did; {SEQUENTIAL_HINT}"
            )
            self.failure = error
            self.report.failed(error)
            raise error
        self._diverged(Divergence("end", self._calls, headline))


def _one_line(error: BaseException) -> str:
    cls = type(error)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    first = first if len(first) <= 200 else first[:199] + "…"
    return f"{name}: {first}" if first else name
