"""Parameters of the ``sft`` and ``grpo`` sections of params.yaml (each defined beside its trainer)."""

from corecode.training.grpo_config import GRPOParams, MAGRPOParams, TeamGRPOParams, TwoRoleGRPOParams
from corecode.training.sft_config import SFTParams
from corecode.training.single_grpo_config import SingleGRPOParams

__all__ = ["GRPOParams", "MAGRPOParams", "SFTParams", "SingleGRPOParams", "TeamGRPOParams", "TwoRoleGRPOParams"]
