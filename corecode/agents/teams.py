"""Teams: who says what to whom. Every team answers ``solve(problems, n) -> list[list[Attempt]]``.

A team only builds prompts, calls role :class:`~corecode.generation.base.Generator` s (batched: one ``generate`` call
per role and step, over all problems) and extracts plans/code; it never runs code (the debugging agent does, through
the sandbox). The Planner -> Coder team also exposes its two steps (``plan``, ``code``) because GRPO needs the nested
plans x codes structure to assign rewards to each role.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from corecode.agents import prompts as P
from corecode.agents.extract import build_program, extract_code, extract_helper_code, extract_plan
from corecode.agents.prompts import Extracted
from corecode.data.schema import Problem
from corecode.generation.base import Completion, Generator, SamplingParams


@dataclass
class Attempt:
    """One candidate solution and how it came about (per role: prompt, raw completion, extraction, tokens)."""

    task_id: str
    code: str | None
    program: str
    plan: str | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # role -> why extraction failed
    notes: dict[str, list[str]] = field(default_factory=dict)  # role -> what extraction repaired
    tokens: dict[str, int] = field(default_factory=dict)  # role -> completion tokens
    completions: dict[str, Completion] = field(default_factory=dict, repr=False)  # token ids for GRPO
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())

    def record(self, role: str, prompt: str, completion: Completion, extracted: Extracted | None = None) -> None:
        """Store one role's turn (a role that speaks again, e.g. repair, accumulates tokens)."""
        self.prompts[role] = prompt
        self.raw[role] = completion.text
        self.completions[role] = completion
        self.tokens[role] = self.tokens.get(role, 0) + completion.num_tokens
        if extracted is not None:
            if not extracted.ok:
                self.failures[role] = extracted.reason or "extraction failed"
            if extracted.notes:
                self.notes[role] = list(extracted.notes)


@dataclass
class PlanDraft:
    """One Planner sample for one problem: the prompt, the completion and the extracted plan."""

    task_id: str
    prompt: str
    completion: Completion
    extracted: Extracted
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def plan(self) -> str | None:
        return self.extracted.value

    def for_coder(self, on_failure: str = "raw") -> str | None:
        """What the Coder is shown: the extracted plan; on failure the raw text (``"raw"``) or nothing (``"none"``)."""
        if self.extracted.ok:
            return self.extracted.value
        if on_failure == "raw" and self.completion.text.strip():
            return self.completion.text.strip()
        return None


class Team:
    """Base class: role generators, per-role sampling, and the batched ``_generate`` helper."""

    type: ClassVar[str] = ""
    roles: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        generators: Mapping[str, Generator],
        sampling: Mapping[str, SamplingParams] | None = None,
        name: str | None = None,
    ):
        missing = [r for r in self.roles if r not in generators]
        if missing:
            raise ValueError(f"team {name or self.type!r} ({self.type}): no generator for role(s) {missing}")
        self.generators = dict(generators)
        self.sampling = dict(sampling or {})
        self.name = name or self.type

    def _generate(self, role: str, prompts: list[str], n: int) -> list[list[Completion]]:
        if not prompts:
            return []
        params = replace(self.sampling.get(role, SamplingParams()), n=n)
        out = self.generators[role].generate(prompts, params)
        if len(out) != len(prompts) or any(len(c) != n for c in out):
            shape = [len(c) for c in out]
            raise RuntimeError(f"role {role!r}: generator returned {shape} completions for {len(prompts)}x{n}")
        return out

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        raise NotImplementedError

    def _code_attempt(self, problem: Problem, role: str, prompt: str, completion: Completion, **kw: Any) -> Attempt:
        ex = extract_code(completion.text, problem)
        att = Attempt(task_id=problem.task_id, code=ex.value, program=build_program(problem, ex.value), **kw)
        att.record(role, prompt, completion, ex)
        return att


class SingleTeam(Team):
    """One model, problem -> code (no plan): the single-model baseline."""

    type = "single"
    roles = ("coder",)

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        prompts = [P.coder_prompt(p, None) for p in problems]
        outs = self._generate("coder", prompts, n)
        return [[self._code_attempt(p, "coder", pr, c) for c in cs] for p, pr, cs in zip(problems, prompts, outs)]


