"""Which environment variables hold credentials: what a replayed child is never given.

A replay answers from the recording and forwards nothing, so its child needs no key; one it holds
anyway is one a tool of the agent can send elsewhere (an OAuth token, a cloud secret, another
provider's key). By name, since a value cannot tell: the known names, and every name shaped like
one (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`), in any case. A count
of tokens (`MAX_THINKING_TOKENS`, `CLAUDE_CODE_MAX_OUTPUT_TOKENS`) or a tokenizer's setting is not a
credential and stays: the recording was made with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Credentials whose names the patterns below do not all catch, and the usual ones, said once.
KNOWN_CREDENTIALS = frozenset(
    {
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_CLIENT_SECRET",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "HF_TOKEN",
        "NPM_TOKEN",
        "PGPASSWORD",
        "SSH_AUTH_SOCK",  # not a secret itself: the way to every key an ssh-agent holds
    }
)
_SHAPED = re.compile(r"_KEY$|TOKEN(?!S(?:_|$)|IZER)|SECRET|PASSWORD|PASSWD|CREDENTIAL")


def is_credential(name: str) -> bool:
    """Whether an environment variable of this name holds (or leads to) a credential."""
    upper = name.upper()
    return upper in KNOWN_CREDENTIALS or bool(_SHAPED.search(upper))


def without_credentials(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """`environ` less every credential-shaped variable, and the names taken out (sorted)."""
    kept = {name: value for name, value in environ.items() if not is_credential(name)}
    return kept, sorted(name for name in environ if name not in kept)
