"""Teacher plans for sources without gold plans (MBPP, APPS, ...), kept only when they demonstrably help.

For each problem with tests, a teacher model (any ``Generator``: an OpenAI-compatible HTTP endpoint through
``corecode.generation.openai_http`` — which rate-limits and retries with backoff — or a local HF model) is shown the
problem, *and* its reference solution where it has one, and asked for ``n`` candidate plans in the project's plan
format. Each candidate goes to a Coder (``coder_prompt(problem, plan)``); the candidate is accepted only if the
Coder's program passes the tests in ``corecode.sandbox.Sandbox`` (rejection sampling). The first accepted plan is kept,
with the program that passed (the reference solution of a problem that had none, e.g. Codeforces); the pass rate over
candidates is recorded. Teacher and Coder completions are cached on disk (JSONL keyed by model and
prompt), so a rerun makes no teacher call for problems already seen; a local teacher is loaded lazily
(``teacher_generator``), so a rerun served entirely from the cache does not even load the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corecode.agents.prompts import coder_prompt
from corecode.data.schema import Problem, judgeable
from corecode.generation.base import Completion, Generator, SamplingParams

if TYPE_CHECKING:
    from corecode.data.config import TeacherParams

TEACHER_INSTRUCTION = (
    "You write short plans for programming problems. Read the problem and its reference solution, then write a plan "
    "a programmer could follow without seeing the solution: numbered steps, one line each, about one line of code "
    "per step, inside <plan> and </plan>. Do not write code.\n"
)


TEACHER_INSTRUCTION_NO_REFERENCE = (
    "You write short plans for programming problems. Read the problem, then write a plan a programmer could follow: "
    "numbered steps, one line each, about one line of code per step, inside <plan> and </plan>. Do not write code.\n"
)


def teacher_prompt(p: Problem) -> str:
    if not p.reference_solution:
        return f"{TEACHER_INSTRUCTION_NO_REFERENCE}\n### Problem\n{p.prompt.rstrip()}\n### Plan\n"
    return (
        f"{TEACHER_INSTRUCTION}\n### Problem\n{p.prompt.rstrip()}\n### Reference solution\n"
        f"```python\n{p.reference_solution.strip()}\n```\n### Plan\n"
    )


class CompletionCache:
    """Completions by (model, prompt, sampling) in an append-only JSONL file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.data: dict[str, list[str]] = {}
        if self.path.exists():
            for lineno, line in enumerate(self.path.read_text().splitlines(), 1):
                if line.strip():
                    try:
                        row = json.loads(line)
                        self.data[row["key"]] = row["texts"]
                    except (json.JSONDecodeError, KeyError) as e:
                        raise ValueError(f"{self.path}:{lineno}: bad cache line: {e}") from e

    @staticmethod
    def key(model: str, prompt: str, params: SamplingParams) -> str:
        raw = json.dumps(
            [model, prompt, params.n, params.temperature, params.top_p, params.max_new_tokens, params.seed]
        )
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, key: str) -> list[str] | None:
        return self.data.get(key)

    def put(self, key: str, texts: list[str]) -> None:
        self.data[key] = texts
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"key": key, "texts": texts}) + "\n")


def cached_generate(
    gen: Generator, model: str, prompts: list[str], params: SamplingParams, cache: CompletionCache
) -> list[list[str]]:
    """``gen.generate`` for the prompts the cache lacks, each distinct prompt once (two candidates with the same plan
    make the same Coder prompt); cached texts for the rest (order kept)."""
    keys = [cache.key(model, p, params) for p in prompts]
    missing: dict[str, str] = {}
    for k, p in zip(keys, prompts):
        if cache.get(k) is None:
            missing.setdefault(k, p)
    if missing:
        outs = gen.generate(list(missing.values()), params)
        for k, comps in zip(missing, outs):
            cache.put(k, [c.text for c in comps])
    return [cache.get(k) for k in keys]


