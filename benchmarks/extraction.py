"""Measure extraction robustness, extraction speed and visible-test coverage on HumanEval (docs/benchmarks.md).

``python benchmarks/extraction.py [--workers 2]``. Every HumanEval canonical solution is rendered in the answer styles
seen from small and prompted models, extracted, built into a program and judged by the real sandbox against the
problem's hidden ``check``; a naive extractor (first ```python fence or the raw text, prompt + text when it lacks the
``def``) is the baseline. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from corecode.agents.debugging import DebuggingTeam, visible_tests
from corecode.agents.extract import build_program, extract_code, extract_plan
from corecode.data.loaders.humaneval import load_humaneval
from corecode.data.schema import Problem


def styles(p: Problem) -> dict[str, str]:
    """The canonical solution as different model answers."""
    full, body = p.reference_solution, p.reference_solution[len(p.prompt) :]
    sig_and_body = full[full.index(f"def {p.entry_point}") :]  # the function without the prompt's imports/helpers
    return {
        "fenced": f"```python\n{full}\n```",
        "fenced_prose": f"Here is the solution:\n```python\n{full}\n```\nIt works because of the loop.",
        "body_only": body,
        "function_only": f"```python\n{sig_and_body}\n```",  # HumanEval helpers/imports must come from the prompt
        "unfenced_prose": f"Sure! Here is my code.\n{sig_and_body}\nThis solves it.",
        "truncated_fence": f"```python\n{full}\n",
        "with_tests": f"```python\n{full}\n\nprint({p.entry_point}())\nassert False\n```",
        "two_blocks": f"Usage:\n```python\nresult = {p.entry_point}(...)\n```\nCode:\n```python\n{full}\n```",
    }


def naive_program(p: Problem, text: str) -> str:
    m = re.search(r"```python\n(.*?)(?:```|\Z)", text, re.S)
    code = m.group(1) if m else text
    return code if re.search(rf"def\s+{p.entry_point}\s*\(", code) else p.prompt + code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from corecode.sandbox import Sandbox
    from corecode.sandbox.config import SandboxParams

    problems = load_humaneval()
    rendered = {p.task_id: styles(p) for p in problems}
    names = list(next(iter(rendered.values())))
    t0 = time.perf_counter()
    ours = {
        name: [build_program(p, extract_code(rendered[p.task_id][name], p).value) for p in problems] for name in names
    }
    n_extract = len(problems) * len(names)
    extract_s = time.perf_counter() - t0
    plans = [f"Sure.\n<plan>\nStep {i}: do it\n{i}) again" for i in range(1000)]
    t0 = time.perf_counter()
    for text in plans:
        extract_plan(text)
    plan_s = time.perf_counter() - t0
    naive = {name: [naive_program(p, rendered[p.task_id][name]) for p in problems] for name in names}
    result: dict = {"problems": len(problems), "styles": {}}
    with Sandbox(SandboxParams(workers=args.workers)) as box:
        box.prepare_all(problems)
        t0 = time.perf_counter()
        for name in names:
            mine = box.run_batch(list(zip(problems, ours[name])))
            base = box.run_batch(list(zip(problems, naive[name])))
            result["styles"][name] = {
                "ours_pass": sum(r.passed for r in mine),
                "naive_pass": sum(r.passed for r in base),
            }
        judge_s = time.perf_counter() - t0
        vis = [visible_tests(p, 3) for p in problems]
        with_vis = [(DebuggingTeam.visible_problem(p, t), p.reference_solution) for p, t in zip(problems, vis) if t]
        vprobs = [vp for vp, _ in with_vis]
        t0 = time.perf_counter()
        vres = box.run_batch(with_vis, stop_on_first_failure=True, reveal_expected=True)
        visible_s = time.perf_counter() - t0
    result.update(
        extract_code_per_s=round(n_extract / extract_s),
        extract_plan_per_s=round(len(plans) / plan_s),
        judge_programs_per_s=round(2 * n_extract / judge_s, 1),
        visible_tests={
            "problems_with_visible_tests": len(vprobs),
            "tests": sum(len(t) for t in vis),
            "canonical_passes_visible": sum(r.passed for r in vres),
            "visible_check_s_per_program": round(visible_s / max(1, len(vprobs)), 4),
        },
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
