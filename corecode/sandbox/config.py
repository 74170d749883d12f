"""Parameters of the `sandbox` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class SandboxParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
