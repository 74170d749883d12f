"""Parameters of the `evaluation` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class EvaluateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