def split_thought(text: str) -> tuple[str | None, str]:
    """(reasoning inside ``<think>``...``</think>``, the rest); reasoning is None when the close tag is missing."""
    close = text.find(P.THINK_CLOSE)
    if close < 0:
        return None, text
    thought = text[:close]
    open_ = thought.find(P.THINK_OPEN)
    if open_ >= 0:
        thought = thought[open_ + len(P.THINK_OPEN) :]
    return thought.strip(), text[close + len(P.THINK_CLOSE) :]


class CoTTeam(Team):
    """One model that reasons first (``<think>``), then writes code: the chain-of-thought baseline."""

    type = "single_cot"
    roles = ("coder",)

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        prompts = [P.cot_prompt(p) for p in problems]
        outs = self._generate("coder", prompts, n)
        result = []
        for p, pr, cs in zip(problems, prompts, outs):
            row = []
            for c in cs:
                thought, rest = split_thought(c.text)
                # Code after </think>; with no close tag, search the whole text (code may still be fenced in it).
                ex = extract_code(rest, p)
                if thought is None:
                    ex.notes.append("missing </think>")
                att = Attempt(task_id=p.task_id, code=ex.value, program=build_program(p, ex.value))
                att.meta["reasoning"] = thought
                att.record("coder", pr, c, ex)
                row.append(att)
            result.append(row)
        return result


class PlanThenCodeTeam(Team):
    """One model writes the plan, then the code, in one completion (PTA-GRPO baseline, ``grpo-single
    --plan-then-code``): the prompt is the Planner's, the completion is plan tags, the code cue, fenced code."""

    type = "plan_then_code"
    roles = ("coder",)

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        prompts = [P.planner_prompt(p) for p in problems]
        outs = self._generate("coder", prompts, n)
        result = []
        for p, pr, cs in zip(problems, prompts, outs):
            row = []
            for c in cs:
                plan = extract_plan(c.text)
                close = c.text.lower().find(P.PLAN_CLOSE)
                ex = extract_code(c.text[close + len(P.PLAN_CLOSE) :] if close >= 0 else c.text, p)
                att = Attempt(task_id=p.task_id, code=ex.value, program=build_program(p, ex.value), plan=plan.value)
                att.record("coder", pr, c, ex)
                if not plan.ok:
                    att.failures["plan"] = plan.reason or "no plan"
                if plan.notes:
                    att.notes["plan"] = list(plan.notes)
                row.append(att)
            result.append(row)
        return result


class PlannerCoderTeam(Team):
    """Planner -> Coder. ``n`` attempts = ceil(n / codes_per_plan) plans x codes_per_plan codes, flattened."""

    type = "planner_coder"
    roles = ("planner", "coder")

    def __init__(self, *args: Any, codes_per_plan: int = 1, on_plan_failure: str = "raw", **kw: Any):
        super().__init__(*args, **kw)
        if codes_per_plan < 1:
            raise ValueError(f"team {self.name!r}: codes_per_plan must be >= 1, got {codes_per_plan}")
        self.codes_per_plan = codes_per_plan
        self.on_plan_failure = on_plan_failure

    def planner_prompt(self, problem: Problem) -> tuple[str, dict[str, Any]]:
        """The Planner's prompt and any metadata about how it was built (the retrieval team adds neighbours)."""
        return P.planner_prompt(problem), {}

    def plan(self, problems: Sequence[Problem], n_plans: int) -> list[list[PlanDraft]]:
        """Step 1: ``n_plans`` Planner samples per problem."""
        built = [self.planner_prompt(p) for p in problems]
        outs = self._generate("planner", [b[0] for b in built], n_plans)
        return [
            [PlanDraft(p.task_id, prompt, c, extract_plan(c.text), dict(meta)) for c in cs]
            for p, (prompt, meta), cs in zip(problems, built, outs)
        ]

    def code(
        self, problems: Sequence[Problem], plans: Sequence[Sequence[PlanDraft | str | None]], n_codes: int
    ) -> list[list[list[Attempt]]]:
        """Step 2: ``n_codes`` Coder samples per (problem, plan); returns [problem][plan][code].

        ``plans`` may hold :class:`PlanDraft` s from :meth:`plan` or plain plan strings (e.g. gold plans).
        """
        if len(plans) != len(problems):
            raise ValueError(f"code(): {len(plans)} plan lists for {len(problems)} problems")
        prompts, index = [], []
        for i, (p, ps) in enumerate(zip(problems, plans)):
            for j, d in enumerate(ps):
                text = d.for_coder(self.on_plan_failure) if isinstance(d, PlanDraft) else d
                prompts.append(P.coder_prompt(p, text))
                index.append((i, j))
        outs = self._generate("coder", prompts, n_codes)
        result: list[list[list[Attempt]]] = [[[] for _ in ps] for ps in plans]
        for (i, j), prompt, cs in zip(index, prompts, outs):
            p, d = problems[i], plans[i][j]
            for c in cs:
                att = self._code_attempt(p, "coder", prompt, c)
                if isinstance(d, PlanDraft):
                    att.plan = d.plan
                    att.record("planner", d.prompt, d.completion, d.extracted)
                    att.meta.update(d.meta)
                else:
                    att.plan = d
                att.meta["plan_index"] = j
                result[i][j].append(att)
        return result

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        n_plans = math.ceil(n / self.codes_per_plan)
        nested = self.code(problems, self.plan(problems, n_plans), self.codes_per_plan)
        return [[a for per_plan in per_problem for a in per_plan][:n] for per_problem in nested]


