"""Parameters of the ``sft`` and ``grpo`` sections of params.yaml (defined beside their trainers)."""

from corecode.training.grpo_config import GRPOParams
from corecode.training.sft_config import SFTParams

__all__ = ["GRPOParams", "SFTParams"]
