"""Parameters of the ``agents`` section of params.yaml: per-role sampling and the teams, composed in config.

A team is ``{type, roles: {role: model}, options}``; ``build_team(name, params, generators)`` turns it into an object.
A role's model is a local path, a hub id, an MLflow registry URI (``models:/NAME@champion``) or a base model plus a
LoRA adapter (``{model: BASE, adapter: PATH}``). Options are validated per team type, so a misspelt option fails
at load time with the team and key named.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer, model_validator

TeamType = Literal["single", "single_cot", "plan_then_code", "planner_coder", "helper_main", "retrieval", "debugging"]


class RoleSampling(BaseModel):
    """How one role samples (``n`` is set per call by the team)."""

    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(128, gt=0, description="Completion length cap for this role, in tokens.")
    temperature: float = Field(0.4, ge=0.0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    stop: list[str] = Field(default_factory=list, description="Stop strings (the completion is cut before them).")


def _default_sampling() -> dict[str, RoleSampling]:
    return {
        "planner": RoleSampling(max_new_tokens=96),
        "coder": RoleSampling(),
        "helper": RoleSampling(),
        "main": RoleSampling(),
        "repair": RoleSampling(max_new_tokens=256, temperature=0.8),
    }


class RoleModel(BaseModel):
    """The model behind a role: ``model`` (path, hub id or ``models:/`` URI) and an optional LoRA ``adapter``."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Local checkpoint dir, hub id, or MLflow registry URI (models:/NAME@ALIAS).")
    adapter: str | None = Field(None, description="LoRA adapter dir (or models:/ URI) applied on top of `model`.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"model": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _dump_shorthand(self, handler):
        # Written back the way it is usually given: a plain model string when there is no adapter.
        return self.model if self.adapter is None else handler(self)


class SingleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlannerCoderOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    codes_per_plan: int = Field(1, ge=1, description="Coder samples per plan; n attempts = ceil(n/m) plans x m codes.")
    on_plan_failure: Literal["raw", "none"] = Field(
        "raw", description="When no plan can be extracted, show the Coder the raw Planner text ('raw') or no plan."
    )


class HelperMainOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    main_sees_helper: bool = Field(
        True, description="Main is prompted with the helper's code (False: both write in parallel, MAGRPO-style)."
    )


class RetrievalOptions(PlannerCoderOptions):
    corpus: str = Field(
        "data/processed/composite_train.jsonl", description="JSONL of solved Problems (train split) BM25 searches."
    )
    k: int = Field(2, ge=1, description="Neighbours shown to the Planner.")
    max_example_chars: int = Field(1500, gt=0, description="Per-field cap on each neighbour's text in the prompt.")


class DebuggingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inner: str = Field("planner_coder_grpo", description="Team (a name in agents.teams) whose attempts are repaired.")
    max_rounds: int = Field(2, ge=0, description="Repair rounds at most (0 = only run the visible tests).")
    visible_k: int = Field(3, ge=1, description="Visible tests: statement examples or the first k tests, at most k.")
    feedback_chars: int = Field(1500, gt=0, description="Cap on the error text shown to the repair role.")


OPTIONS_BY_TYPE: dict[str, type[BaseModel]] = {
    "single": SingleOptions,
    "single_cot": SingleOptions,
    "plan_then_code": SingleOptions,
    "planner_coder": PlannerCoderOptions,
    "helper_main": HelperMainOptions,
    "retrieval": RetrievalOptions,
    "debugging": DebuggingOptions,
}
REQUIRED_ROLES: dict[str, tuple[str, ...]] = {
    "single": ("coder",),
    "single_cot": ("coder",),
    "plan_then_code": ("coder",),
    "planner_coder": ("planner", "coder"),
    "helper_main": ("helper", "main"),
    "retrieval": ("planner", "coder"),
    "debugging": (),  # `repair` defaults to the inner team's coder (or main)
}
OPTIONAL_ROLES: dict[str, tuple[str, ...]] = {"debugging": ("repair",)}


class TeamSpec(BaseModel):
    """One team: its type, the model of each role, and type-specific options."""

    model_config = ConfigDict(extra="forbid")

    type: TeamType = Field(
        description="single | single_cot | plan_then_code | planner_coder | helper_main | retrieval | debugging."
    )
    roles: dict[str, RoleModel] = Field(default_factory=dict, description="Role name -> model (see RoleModel).")
    options: dict[str, Any] = Field(default_factory=dict, description="Type-specific options (validated by type).")

    @model_validator(mode="after")
    def _check(self) -> TeamSpec:
        need, allowed = REQUIRED_ROLES[self.type], REQUIRED_ROLES[self.type] + OPTIONAL_ROLES.get(self.type, ())
        missing = [r for r in need if r not in self.roles]
        unknown = [r for r in self.roles if r not in allowed]
        if missing:
            raise ValueError(f"type {self.type!r} needs roles {list(need)}; missing {missing}")
        if unknown:
            raise ValueError(f"type {self.type!r} has roles {list(allowed)}; unknown role(s) {unknown}")
        try:
            OPTIONS_BY_TYPE[self.type].model_validate(self.options)
        except ValidationError as e:
            errs = "; ".join(f"options.{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
            raise ValueError(f"type {self.type!r}: {errs}") from None
        return self

    @model_serializer(mode="wrap")
    def _dump_set(self, handler):
        return {k: v for k, v in handler(self).items() if v != {}}  # no empty roles/options blocks

    def parsed_options(self) -> BaseModel:
        return OPTIONS_BY_TYPE[self.type].model_validate(self.options)


def _ckpt(name: str) -> str:
    return f"data/checkpoints/{name}"


def _default_teams() -> dict[str, TeamSpec]:
    """The teams of the pipeline's methods (on the checkpoints its stages write) and the registry's champion."""
    sft = {"planner": _ckpt("sft_planner"), "coder": _ckpt("sft_coder")}
    grpo = {"planner": _ckpt("grpo_planner"), "coder": _ckpt("grpo_coder")}
    return {
        "single_sft": TeamSpec(type="single", roles={"coder": _ckpt("sft_single")}),
        "single_grpo": TeamSpec(type="single", roles={"coder": _ckpt("grpo_single")}),
        "single_cot": TeamSpec(type="single_cot", roles={"coder": _ckpt("sft_single")}),
        "pta_grpo": TeamSpec(type="plan_then_code", roles={"coder": _ckpt("pta_grpo")}),
        "planner_coder_sft": TeamSpec(type="planner_coder", roles=sft),
        "planner_coder_grpo": TeamSpec(type="planner_coder", roles=grpo),
        # the control of planner_coder_grpo: its recipe with the RL term zeroed (grpo-team --ptx-control)
        "planner_coder_ptx": TeamSpec(
            type="planner_coder", roles={"planner": _ckpt("ptx_planner"), "coder": _ckpt("ptx_coder")}
        ),
        "magrpo": TeamSpec(type="helper_main", roles={"helper": _ckpt("magrpo_helper"), "main": _ckpt("magrpo_main")}),
        # the GRPO team with MapCoder's Retrieval agent (BM25 neighbours for the Planner) and Debugging agent (one
        # repair round on the statement's examples): methods of the pipeline, compared with the team alone
        "planner_coder_grpo_retrieval": TeamSpec(type="retrieval", roles=grpo),
        "planner_coder_grpo_debug": TeamSpec(
            type="debugging", options={"inner": "planner_coder_grpo", "max_rounds": 1}
        ),
        "champion": TeamSpec(
            type="planner_coder",
            roles={
                "planner": "models:/corecode-team@champion/planner",
                "coder": "models:/corecode-team@champion/coder",
            },
        ),
    }


class AgentsParams(BaseModel):
    """Teams available to evaluation, GRPO and ``corecode solve``, and how each role samples."""

    model_config = ConfigDict(extra="forbid")

    default_team: str = Field("planner_coder_grpo", description="Team used when a command is not given --team.")
    sampling: dict[str, RoleSampling] = Field(
        default_factory=_default_sampling, description="Role name -> sampling; roles not listed use RoleSampling()."
    )
    teams: dict[str, TeamSpec] = Field(default_factory=_default_teams, description="Team name -> TeamSpec.")

    @model_validator(mode="after")
    def _check_refs(self) -> AgentsParams:
        if self.default_team not in self.teams:
            raise ValueError(f"default_team {self.default_team!r} is not in agents.teams ({sorted(self.teams)})")
        for name, spec in self.teams.items():
            if spec.type == "debugging":
                inner = spec.parsed_options().inner
                if inner not in self.teams:
                    raise ValueError(f"teams.{name}.options.inner: no team named {inner!r}")
                if inner == name or self.teams[inner].type == "debugging":
                    raise ValueError(f"teams.{name}.options.inner: {inner!r} must be a non-debugging team")
        return self

    def sampling_for(self, role: str) -> RoleSampling:
        """A role's sampling; ``repair_*``-style roles fall back to their base name, unknown roles to defaults."""
        return self.sampling.get(role) or self.sampling.get(role.split("_")[0]) or RoleSampling()
