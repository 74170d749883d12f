"""Who says what to whom: prompts, robust plan/code extraction, and teams (Planner -> Coder and baselines).

Public API (light imports only; models are loaded by ``corecode.agents.factory.model_generator_factory``)::

    extract_plan(text) -> Extracted;  extract_code(text, problem) -> Extracted;  build_program(problem, code) -> str
    build_team(name, params, generators, *, sandbox=None, corpus=None, seed=None) -> Team
    Team.solve(problems, n) -> list[list[Attempt]]
    PlannerCoderTeam.plan(problems, n_plans) / .code(problems, plans, n_codes)   (the GRPO nesting)
"""

from __future__ import annotations

import importlib

# name -> submodule. Resolved lazily (PEP 562) so that `corecode.config`, which imports `corecode.agents.config`,
# does not pull in the teams, the sandbox types and rank_bm25 (and no import cycle through corecode.config).
_EXPORTS = {
    "DebuggingTeam": "debugging",
    "docstring_examples": "debugging",
    "visible_tests": "debugging",
    "build_program": "extract",
    "extract_code": "extract",
    "extract_helper_code": "extract",
    "extract_plan": "extract",
    "build_team": "factory",
    "model_generator_factory": "factory",
    "resolve_role_model": "factory",
    "Extracted": "prompts",
    "ProblemIndex": "retrieval",
    "RetrievalTeam": "retrieval",
    "Attempt": "teams",
    "CoTTeam": "teams",
    "HelperMainTeam": "teams",
    "PlanDraft": "teams",
    "PlannerCoderTeam": "teams",
    "PlanThenCodeTeam": "teams",
    "SingleTeam": "teams",
    "Team": "teams",
    "combine_helper_main": "teams",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"corecode.agents.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'corecode.agents' has no attribute {name!r}")
