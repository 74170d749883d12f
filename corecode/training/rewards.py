"""Sandbox-scored rewards for the Coder, the Planner and MAGRPO's helper/main pair.

Shaping (MAGRPO-style): a program earns partial credit for parsing, for running, per passed test, and a bonus for
passing everything; optional efficiency terms compare the run against the trusted reference solution's run (CPU time,
peak memory). The Planner earns the mean reward of the programs its plan led to (credit flows through the partner),
plus a plan-format term, an optional guidance term (PTA-GRPO spirit) and CoRe-Code's optional time term.

``SandboxCodeReward`` is a plain TRL reward function (``f(prompts, completions, **columns) -> list[float]``) so the
single-agent ``GRPOTrainer`` baseline can pass it as ``reward_funcs``; the team trainer uses the lower-level pieces.
Everything model-written runs only inside ``corecode.sandbox``.
"""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Iterable, Sequence

from corecode import pysource
from corecode.agents.extract import build_program, extract_code, extract_plan
from corecode.agents.prompts import PLAN_CLOSE
from corecode.data.schema import Problem
from corecode.sandbox.types import SampleResult, Verdict, comparable_memory_mb
from corecode.training.rewards_config import CoderRewardWeights, MAGRPORewardWeights, PlannerRewardWeights

_STEP = re.compile(r"^\s*(\d+)[.)]\s+\S", re.M)


def plan_format_ok(text: str) -> float:
    """1.0 when the completion is a plan in the project format: tags present and at least one numbered step."""
    ex = extract_plan(text)
    return float(ex.ok and PLAN_CLOSE in text and bool(_STEP.search(ex.value or "")))


def parses(code: str) -> bool:
    try:
        pysource.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def completion_text(completion) -> str:
    """TRL passes strings (standard format) or message lists (conversational); take the assistant text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return str(completion)


# ---------------------------------------------------------------------------------------------------------------------
# Scores of one program


_CRASHED = {
    Verdict.runtime_error,
    Verdict.timeout,
    Verdict.memory_exceeded,
    Verdict.syntax_error,
    Verdict.sandbox_error,
}


_STEP_NUMBER = re.compile(r"^\s*\d+[.)]\s*", re.M)
_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_INTEGER = re.compile(r"(?<![\w.])-?\d+(?![\w.]*\d)")


def plan_constants(plan: str | None) -> set[tuple[str, object]]:
    """The literal constants a plan asks for: quoted strings and integers, step numbers excluded."""
    text = _STEP_NUMBER.sub("", plan or "")
    out: set[tuple[str, object]] = set()
    for single, double in _QUOTED.findall(text):
        out.add(("str", single or double))
    for m in _INTEGER.findall(_QUOTED.sub(" ", text)):
        out.add(("int", int(m)))
    return out


def code_constants(code: str | None) -> set[tuple[str, object]] | None:
    """String and integer literals of a program (``-1`` counts as -1; docstrings do not count); None if it does
    not parse."""
    try:
        tree = pysource.parse(code or "")
    except (SyntaxError, ValueError):
        return None
    skip = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    skip |= {id(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)}
    out: set[tuple[str, object]] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and id(n) not in skip:
            if isinstance(n.value, str):
                out.add(("str", n.value))
            elif isinstance(n.value, int) and not isinstance(n.value, bool):
                out.add(("int", n.value))
        elif (
            isinstance(n, ast.UnaryOp)
            and isinstance(n.op, ast.USub)
            and isinstance(n.operand, ast.Constant)
            and isinstance(n.operand.value, int)
            and not isinstance(n.operand.value, bool)
        ):
            out.add(("int", -n.operand.value))
    return out


def plan_adherence(plan: str | None, code: str | None) -> float:
    """Fraction of the plan's constants that the program uses as literals (1.0 for a plan without constants, 0.0
    for code that does not parse).

    Why: the SFT team's commonest failure is a Coder that writes the plan's steps with the wrong constants
    (``modulo 3`` -> ``% 4``, ``split on '-'`` -> ``split(',')``). Test credit only sees that when it breaks a test;
    this term credits following the partner's plan directly. No library scores this.
    """
    wanted = plan_constants(plan)
    have = code_constants(code)
    if have is None:
        return 0.0
    if not wanted:
        return 1.0
    return len(wanted & have) / len(wanted)


def _ratio(ref: float | None, got: float) -> float:
    if not ref or ref <= 0 or got <= 0:
        return 0.0
    return min(1.0, ref / got)


def coder_reward(
    result: SampleResult | None,
    weights: CoderRewardWeights,
    reference: SampleResult | None = None,
    adherence: float = 0.0,
) -> float:
    """Shaped reward of one program; ``result`` None means no code could be extracted (reward 0).
    ``adherence`` is ``plan_adherence`` of the program to the plan it was written from (team GRPO)."""
    if result is None:
        return 0.0
    reward = weights.plan_adherence * adherence
    if result.verdict != Verdict.syntax_error:
        reward += weights.syntax
        # "runs": some test ran to completion (a wrong answer still ran); crashes on every test do not count.
        if result.verdict not in _CRASHED or result.pass_fraction > 0:
            reward += weights.runs
    reward += weights.tests * result.pass_fraction
    if result.passed:
        reward += weights.passed
        if reference is not None:
            reward += weights.time * _ratio(reference.cpu_time_s, result.cpu_time_s)
            reward += weights.memory * _ratio(
                comparable_memory_mb(reference.peak_memory_mb), comparable_memory_mb(result.peak_memory_mb)
            )
    return reward


def planner_reward(
    plan_text: str,
    program_rewards: Sequence[float],
    program_results: Sequence[SampleResult | None],
    weights: PlannerRewardWeights,
    reference: SampleResult | None = None,
    reference_logprob: float | None = None,
) -> float:
    """Reward of one plan from its G_c programs' rewards/results (credit through the partner); ``reference_logprob``
    is the Coder's mean per-token log-probability of the reference program given the plan (``coder_likelihood``)."""
    n = max(1, len(program_rewards))
    reward = weights.coder * sum(program_rewards) / n + weights.plan_format * plan_format_ok(plan_text)
    passed = [res for res in program_results if res is not None and res.passed]
    reward += weights.guidance * len(passed) / n
    if reference is not None and passed:
        reward += weights.time * sum(_ratio(reference.cpu_time_s, p.cpu_time_s) for p in passed) / n
    if reference_logprob is not None:
        reward += weights.coder_likelihood * reference_logprob
    return reward


