"""Prompt and completion formats shared by data building, SFT, GRPO and inference.

Formats are plain strings so that the same text trains a from-scratch model and prompts a hub model; how a model
reads them (plain text, or one user message of its tokenizer's chat template) is decided in one place for every stage,
``corecode.generation.render``. Plans use the project's plan format:
``<plan>`` ... ``</plan>`` around numbered steps (input/output, steps, branches, loops as in the CoRe-Code samples).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corecode.data.schema import Problem

PLAN_OPEN, PLAN_CLOSE = "<plan>", "</plan>"
CODE_OPEN, CODE_CLOSE = "```python", "```"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


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
    # What was repaired on the way (e.g. "missing </plan>"), recorded even on success for diagnostics.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None


# --- Roles beyond Planner -> Coder. Helper, main and repair complete with ``format_code``; CoT writes its reasoning
# between THINK_OPEN and THINK_CLOSE first (``teams.split_thought`` reads it back). ---


def cot_prompt(problem: Problem) -> str:
    """Single model, chain of thought: reason first (inside think tags), then write the code."""
    return f"### Problem\n{problem.prompt.rstrip()}\n### Reasoning\n"


def helper_prompt(problem: Problem) -> str:
    """MAGRPO-style helper: write auxiliary function(s) for the problem, not the entry point itself."""
    return f"### Problem\n{problem.prompt.rstrip()}\n### Helper functions\n"


def main_prompt(problem: Problem, helper_code: str | None) -> str:
    """MAGRPO-style main: write the entry point, calling the helper's functions when they are shown."""
    helper_part = f"### Helper functions\n{format_code(helper_code)}\n" if helper_code else ""
    return f"### Problem\n{problem.prompt.rstrip()}\n{helper_part}### Main function\n"


def retrieval_planner_prompt(problem: Problem, examples: list[Problem]) -> str:
    """Planner prompt preceded by solved neighbours (problem, plan if known, solution): retrieval-augmented planning.

    The completion format is the Planner's (:func:`format_plan`), so a retrieval Planner trains on the same rows.
    """
    parts = []
    for ex in examples:
        parts.append(f"### Example problem\n{ex.prompt.rstrip()}\n")
        if ex.plan:
            parts.append(f"### Example plan\n{format_plan(ex.plan)}\n")
        if ex.reference_solution:
            parts.append(f"### Example solution\n{format_code(ex.reference_solution)}\n")
    return "".join(parts) + planner_prompt(problem)


def repair_prompt(problem: Problem, code: str, feedback: str, plan: str | None = None) -> str:
    """Debugging agent: the problem, (the plan,) the failing code and the visible-test feedback, then fix it."""
    plan_part = f"### Plan\n{format_plan(plan)}\n" if plan else ""
    return (
        f"### Problem\n{problem.prompt.rstrip()}\n{plan_part}### Code\n{format_code(code)}\n"
        f"### Test feedback\n{feedback.strip()}\n### Fixed code\n"
    )
