"""The Coder's plan-adherence term: which constants a plan asks for, which a program uses, and the reward it adds."""

import pytest

from corecode.sandbox.types import SampleResult, Verdict
from corecode.training.rewards import code_constants, coder_reward, plan_adherence, plan_constants
from corecode.training.rewards_config import CoderRewardWeights

PLAN = "1. Split the string on '-'.\n2. Keep only the first 2 words.\n3. If the list is empty, return -1."


def test_plan_constants_skip_step_numbers_and_read_quotes_and_negatives():
    assert plan_constants(PLAN) == {("str", "-"), ("int", 2), ("int", -1)}
    assert plan_constants("1. Reverse the list.\n2. Sort it.") == set()
    assert plan_constants('1) Count how many times "e" occurs.\n2) Return whether it is greater than 20.') == {
        ("str", "e"),
        ("int", 20),
    }
    assert plan_constants(None) == set()


def test_code_constants_reads_literals_not_docstrings():
    code = "def solve(s):\n    '''Split on 'x' 7 times.'''\n    w = s.split('-')[:2]\n    return w or -1"
    assert code_constants(code) == {("str", "-"), ("int", 2), ("int", -1)}
    assert code_constants("def solve(:") is None


@pytest.mark.parametrize(
    "code, expected",
    [
        ("def solve(s):\n    w = s.split('-')[:2]\n    return w if w else -1", 1.0),
        ("def solve(s):\n    w = s.split(',')[:2]\n    return w if w else -1", 2 / 3),  # the SFT Coder's typical slip
        ("def solve(s):\n    return s.split(',')[:4]", 0.0),
        ("def solve(s:\n    return s", 0.0),  # does not parse
    ],
)
def test_plan_adherence_is_the_fraction_of_plan_constants_used(code, expected):
    assert plan_adherence(PLAN, code) == pytest.approx(expected)


def test_a_plan_without_constants_is_always_followed():
    assert plan_adherence("1. Reverse the list.", "def solve(xs):\n    return xs[::-1]") == 1.0


def test_adherence_adds_its_weight_to_the_shaped_reward_and_is_off_by_default():
    wrong = SampleResult(task_id="t", verdict=Verdict.wrong_answer, pass_fraction=0.5, passed=False)
    assert coder_reward(wrong, CoderRewardWeights(), adherence=1.0) == coder_reward(wrong, CoderRewardWeights())
    w = CoderRewardWeights(plan_adherence=0.3)
    assert coder_reward(wrong, w, adherence=1.0) - coder_reward(wrong, w, adherence=0.0) == pytest.approx(0.3)
    assert coder_reward(None, w, adherence=1.0) == 0.0  # nothing extractable earns nothing


def test_gold_plans_and_reference_solutions_of_the_composite_suite_agree():
    """Every generated problem's reference solution uses all the constants of its gold plan, so the term never pulls
    the Coder away from correct code (and does find constants: most plans have some)."""
    from corecode.data.composite import CompositeParams, generate_composite

    splits = generate_composite(CompositeParams(n_train=200, n_val=20, n_test=60, n_rl=40), seed=3)
    problems = [p for split in splits.values() for p in split]
    assert all(plan_adherence(p.plan, p.reference_solution) == 1.0 for p in problems)
    assert sum(bool(plan_constants(p.plan)) for p in problems) > len(problems) / 2
