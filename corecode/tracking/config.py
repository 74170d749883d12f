"""Parameters of the ``tracking`` and ``promote`` sections of params.yaml."""

from pydantic import BaseModel, ConfigDict


class TrackingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PromoteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
