"""Group-relative advantages, exactly as TRL's GRPOTrainer computes them, for groups of any nesting.

TRL assumes one flat group per prompt (``rewards.view(-1, num_generations)``). The team trainer has two nested
levels — plans within a problem, programs within a plan — so each level calls ``group_advantages`` with its own
group size; the arithmetic (mean-centred, std from ``trl.trainer.utils.nanstd``, ``+ 1e-4``) mirrors
``GRPOTrainer._generate_and_score_completions``.
"""

from __future__ import annotations

import torch
from trl.trainer.utils import nanstd


def group_advantages(
    rewards: torch.Tensor, group_size: int, scale_rewards: str = "group"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages of consecutive groups of ``group_size`` rewards; also a per-element "group std is zero" mask.

    ``scale_rewards``: "group" divides by the group's std, "batch" by the std of all rewards, "none" only centres.
    """
    rewards = rewards.float()
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.view(-1, group_size)
    mean = grouped.mean(dim=1).repeat_interleave(group_size)
    advantages = rewards - mean
    if group_size > 1:
        group_std = nanstd(grouped, dim=1).repeat_interleave(group_size)
    else:
        group_std = torch.zeros_like(rewards)
    if scale_rewards == "group":
        std = group_std
    elif scale_rewards == "batch":
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    elif scale_rewards == "none":
        std = None
    else:
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    if std is not None:
        advantages = advantages / (std + 1e-4)
    is_std_zero = torch.isclose(group_std, torch.zeros_like(group_std))
    return advantages, is_std_zero


def groups_changed(
    rewards: torch.Tensor, without: torch.Tensor, group_size: int, scale_rewards: str = "group", tol: float = 0.05
) -> torch.Tensor:
    """Per group of ``group_size``: whether its advantages under ``rewards`` differ by more than ``tol`` from those
    under ``without``, the same samples' rewards with one reward term removed: the groups whose update the term
    changes. A term that only widens a difference another term already makes changes nothing under group-std scaling
    (with two samples a group only the sign of their difference reaches the advantages); under batch scaling the
    term also moves the batch's std, which rescales every group's advantages. ``tol``: a smaller one would count the
    1e-4 that keeps the std's division finite, which moves the advantages of a small difference a little."""
    with_term, _ = group_advantages(rewards, group_size, scale_rewards)
    without_term, _ = group_advantages(without, group_size, scale_rewards)
    return ((with_term - without_term).abs() > tol).view(-1, group_size).any(dim=1)
