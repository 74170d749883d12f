"""Parameters of the `models` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class ModelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
