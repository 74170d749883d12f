"""Parameters of the `generation` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class GenerationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