class HelperMainTeam(Team):
    """MAGRPO-style helper/main: a helper writes auxiliary function(s), a main writes the entry point using them.

    With ``main_sees_helper`` (default) the main is prompted with the helper's code; without it both write in parallel
    from the problem alone (the decentralised setting of MAGRPO) and are paired by sample index.
    """

    type = "helper_main"
    roles = ("helper", "main")

    def __init__(self, *args: Any, main_sees_helper: bool = True, **kw: Any):
        super().__init__(*args, **kw)
        self.main_sees_helper = main_sees_helper

    def solve(self, problems: Sequence[Problem], n: int) -> list[list[Attempt]]:
        h_prompts = [P.helper_prompt(p) for p in problems]
        h_outs = self._generate("helper", h_prompts, n)
        h_ex = [[extract_helper_code(c.text) for c in cs] for cs in h_outs]
        if self.main_sees_helper:
            m_prompts = [[P.main_prompt(p, e.value) for e in es] for p, es in zip(problems, h_ex)]
            flat = self._generate("main", [q for qs in m_prompts for q in qs], 1)
            it = iter(flat)
            m_outs = [[next(it)[0] for _ in qs] for qs in m_prompts]
        else:
            shared = [P.main_prompt(p, None) for p in problems]
            m_prompts = [[q] * n for q in shared]
            m_outs = self._generate("main", shared, n)
        result = []
        for i, p in enumerate(problems):
            row = []
            for k in range(n):
                helper, main_c = h_ex[i][k], m_outs[i][k]
                main = extract_code(main_c.text, p)
                code, program = combine_helper_main(p, helper.value, main.value)
                att = Attempt(task_id=p.task_id, code=code, program=program)
                att.meta["helper_code"] = helper.value
                att.record("helper", h_prompts[i], h_outs[i][k], helper)
                att.record("main", m_prompts[i][k], main_c, main)
                row.append(att)
            result.append(row)
        return result


def combine_helper_main(problem: Problem, helper: str | None, main: str | None) -> tuple[str | None, str]:
    """(code, program) from the helper's and the main's code. A body-only main goes under the prompt's signature and
    the helper after it (functions are looked up at call time, so the order does not matter at runtime)."""
    if not main:
        return helper, build_program(problem, helper)
    if not helper:
        return main, build_program(problem, main)
    code = f"{helper.strip()}\n\n\n{main.strip()}"
    program = build_program(problem, code)
    if problem.entry_point and not re.search(rf"\bdef\s+{re.escape(problem.entry_point)}\s*\(", main):
        program = build_program(problem, main).rstrip("\n") + "\n\n\n" + helper.strip() + "\n"
    return code, program
