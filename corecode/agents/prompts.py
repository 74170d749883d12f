"""Prompt and completion formats shared by data building, SFT, GRPO and inference.

Formats are plain strings so that the same text trains a from-scratch model and prompts a hub model; a chat template,
where a tokenizer has one, is applied by the generation backend, not here. Plans use the project's plan format:
``<plan>`` ... ``</plan>`` around numbered steps (input/output, steps, branches, loops as in the CoRe-Code samples).
"""

from __future__ import annotations

from dataclasses import dataclass

from corecode.data.schema import Problem

PLAN_OPEN, PLAN_CLOSE = "<plan>", "</plan>"
CODE_OPEN, CODE_CLOSE = "```python", "```"


def planner_prompt(problem: Problem) -> str:
    """What the Planner sees: the problem, then the cue to write a plan."""
    return f"### Problem\n{problem.prompt.rstrip()}\n### Plan\n"


def coder_prompt(problem: Problem, plan: str | None) -> str:
    """What the Coder sees: the problem, the plan if there is one, then the cue to write code."""
    plan_part = f"### Plan\n{format_plan(plan)}\n" if plan else ""
    return f"### Problem\n{problem.prompt.rstrip()}\n{plan_part}### Code\n"


def format_plan(plan: str) -> str:
    """The plan body wrapped in plan tags (idempotent)."""
    body = plan.strip()
    if body.startswith(PLAN_OPEN):
        return body
    return f"{PLAN_OPEN}\n{body}\n{PLAN_CLOSE}"


def format_code(code: str) -> str:
    """Code wrapped in a python fence: the Coder's completion format."""
    return f"{CODE_OPEN}\n{code.strip()}\n{CODE_CLOSE}"


@dataclass
class Extracted:
    """A value pulled out of model output, or the reason it could not be (never an exception)."""

    value: str | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None
