"""Terminal-safe output of the history layer's pytest face (issue 17): a quarantine file's owner and
reason, from the repository, reach pytest's output escaped — its flakiness summary and the XFAIL
line pytest prints with our reason."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from ..terminal_support import HOSTILE, unsafe

# A quarantine's end within its horizon (a year), whenever the suite runs.
SOON = (dt.date.today() + dt.timedelta(days=30)).isoformat()

pytest_plugins = ["pytester"]


def test_the_flakiness_summary_and_the_quarantine_reason_are_escaped(pytester: pytest.Pytester) -> None:
    hostile = json.dumps(HOSTILE)[1:-1]  # YAML's double quotes take JSON's escapes
    pytester.makefile(
        ".yaml",
        **{
            "agentevals-quarantine": f"""
            quarantine:
              - test: test_agent.py::test_dns
                owner: "alice{hostile}"
                reason: "sandbox DNS flaps{hostile}"
                expires: {SOON}
            """
        },
    )
    pytester.makepyfile(
        test_agent="""
        import pytest

        @pytest.mark.resume
        def test_dns():
            assert False, "no route to host"
        """
    )
    result = pytester.runpytest("--agentevals-sha=c1", "-rx")
    result.assert_outcomes(xfailed=1)
    out = result.stdout.str()
    assert unsafe(out) == [], out
    result.stdout.fnmatch_lines(
        [
            "*= agentevals flakiness =*",
            "quarantined: test_agent.py::test_dns (owner alice\\x1b[[]2J*",
            "XFAIL test_agent.py::test_dns - agentevals quarantine: sandbox DNS flaps\\x1b[[]2J*",
        ]
    )
