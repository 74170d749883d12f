"""Teams from config: ``build_team(name, params, generators)``.

``generators`` is either a mapping role -> Generator (tests, GRPO with live policies) or a callable
``(role, RoleModel) -> Generator`` that loads models (the CLI and evaluation; see :func:`model_generator_factory`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from corecode.agents.config import AgentsParams, RoleModel, TeamSpec
from corecode.agents.debugging import DebuggingTeam, SandboxLike
from corecode.agents.retrieval import ProblemIndex, RetrievalTeam
from corecode.agents.teams import CoTTeam, HelperMainTeam, PlannerCoderTeam, PlanThenCodeTeam, SingleTeam, Team
from corecode.config import Params
from corecode.data.io import read_problems
from corecode.data.schema import Problem
from corecode.generation.base import Generator, SamplingParams

GeneratorSource = Mapping[str, Generator] | Callable[[str, RoleModel], Generator]
_CLASSES: dict[str, type[Team]] = {
    "single": SingleTeam,
    "single_cot": CoTTeam,
    "plan_then_code": PlanThenCodeTeam,
    "planner_coder": PlannerCoderTeam,
    "helper_main": HelperMainTeam,
    "retrieval": RetrievalTeam,
}


def _agents(params: Params | AgentsParams) -> AgentsParams:
    return params.agents if isinstance(params, Params) else params


def sampling_params(agents: AgentsParams, role: str, seed: int | None = None) -> SamplingParams:
    s = agents.sampling_for(role)
    return SamplingParams(
        max_new_tokens=s.max_new_tokens, temperature=s.temperature, top_p=s.top_p, stop=list(s.stop), seed=seed
    )


def _role_generators(
    name: str, spec: TeamSpec, roles: tuple[str, ...], source: GeneratorSource
) -> dict[str, Generator]:
    out = {}
    for role in roles:
        if callable(source) and not isinstance(source, Mapping):
            if role not in spec.roles:
                raise KeyError(f"agents.teams.{name}.roles: no model for role {role!r}")
            out[role] = source(role, spec.roles[role])
        elif role in source:
            out[role] = source[role]
        else:
            raise KeyError(f"team {name!r}: no generator given for role {role!r} (have {sorted(source)})")
    return out


def build_team(
    name: str,
    params: Params | AgentsParams,
    generators: GeneratorSource,
    *,
    sandbox: SandboxLike | None = None,
    corpus: list[Problem] | None = None,
    seed: int | None = None,
) -> Team:
    """The team ``agents.teams[name]`` with its role generators.

    ``sandbox`` is needed by debugging teams (default: a real ``corecode.sandbox.Sandbox`` from ``params.sandbox``);
    ``corpus`` overrides a retrieval team's ``options.corpus`` file.
    """
    agents = _agents(params)
    if name not in agents.teams:
        raise KeyError(f"agents.teams: no team named {name!r} (have {sorted(agents.teams)})")
    spec = agents.teams[name]
    opts = spec.parsed_options()
    if spec.type == "debugging":
        inner = build_team(opts.inner, params, generators, corpus=corpus, seed=seed)
        inner_spec = agents.teams[opts.inner]
        # The repair role: its own model/generator if given, else the inner team's coder (or main) repairs.
        if isinstance(generators, Mapping):
            base = next((r for r in ("repair", "coder", "main") if r in generators), None)
            if base is None:
                raise KeyError(f"team {name!r}: no generator for role 'repair' (nor 'coder'/'main' to fall back on)")
            gens = {"repair": generators[base]}
        else:
            model = spec.roles.get("repair") or inner_spec.roles.get("coder") or inner_spec.roles.get("main")
            if model is None:
                raise KeyError(f"agents.teams.{name}.roles: no model for role 'repair' and inner has no coder/main")
            gens = {"repair": generators("repair", model)}
        if sandbox is None:
            sandbox = default_sandbox(params)
        return DebuggingTeam(
            inner,
            gens,
            {"repair": sampling_params(agents, "repair", seed)},
            name,
            sandbox=sandbox,
            max_rounds=opts.max_rounds,
            visible_k=opts.visible_k,
            feedback_chars=opts.feedback_chars,
        )
    cls = _CLASSES[spec.type]
    gens = _role_generators(name, spec, cls.roles, generators)
    sampling = {r: sampling_params(agents, r, seed) for r in cls.roles}
    kw: dict[str, Any] = dict(opts)
    if spec.type == "retrieval":
        problems = corpus if corpus is not None else read_problems(kw["corpus"])
        kw = {k: v for k, v in kw.items() if k != "corpus"}
        kw["index"] = ProblemIndex(problems)
    return cls(gens, sampling, name, **kw)


def default_sandbox(params: Params | AgentsParams) -> SandboxLike:
    """A real sandbox from ``params.sandbox`` (defaults when only the agents section is given)."""
    from corecode.sandbox import Sandbox
    from corecode.sandbox.config import SandboxParams

    return Sandbox(params.sandbox if isinstance(params, Params) else SandboxParams())


# Where a role looks inside a registered *team* checkpoint (``register_checkpoint({role: dir}, ...)`` logs one
# subdirectory per role); the repair role uses the Coder's weights when the team has no repair model.
_ROLE_SUBDIRS = {"repair": ("repair", "coder", "main")}


def _looks_local(value: str) -> bool:
    """A filesystem path rather than a hub id ("org/name"): absolute, relative-dotted, or 3+ path components."""
    return value.startswith(("/", "./", "../", "~")) or value.count("/") >= 2 or "\\" in value


def resolve_role_model(role_model: RoleModel, role: str | None = None) -> tuple[str, str | None]:
    """(model path or hub id, adapter path or None) for a role.

    ``models:/``/``runs:/`` URIs are downloaded from the MLflow registry by
    ``corecode.tracking.registry.resolve_model_uri``; when the download is a team checkpoint with one subdirectory per
    role, the role's subdirectory is used. Other values pass through unchanged (a hub id is not a local path).
    """
    from corecode.tracking.registry import resolve_model_uri

    def one(uri: str) -> str:
        if not uri.startswith(("models:/", "runs:/")):
            if _looks_local(uri) and not Path(uri).expanduser().exists():
                raise FileNotFoundError(
                    f"{uri}: checkpoint for role {role or '?'!r} not found (train it first, or "
                    "point agents.teams.<team>.roles at an existing path, hub id or models:/ URI)"
                )
            return uri
        path = Path(resolve_model_uri(uri))
        for sub in _ROLE_SUBDIRS.get(role or "", (role,) if role else ()):
            if (path / sub).is_dir():
                return str(path / sub)
        return str(path)

    return one(role_model.model), one(role_model.adapter) if role_model.adapter else None


def model_generator_factory(params: Params) -> Callable[[str, RoleModel], Generator]:
    """A ``(role, RoleModel) -> Generator`` that loads each distinct (model, adapter) once and shares it across roles.

    The backend is ``corecode.generation.make_generator(params.generation, ...)``; a LoRA adapter is applied with
    ``corecode.models.lora.load_role_model`` and the live module handed to the (transformers) backend.
    """
    from corecode.generation import make_generator

    cache: dict[tuple[str, str | None], Generator] = {}

    def make(role: str, role_model: RoleModel) -> Generator:
        model, adapter = resolve_role_model(role_model, role)
        key = (model, adapter)
        if key not in cache:
            if adapter is None:
                cache[key] = make_generator(
                    params.generation, model, dtype=params.model.dtype, device=params.model.device
                )
            else:
                from corecode.models.factory import load_tokenizer
                from corecode.models.lora import load_role_model

                module = load_role_model(model, Path(adapter), dtype=params.model.dtype, device=params.model.device)
                cache[key] = make_generator(params.generation, module, load_tokenizer(model))
        return cache[key]

    return make
