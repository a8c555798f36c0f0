"""`agentevals judge audit GOLDENS... [--repeats K] [--model M] [--base-url URL] [--format json]`:
grade each judged step case's recorded summary K times with its judge and print how far the judge
agrees with itself, per case and over all (mean agreement, Fleiss' kappa, Krippendorff's alpha).

The judge is `pytest_agentevals.step.anthropic_judge` on an Anthropic client: ANTHROPIC_API_KEY and
ANTHROPIC_BASE_URL as the SDK reads them, `--base-url` over the latter (e.g. a model endpoint or the
simulated server)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import AgentEvalsError
from ..step.audit import MAX_AUDIT_REPEATS, audit
from ..step.judge import DEFAULT_JUDGE_MODEL, Judge, JudgeSpec, JudgeVerdict, anthropic_judge
from ..trace.terminal import safe
from .common import add_format

DEFAULT_REPEATS = 10


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "judge",
        help="measure the LLM judge of step cases: how far it agrees with itself",
        description="The LLM judge of compaction step cases (judge: {rubric: ...}), measured.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    audit_parser = actions.add_parser(
        "audit",
        help="re-grade recorded summaries K times and print the judge's agreement per case",
        description="Grade the recorded summary of every step case with a judge K times with the case's "
        "judge, and print per case the votes (pass, fail, unscored), the majority and its agreement, then "
        "the mean agreement, Fleiss' kappa and Krippendorff's alpha over the cases: the judge's noise, "
        "apart from the agent's. Asks the judge live; writes nothing.",
    )
    audit_parser.add_argument("goldens", nargs="+", help="goldens files (*.yaml) holding judged step cases")
    audit_parser.add_argument(
        "--repeats",
        type=_repeats,
        default=DEFAULT_REPEATS,
        metavar="K",
        help=f"how many times to grade each summary (2 to {MAX_AUDIT_REPEATS}; default {DEFAULT_REPEATS})",
    )
    audit_parser.add_argument("--model", help="the judge's model for every case (default: each case's own)")
    audit_parser.add_argument(
        "--base-url",
        help="where the judge's model answers (default: ANTHROPIC_BASE_URL, else Anthropic's API)",
    )
    add_format(audit_parser, ("text", "json"))
    audit_parser.set_defaults(func=main_audit)
    parser.set_defaults(func=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _repeats(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 2 <= value <= MAX_AUDIT_REPEATS:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of times from 2 to {MAX_AUDIT_REPEATS}")
    return value


def _client(base_url: str | None) -> Any:
    import anthropic

    try:
        return anthropic.Anthropic(base_url=base_url or None)  # None: ANTHROPIC_BASE_URL, else the API
    except anthropic.AnthropicError as exc:
        raise AgentEvalsError(f"the judge's client cannot be made: {exc}") from None


def _asking(judge: Judge, where: str) -> Judge:
    """The judge, its failure to answer one clear error (which model, where, what to check)."""

    def ask(spec: JudgeSpec, summary: str) -> JudgeVerdict:
        try:
            return judge(spec, summary)
        except Exception as exc:  # the SDK's connection, status and key errors alike
            raise AgentEvalsError(
                f"the judge ({spec.model or DEFAULT_JUDGE_MODEL} at {where}) did not answer: "
                f"{type(exc).__name__}: {exc} (check --base-url / ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY)"
            ) from None

    return ask


def main_audit(args: argparse.Namespace) -> int:
    client = _client(args.base_url)
    where = str(getattr(client, "base_url", args.base_url or "the Anthropic API"))
    done = audit(args.goldens, _asking(anthropic_judge(client), where), args.repeats, args.model)
    # Case ids, rubrics and files come from goldens files: escaped for the terminal.
    print(done.json() if args.format == "json" else safe(done.text()))
    return 0