class LazyGenerator:
    """A ``Generator`` built on its first non-empty ``generate`` call (loading a local HF teacher is the slow part)."""

    def __init__(self, build: Callable[[], Generator]):
        self._build = build
        self.generator: Generator | None = None

    def generate(self, prompts: list[str], params: SamplingParams) -> list[list[Completion]]:
        if not prompts:
            return []
        if self.generator is None:
            self.generator = self._build()
        return self.generator.generate(prompts, params)

    def close(self) -> None:
        close = getattr(self.generator, "close", None)
        if close is not None:
            close()


def teacher_generator(cfg: TeacherParams) -> tuple[Generator, str]:
    """The teacher of ``data.teacher`` (also the Coder that verifies its plans) and its name for the cache key.

    ``backend: openai``: ``cfg.model`` at ``cfg.base_url``. ``backend: transformers``: the local HF checkpoint (path or
    hub id) ``cfg.model``, with its chat template when ``cfg.chat`` and the tokenizer has one, raw completion else.
    """
    import os

    if cfg.backend == "transformers":
        if not cfg.model:
            raise ValueError("data.teacher.model: set the teacher's HF checkpoint path or id (backend: transformers)")

        def build() -> Generator:
            from corecode.generation.hf import TransformersGenerator

            return TransformersGenerator(cfg.model, use_chat_template=None if cfg.chat else False)

        return LazyGenerator(build), cfg.model

    from corecode.generation.openai_http import OpenAIGenerator

    # Built now: the endpoint names the model (the cache key) when ``cfg.model`` is empty; construction is cheap.
    gen = OpenAIGenerator(
        cfg.base_url,
        cfg.model,
        os.environ.get(cfg.api_key_env) or None,
        chat=cfg.chat,
        max_retries=cfg.max_retries,
        requests_per_second=cfg.requests_per_second,
    )
    return gen, gen.model


@dataclass
class TeacherResult:
    task_id: str
    plan: str | None  # the accepted plan body (numbered lines), or None
    n_candidates: int
    n_passed: int
    code: str | None = None  # the Coder's program that passed with the accepted plan

    @property
    def pass_rate(self) -> float:
        return self.n_passed / self.n_candidates if self.n_candidates else 0.0


def annotate_plans(
    problems: list[Problem],
    teacher: Generator,
    coder: Generator,
    sandbox,
    cache: CompletionCache,
    teacher_model: str,
    coder_model: str,
    teacher_sampling: SamplingParams | None = None,
    coder_sampling: SamplingParams | None = None,
) -> list[TeacherResult]:
    """Teacher plans for ``problems`` (those the sandbox can judge, ``schema.judgeable``), verified through Coder +
    sandbox."""
    from corecode.agents.extract import build_program, extract_code, extract_plan

    teacher_sampling = teacher_sampling or SamplingParams(n=4, temperature=0.7, max_new_tokens=256)
    coder_sampling = coder_sampling or SamplingParams(n=1, temperature=0.0, max_new_tokens=512)
    todo = [p for p in problems if judgeable(p)]
    plan_texts = cached_generate(teacher, teacher_model, [teacher_prompt(p) for p in todo], teacher_sampling, cache)
    candidates: list[tuple[int, str]] = []  # (problem index, plan body)
    for i, texts in enumerate(plan_texts):
        for t in texts:
            ex = extract_plan(t)
            if ex.ok:
                candidates.append((i, ex.value))
    code_texts = cached_generate(
        coder, coder_model, [coder_prompt(todo[i], plan) for i, plan in candidates], coder_sampling, cache
    )
    codes = [extract_code(texts[0], todo[i]).value for (i, _), texts in zip(candidates, code_texts)]
    programs = [(todo[i], build_program(todo[i], code)) for (i, _), code in zip(candidates, codes)]
    verdicts = sandbox.run_batch(programs) if programs else []
    results = {i: TeacherResult(p.task_id, None, len(t), 0) for i, (p, t) in enumerate(zip(todo, plan_texts))}
    for (i, plan), code, res in zip(candidates, codes, verdicts):
        if res.passed:
            results[i].n_passed += 1
            if results[i].plan is None:
                results[i].plan, results[i].code = plan, code
    return [results[i] for i in range(len(todo))]
