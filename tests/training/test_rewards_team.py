"""Rewards on known programs through the real sandbox: correct > partly right > wrong > crash > syntax error."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS  # noqa: E402

from corecode.agents.prompts import format_code, format_plan  # noqa: E402
from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.grpo_config import (  # noqa: E402
    CoderRewardWeights,
    MAGRPORewardWeights,
    PlannerRewardWeights,
)
from corecode.training.rewards import (  # noqa: E402
    SandboxCodeReward,
    coder_reward,
    magrpo_reward,
    plan_format_ok,
    planner_reward,
)

P = PROBLEMS[0]  # add_one, 3 tests: [1,2]->[2,3], []->[], [5]->[6]
PROGRAMS = {
    "correct": "def add_one(xs):\n    return [x + 1 for x in xs]",
    "partial": "def add_one(xs):\n    return [x + 1 for x in xs] if len(xs) != 1 else []",  # 2 of 3 tests
    "wrong": "def add_one(xs):\n    return [0]",  # runs, passes nothing
    "crash": "def add_one(xs):\n    return xs[10]",  # IndexError on every test
    "syntax": "def add_one(xs:\n    return xs",
}


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sb:
        yield sb


def test_coder_reward_ordering(sandbox):
    reward = SandboxCodeReward(PROBLEMS, sandbox)
    names = list(PROGRAMS)
    r = dict(
        zip(
            names,
            reward(prompts=[""] * 5, completions=[format_code(PROGRAMS[n]) for n in names], task_id=[P.task_id] * 5),
        )
    )
    assert r["correct"] > r["partial"] > r["wrong"] > r["crash"] > r["syntax"]
    w = CoderRewardWeights()
    assert r["correct"] == pytest.approx(w.syntax + w.runs + w.tests + w.passed)
    assert r["partial"] == pytest.approx(w.syntax + w.runs + w.tests * 2 / 3)
    assert r["wrong"] == pytest.approx(w.syntax + w.runs)
    assert r["crash"] == pytest.approx(w.syntax)
    assert r["syntax"] == 0.0


def test_reward_object_is_a_trl_reward_function(sandbox):
    reward = SandboxCodeReward({p.task_id: p for p in PROBLEMS}, sandbox, plan_format_weight=0.5)
    assert reward.__name__ == "sandbox_code_reward"
    # conversational completions and a plan-then-code completion
    plan_then_code = format_plan("1. Add one to each.") + "\n" + format_code(PROGRAMS["correct"])
    out = reward(
        prompts=["x", "y"],
        completions=[[{"role": "assistant", "content": plan_then_code}], format_code(PROGRAMS["correct"])],
        task_id=[P.task_id] * 2,
    )
    assert out[0] == pytest.approx(out[1] + 0.5)
    with pytest.raises(KeyError, match="nope"):
        reward(prompts=["x"], completions=["y"], task_id=["nope"])
    with pytest.raises(ValueError, match="task_id"):
        reward(prompts=["x"], completions=["y"])


def test_efficiency_terms_use_the_reference_run(sandbox):
    """Time/memory terms only for passing programs, bounded by their weights (values are measured on the run)."""
    w = CoderRewardWeights(time=0.5, memory=0.5)
    res = sandbox.run_batch([(P, PROGRAMS["correct"]), (P, PROGRAMS["wrong"]), (P, P.reference_solution)])
    base = CoderRewardWeights()
    assert coder_reward(res[1], w, res[2]) == pytest.approx(coder_reward(res[1], base, res[2]))
    extra = coder_reward(res[0], w, res[2]) - coder_reward(res[0], base, res[2])
    assert 0.0 < extra <= 1.0 + 1e-9


def test_memory_term_compares_added_memory_with_a_floor(sandbox):
    """The memory term sets what the program added against what the reference added: a program as small as the
    reference earns the whole term (both under the floor: no division by a measured 0), one holding 40 MiB more
    earns a small part of it."""
    w, base = CoderRewardWeights(memory=1.0), CoderRewardWeights()
    big = "def add_one(xs):\n    pad = bytearray(40 << 20)\n    return [x + 1 for x in xs]"
    ref, small, large = sandbox.run_batch([(P, P.reference_solution), (P, PROGRAMS["correct"]), (P, big)])
    assert ref.passed and small.passed and large.passed
    small_term = coder_reward(small, w, ref) - coder_reward(small, base, ref)
    large_term = coder_reward(large, w, ref) - coder_reward(large, base, ref)
    assert small_term > 0.7 and 0.0 < large_term < 0.2
    assert coder_reward(
        small.model_copy(update={"peak_memory_mb": 0.0}), w, ref.model_copy(update={"peak_memory_mb": 0.0})
    ) - coder_reward(small, base, ref) == pytest.approx(1.0)


def test_planner_reward_flows_through_the_coder(sandbox):
    w = PlannerRewardWeights(guidance=0.3)
    good_plan, bad_plan = format_plan("1. Loop over xs.\n2. Add 1."), "just do it"
    assert plan_format_ok(good_plan) == 1.0 and plan_format_ok(bad_plan) == 0.0
    res = sandbox.run_batch([(P, PROGRAMS[n]) for n in ("correct", "correct", "wrong", "crash")])
    cw = CoderRewardWeights()
    rc = [coder_reward(r, cw) for r in res]
    strong = planner_reward(good_plan, rc[:2], res[:2], w)
    weak = planner_reward(good_plan, rc[2:], res[2:], w)
    assert strong == pytest.approx(sum(rc[:2]) / 2 + 0.1 + 0.3)
    assert weak == pytest.approx(sum(rc[2:]) / 2 + 0.1)
    assert strong > weak > planner_reward(bad_plan, rc[2:], res[2:], w)


def test_magrpo_tiers(sandbox):
    w = MAGRPORewardWeights()
    helper = "def aux(x):\n    return x + 1"
    main_uses = "def add_one(xs):\n    return [aux(x) for x in xs]"
    main_alone = "def add_one(xs):\n    return [x + 1 for x in xs]"
    joint = sandbox.run_batch([(P, helper + "\n\n" + main_uses), (P, helper + "\n\n" + main_alone)])
    full = magrpo_reward(P, helper, main_uses, joint[0], w)
    assert full == pytest.approx(1.0)
    assert magrpo_reward(P, helper, main_alone, joint[1], w) == pytest.approx(1.0 - w.uses_helper)
    assert magrpo_reward(P, None, main_uses, None, w) == pytest.approx(w.main_defined)
    assert magrpo_reward(P, helper, "def add_one(xs:", None, w) == pytest.approx(w.helper_defined)
    assert magrpo_reward(P, "def add_one(xs):\n    return xs", main_uses, None, w) == pytest.approx(w.main_defined)
