"""A judge's agreement with itself across cases (issue 34, point 3): Fleiss' kappa and Krippendorff's
alpha (nominal) from per-case vote counts, checked against the published worked examples and
properties that hold for any table."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentevals.step.agreement import JudgeAgreement, fleiss_kappa, krippendorff_alpha

# Fleiss (1971) as Wikipedia's "Fleiss' kappa" works it: 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the nominal example with missing
# data: 4 observers, 12 units, values 1-5; unit 12 has one value only (no pair). Alpha 0.743.
KRIPPENDORFF_UNITS = [
    {1: 3},
    {2: 3, 3: 1},
    {3: 4},
    {3: 4},
    {2: 4},
    {1: 1, 2: 1, 3: 1, 4: 1},
    {4: 4},
    {1: 3, 2: 1},
    {2: 4},
    {5: 3},
    {1: 2},
    {3: 1},
]
KRIPPENDORFF_TABLE = [[unit.get(value, 0) for value in range(1, 6)] for unit in KRIPPENDORFF_UNITS]


def test_fleiss_kappa_of_the_textbook_table() -> None:
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.210, abs=0.0005)


def test_krippendorff_alpha_of_the_textbook_table_with_missing_values() -> None:
    assert krippendorff_alpha(KRIPPENDORFF_TABLE) == pytest.approx(0.743, abs=0.0005)
    assert fleiss_kappa(KRIPPENDORFF_TABLE) is None  # uneven counts: Fleiss' kappa does not apply


def test_undefined_where_there_is_nothing_to_measure() -> None:
    assert fleiss_kappa([]) is None
    assert krippendorff_alpha([[1, 0], [0, 1]]) is None  # no case with two votes
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # every vote one category: no variation
    assert krippendorff_alpha([[3, 0], [3, 0]]) is None
    with pytest.raises(ValueError, match="a count for each category"):
        krippendorff_alpha([[1, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match="whole numbers"):
        fleiss_kappa([[1, -1]])


tables = st.integers(2, 4).flatmap(
    lambda width: st.integers(2, 9).flatmap(
        lambda votes: st.lists(
            st.lists(st.integers(0, votes), min_size=width - 1, max_size=width - 1)
            .filter(lambda head: sum(head) <= votes)
            .map(lambda head: [*head, votes - sum(head)]),
            min_size=2,
            max_size=12,
        )
    )
)


@given(tables)
def test_bounds_and_how_the_two_relate(table: list[list[int]]) -> None:
    kappa, alpha = fleiss_kappa(table), krippendorff_alpha(table)
    assert (kappa is None) == (alpha is None)
    if kappa is None or alpha is None:
        return
    votes, total = sum(table[0]), sum(map(sum, table))
    assert -1 / (votes - 1) - 1e-9 <= kappa <= 1 + 1e-9
    assert alpha <= 1 + 1e-9
    # With no missing value, alpha is kappa corrected for the table's size (Krippendorff 2011).
    assert alpha == pytest.approx(1 - (1 - kappa) * (total - 1) / total)


@given(tables, st.randoms(use_true_random=False))
def test_the_order_of_cases_and_of_categories_does_not_matter(
    table: list[list[int]], rng: random.Random
) -> None:
    cases = rng.sample(table, len(table))
    order = rng.sample(range(len(table[0])), len(table[0]))
    shuffled = [[row[j] for j in order] for row in cases]
    for statistic in (fleiss_kappa, krippendorff_alpha):
        before, after = statistic(table), statistic(shuffled)
        assert (before is None) == (after is None)
        if before is not None and after is not None:
            assert after == pytest.approx(before)


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(2, 9)), min_size=2, max_size=12))
def test_perfect_agreement_is_one(cases: list[tuple[int, int]]) -> None:
    """Every case unanimous (some unanimous pass, some fail): 1; all one way: undefined."""
    table = [[votes, 0] if category == 0 else [0, votes] for category, votes in cases]
    both = len({category for category, _ in cases}) == 2
    assert krippendorff_alpha(table) == (pytest.approx(1.0) if both else None)
    if len({votes for _, votes in cases}) == 1:
        assert fleiss_kappa(table) == (pytest.approx(1.0) if both else None)


def test_a_judge_agreement_leaves_unscored_votes_out() -> None:
    votes = [
        (True, True, True, False, None),
        (False, False, None, False, False),
        (True, True, True, True, True),
        (True,),  # one vote: no measure of agreement
    ]
    agreement = JudgeAgreement.of(votes)
    scored_only = JudgeAgreement.of([[v for v in case if v is not None] for case in votes])
    assert (agreement.alpha, agreement.mean) == (scored_only.alpha, scored_only.mean)
    assert agreement.cases == 3
    assert agreement.mean == pytest.approx((3 / 4 + 1 + 1) / 3)
    assert agreement.kappa is None  # 4, 4 and 5 scored votes: uneven
    assert agreement.alpha == pytest.approx(krippendorff_alpha([[3, 1], [0, 4], [5, 0]]))
    assert (agreement.votes, agreement.unscored) == (15, 2)
    assert agreement.describe() == (
        f"judge agreement: mean 0.92, Krippendorff's alpha {agreement.alpha:.2f} over 3 cases "
        "(15 votes, 2 unscored)"
    )
    even = JudgeAgreement.of([(True, True, False), (False, False, False)])
    assert even.describe().startswith(f"judge agreement: mean 0.83, Fleiss' kappa {even.kappa:.2f}, ")
