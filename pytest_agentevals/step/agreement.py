"""How far a judge agrees with itself across cases: chance-corrected agreement of repeated verdicts.

Each case was judged several times; its votes are counted per category (for a judge: pass, fail),
unscored replies left out. Two statistics of the whole table, both nominal:

- **Fleiss' kappa** (Fleiss 1971): needs the same number of scored votes in every case; None
  otherwise (unscored replies make the counts uneven).
- **Krippendorff's alpha** (nominal): takes uneven counts as they come (a case with fewer than two
  scored votes has no pair to compare and is left out), so it is the one that survives unscored
  replies. With equal counts it is Fleiss' kappa corrected for the table's size.

Both are 1 for perfect agreement and 0 for agreement no better than chance; negative below it. Both
are None when undefined: no case with two votes, or every vote in one category (no variation to
agree on beyond chance).

Pure arithmetic: no I/O, nothing of the judge.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Counts = Sequence[int]  # one case's votes per category, in the same category order for every case


def fleiss_kappa(table: Sequence[Counts]) -> float | None:
    """Fleiss' kappa of a table of per-case counts, every case with the same number of votes (>= 2)."""
    rows = [list(row) for row in table]
    _check(rows)
    rows = [row for row in rows if sum(row) > 0]
    if not rows:
        return None
    n = sum(rows[0])
    if n < 2 or any(sum(row) != n for row in rows):
        return None
    cases = len(rows)
    observed = statistics.fmean((sum(c * c for c in row) - n) / (n * (n - 1)) for row in rows)
    shares = [sum(row[j] for row in rows) / (cases * n) for j in range(len(rows[0]))]
    chance = sum(p * p for p in shares)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def krippendorff_alpha(table: Sequence[Counts]) -> float | None:
    """Krippendorff's alpha (nominal) of a table of per-case counts; uneven counts allowed."""
    rows = [list(row) for row in table]
    _check(rows)
    pairable = [row for row in rows if sum(row) >= 2]
    if not pairable:
        return None
    width = len(pairable[0])
    # The coincidence matrix: within a case of m votes each ordered pair of votes counts 1/(m - 1).
    agreeing = 0.0  # the sum of its diagonal
    totals = [0.0] * width  # its margins, n_c: the pairable votes of each category
    for row in pairable:
        m = sum(row)
        agreeing += sum(c * (c - 1) for c in row) / (m - 1)
        for j, c in enumerate(row):
            totals[j] += c
    n = sum(totals)
    observed_disagreement = n - agreeing  # the off-diagonal sum
    expected_disagreement = (n * n - sum(t * t for t in totals)) / (n - 1)
    if expected_disagreement == 0:
        return None
    return 1.0 - observed_disagreement / expected_disagreement


def _check(rows: list[list[int]]) -> None:
    widths = {len(row) for row in rows}
    if len(widths) > 1:
        raise ValueError(f"every case needs a count for each category; got rows of {sorted(widths)} counts")
    for row in rows:
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in row):
            raise ValueError(f"{row!r}: counts are whole numbers, 0 or more")


def judge_counts(votes: Sequence[bool | None]) -> tuple[int, int]:
    """A case's scored votes as (passes, fails); unscored ones (None) are left out."""
    return votes.count(True), votes.count(False)


@dataclass(frozen=True)
class JudgeAgreement:
    """How a judge agreed with itself over the cases it judged repeatedly.

    `mean` is the mean over cases of each case's agreement (the share of its scored votes that agree
    with its majority); `kappa` and `alpha` the chance-corrected statistics of all the votes."""

    cases: int
    mean: float | None
    kappa: float | None
    alpha: float | None
    votes: int
    unscored: int

    @classmethod
    def of(cls, per_case: Sequence[Sequence[bool | None]]) -> JudgeAgreement:
        """From each case's votes (True pass, False fail, None unscored); cases with one vote or
        none are no measure of agreement and are left out."""
        cases = [list(votes) for votes in per_case if len(votes) > 1]
        table = [judge_counts(votes) for votes in cases]
        shares = [max(p, f) / (p + f) for p, f in table if p + f > 0]
        return cls(
            cases=len(cases),
            mean=statistics.fmean(shares) if shares else None,
            kappa=fleiss_kappa(table),
            alpha=krippendorff_alpha(table),
            votes=sum(len(votes) for votes in cases),
            unscored=sum(votes.count(None) for votes in cases),
        )

    def describe(self) -> str:
        """One line: `judge agreement: mean 0.93, Fleiss' kappa 0.71, Krippendorff's alpha 0.71 over
        12 cases (300 votes, 9 unscored)`; `n/a` where a statistic is undefined."""
        shown = self.kappa is not None or self.alpha is None  # uneven counts: alpha alone says it
        kappa = f", Fleiss' kappa {_number(self.kappa)}" if shown else ""
        unscored = f", {self.unscored} unscored" if self.unscored else ""
        return (
            f"judge agreement: mean {_number(self.mean)}{kappa}, Krippendorff's alpha {_number(self.alpha)} "
            f"over {self.cases} case{'s' if self.cases != 1 else ''} ({self.votes} votes{unscored})"
        )

    def as_data(self) -> dict[str, object]:
        return {
            "cases": self.cases,
            "mean_agreement": self.mean,
            "fleiss_kappa": self.kappa,
            "krippendorff_alpha": self.alpha,
            "votes": self.votes,
            "unscored": self.unscored,
        }


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


# What the docs and a user may import from here (docs/step.md); the rest is this module's own.
__all__ = ["JudgeAgreement", "fleiss_kappa", "krippendorff_alpha"]