def _defined_functions(code: str | None) -> dict[str, ast.AST] | None:
    """Top-level functions of ``code`` by name, or None when it does not parse."""
    try:
        tree = pysource.parse(code or "")
    except (SyntaxError, ValueError):
        return None
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def magrpo_reward(
    problem: Problem,
    helper_code: str | None,
    main_code: str | None,
    result: SampleResult | None,
    weights: MAGRPORewardWeights,
) -> float:
    """MAGRPO's tiered shared reward for a (helper, main) pair; tiers gate each other as in the paper.

    helper defined: the helper's code parses and defines a function other than the entry point; main defined: the
    main's code parses and defines the entry point; then the joint program parses, earns per-test credit, and a
    bonus when the entry point calls one of the helper's functions.
    """
    entry = problem.entry_point or ""
    helpers = {k: v for k, v in (_defined_functions(helper_code) or {}).items() if k != entry}
    mains = _defined_functions(main_code) or {}
    helper_ok, main_ok = bool(helpers), entry in mains
    reward = weights.helper_defined * helper_ok + weights.main_defined * main_ok
    if not (helper_ok and main_ok) or not parses(f"{helper_code}\n\n{main_code}"):
        return reward
    reward += weights.parses
    if result is not None:
        reward += weights.tests * result.pass_fraction
    calls = {n.func.id for n in ast.walk(mains[entry]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    reward += weights.uses_helper * bool(calls & helpers.keys())
    return reward


# ---------------------------------------------------------------------------------------------------------------------
# Sandbox scoring


def program_for(problem: Problem, completion: str) -> str | None:
    """The whole program the sandbox runs for a Coder completion, or None when no code is extractable."""
    ex = extract_code(completion, problem)
    if not ex.ok:
        return None
    return build_program(problem, ex.value)


async def ascore_programs(sandbox, items: Sequence[tuple[Problem, str | None]]) -> list[SampleResult | None]:
    """Score (problem, program) pairs through the sandbox's async batch API; None programs score None."""
    todo = [(i, p, prog) for i, (p, prog) in enumerate(items) if prog is not None]
    out: list[SampleResult | None] = [None] * len(items)
    if todo:
        results = await sandbox.arun_batch([(p, prog) for _, p, prog in todo])
        for (i, _, _), res in zip(todo, results, strict=True):
            out[i] = res
    return out


class ReferenceCache:
    """Sandbox runs of the trusted reference solutions (for efficiency terms), one per task, computed lazily."""

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self._cache: dict[str, SampleResult | None] = {}

    async def aget(self, problems: Iterable[Problem]) -> dict[str, SampleResult | None]:
        missing = {p.task_id: p for p in problems if p.task_id not in self._cache}
        if missing:
            items = [(p, p.reference_solution) for p in missing.values()]
            for p, res in zip(missing.values(), await ascore_programs(self.sandbox, items), strict=True):
                self._cache[p.task_id] = res
        return self._cache


class SandboxCodeReward:
    """TRL reward function: Coder completions scored by the sandbox with the shaped reward.

    Needs a ``task_id`` column in the training dataset; ``problems`` maps it to the ``Problem``.
    ``plan_format_weight`` > 0 adds the plan-format term for plan-then-code completions (PTA-GRPO style).
    """

    def __init__(
        self,
        problems: dict[str, Problem] | Sequence[Problem],
        sandbox,
        weights: CoderRewardWeights | None = None,
        plan_format_weight: float = 0.0,
    ):
        self.problems = problems if isinstance(problems, dict) else {p.task_id: p for p in problems}
        self.sandbox = sandbox
        self.weights = weights or CoderRewardWeights()
        self.plan_format_weight = plan_format_weight
        self.references = ReferenceCache(sandbox)
        self.__name__ = "sandbox_code_reward"  # TRL logs rewards under the function's name

    async def ascore(self, completions: Sequence, task_id: Sequence[str]) -> list[float]:
        try:
            probs = [self.problems[t] for t in task_id]
        except KeyError as e:
            raise KeyError(f"reward: task_id {e.args[0]!r} is not among the {len(self.problems)} known problems") from e
        texts = [completion_text(c) for c in completions]
        results = await ascore_programs(self.sandbox, [(p, program_for(p, t)) for p, t in zip(probs, texts)])
        refs = {}
        if self.weights.time or self.weights.memory:
            refs = await self.references.aget(probs)
        out = []
        for p, t, res in zip(probs, texts, results, strict=True):
            r = coder_reward(res, self.weights, refs.get(p.task_id))
            if self.plan_format_weight:
                r += self.plan_format_weight * plan_format_ok(t)
            out.append(r)
        return out

    def __call__(self, prompts=None, completions=(), task_id=(), **columns) -> list[float]:
        if not task_id:
            raise ValueError("SandboxCodeReward needs a 'task_id' column in the dataset")
        return asyncio.run(self.ascore(list(completions), list(task_id)))
