"""Group-relative advantages at both nesting levels, against hand-computed numbers (TRL's arithmetic)."""

import math

import pytest
import torch

from corecode.training.advantages import group_advantages, groups_changed


def test_plans_within_problem_hand_computed():
    # two problems x G_p=2 plans: rewards (1, 0) and (0.5, 0.5)
    adv, zero = group_advantages(torch.tensor([1.0, 0.0, 0.5, 0.5]), 2)
    s = math.sqrt(0.5)  # unbiased std of (1, 0)
    expected = [0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 0.0, 0.0]
    assert adv.tolist() == pytest.approx(expected, rel=1e-6)
    assert zero.tolist() == [False, False, True, True]


def test_programs_within_plan_groups_of_three():
    # one plan's G_c=3 programs: rewards (0, 0.3, 0.9): mean 0.4, std = sqrt(((.4)^2+(.1)^2+(.5)^2)/2) = sqrt(0.21)
    adv, _ = group_advantages(torch.tensor([0.0, 0.3, 0.9]), 3)
    s = math.sqrt(0.21)
    assert adv.tolist() == pytest.approx([-0.4 / (s + 1e-4), -0.1 / (s + 1e-4), 0.5 / (s + 1e-4)], rel=1e-5)


def test_scale_none_and_batch():
    r = torch.tensor([1.0, 0.0, 3.0, 1.0])
    none, _ = group_advantages(r, 2, "none")
    assert none.tolist() == pytest.approx([0.5, -0.5, 1.0, -1.0])
    batch, _ = group_advantages(r, 2, "batch")
    s = float(torch.tensor([1.0, 0.0, 3.0, 1.0]).std())
    assert batch.tolist() == pytest.approx([0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 1 / (s + 1e-4), -1 / (s + 1e-4)])


def test_matches_trl_flat_groups():
    """A single level is exactly what TRL's GRPOTrainer computes (rewards.view(-1, G), nanstd, +1e-4)."""
    from trl.trainer.utils import nanstd

    r = torch.rand(12, generator=torch.Generator().manual_seed(0))
    g = r.view(-1, 4)
    trl = (r - g.mean(1).repeat_interleave(4)) / (nanstd(g, dim=1).repeat_interleave(4) + 1e-4)
    assert torch.equal(group_advantages(r, 4)[0], trl)


def test_bad_group_size_and_scale():
    with pytest.raises(ValueError, match="groups of 4"):
        group_advantages(torch.zeros(6), 4)
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(torch.zeros(4), 2, "nope")


def test_plan_outcomes_per_plan_shares():
    from corecode.training.team_grpo import plan_outcomes

    # three plans x 4 programs: 2 of 4 pass, all pass, none pass
    passed = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    out = plan_outcomes(passed, 4)
    assert out["planner/plan_accuracy"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert out["planner/plan_any_pass"] == pytest.approx(2 / 3)
    assert out["planner/uniform_plan_frac"] == pytest.approx(2 / 3)
    # one program per plan: every plan is uniform
    assert plan_outcomes(torch.tensor([1.0, 0.0]), 1)["planner/uniform_plan_frac"] == 1.0


def test_pool_identical_gives_equal_texts_their_mean_within_a_group():
    from corecode.training.team_grpo import pool_identical

    rewards = torch.tensor([1.0, 0.0, 0.5, 0.2, 0.9, 0.1])
    out = pool_identical(rewards, ["a", "a", "b", "a", "a", "c"], 3)  # groups: [a a b], [a a c]
    assert out.tolist() == pytest.approx([0.5, 0.5, 0.5, 0.55, 0.55, 0.1])
    # all copies of one plan: equal rewards, so GRPO gives them no advantage
    adv, zero = group_advantages(pool_identical(torch.tensor([1.0, 0.0]), ["p", "p"], 2), 2)
    assert adv.tolist() == [0.0, 0.0] and zero.all()


def test_groups_changed_by_a_term():
    # four groups of two programs; the term adds (0.3, 0.1), (0.2, 0.2), (0.0, 0.4), (0.1, 0.0) to rewards without it:
    # group 1 keeps its order (group-std scaling: the same advantages), group 2 adds the same to both, group 3 flips
    # the order, group 4 breaks a tie
    without = torch.tensor([1.1, 1.0, 1.1, 0.0, 1.1, 1.0, 1.1, 1.1])
    term = torch.tensor([0.3, 0.1, 0.2, 0.2, 0.0, 0.4, 0.1, 0.0])
    changed = groups_changed(without + term, without, 2)
    assert changed.tolist() == [False, False, True, True]
    # centred only (or scaled by the batch's std, which the term moves by 1% here), group 1's wider difference counts
    assert groups_changed(without + term, without, 2, "none").tolist() == [True, False, True, True]
    assert groups_changed(without + term, without, 2, "batch").tolist() == [True, False, True, True]
    assert groups_changed(without * 3, without, 2, "batch").tolist() == [False] * 4  # a scale: the same advantages
    assert not groups_changed(without, without, 2).any()
