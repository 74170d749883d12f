"""Parameters of the `data` section of params.yaml."""

from pydantic import BaseModel, ConfigDict


class DataParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
