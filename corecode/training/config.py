"""Parameters of the ``sft`` and ``grpo`` sections of params.yaml."""

from pydantic import BaseModel, ConfigDict


class SFTParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GRPOParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
