"""Parameters of the `agents` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class AgentsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
