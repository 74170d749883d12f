"""Shared builders for the SFT / single-GRPO tests: composite-like problems, role datasets, a tiny Qwen2 checkpoint.

Imported by test_sft_*.py and test_single_grpo_*.py (pytest puts this directory on sys.path). It holds no tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from corecode.agents.prompts import coder_prompt, format_code, format_plan, planner_prompt
from corecode.data.schema import Problem, TestCase


def _problem(i: int, name: str, doc: str, plan: str, code: str, cases: list[tuple[list, object]]) -> Problem:
    sig = code.splitlines()[0]
    return Problem(
        task_id=f"composite/{i}",
        source="composite",
        split="train",
        prompt=f'{sig}\n    """{doc}"""\n',
        entry_point=name,
        tests=[TestCase(input=repr(a), output=repr(o)) for a, o in cases],
        reference_solution=code,
        plan=plan,
        difficulty=str(plan.count("\n") + 1),
    )


def tiny_problems() -> list[Problem]:
    """Six composite-style problems (filter / map / reduce chains over ints and strings) with gold plans and code."""
    return [
        _problem(
            0,
            "sum_pos",
            "Return the sum of the positive numbers in xs.",
            "1. keep x > 0\n2. return the sum",
            "def sum_pos(xs):\n    ys = [x for x in xs if x > 0]\n    return sum(ys)",
            [([[1, -2, 3]], 4), ([[]], 0), ([[-1, -5]], 0), ([[7]], 7)],
        ),
        _problem(
            1,
            "double_all",
            "Return every number in xs doubled.",
            "1. map x to x * 2\n2. return the list",
            "def double_all(xs):\n    ys = [x * 2 for x in xs]\n    return ys",
            [([[1, 2]], [2, 4]), ([[]], []), ([[-3]], [-6])],
        ),
        _problem(
            2,
            "count_even",
            "Return how many numbers in xs are even.",
            "1. keep x % 2 == 0\n2. return the count",
            "def count_even(xs):\n    ys = [x for x in xs if x % 2 == 0]\n    return len(ys)",
            [([[1, 2, 4]], 2), ([[]], 0), ([[3, 5]], 0)],
        ),
        _problem(
            3,
            "max_sq",
            "Return the largest square of the numbers in xs, or -1 if xs is empty.",
            "1. if xs is empty return -1\n2. map x to x * x\n3. return the max",
            "def max_sq(xs):\n    if not xs:\n        return -1\n    ys = [x * x for x in xs]\n    return max(ys)",
            [([[1, -3]], 9), ([[]], -1), ([[2]], 4)],
        ),
        _problem(
            4,
            "upper_join",
            "Return the words of s upper-cased and joined with '-'.",
            "1. split s into words\n2. map w to w.upper()\n3. join with '-'",
            "def upper_join(s):\n    ws = s.split()\n    ws = [w.upper() for w in ws]\n    return '-'.join(ws)",
            [(["a b"], "A-B"), ([""], ""), (["x"], "X")],
        ),
        _problem(
            5,
            "sorted_dedup",
            "Return the distinct numbers of xs in increasing order.",
            "1. dedupe xs\n2. sort increasing\n3. return the list",
            "def sorted_dedup(xs):\n    ys = set(xs)\n    return sorted(ys)",
            [([[3, 1, 3]], [1, 3]), ([[]], []), ([[2, 2]], [2])],
        ),
    ]


def role_rows(role: str, problems: list[Problem], split: str) -> list[dict]:
    """TRL prompt/completion rows as `corecode build-data` writes them for ``role``."""
    rows = []
    for p in problems:
        if role == "planner":
            prompt, completion = planner_prompt(p), format_plan(p.plan)
        elif role == "coder":
            prompt, completion = coder_prompt(p, p.plan), format_code(p.reference_solution)
        else:
            prompt, completion = coder_prompt(p, None), format_code(p.reference_solution)
        rows.append(
            {
                "prompt": prompt,
                "completion": completion,
                "task_id": p.task_id,
                "source": p.source,
                "split": split,
                "provenance": "gold",
            }
        )
    return rows


def write_role_dataset(path: Path, role: str, problems: list[Problem], n_val: int = 2) -> Path:
    """Write ``role``'s JSONL: all problems as train rows, the first ``n_val`` again as val rows."""
    rows = role_rows(role, problems, "train") + role_rows(role, problems[:n_val], "val")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_problems(path: Path, problems: list[Problem]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(p.model_dump_json() + "\n" for p in problems))
    return path


def make_tiny_checkpoint(path: Path, problems: list[Problem] | None = None, hidden: int = 32) -> Path:
    """A 2-layer Qwen2 (width ``hidden``) and a small BPE tokenizer trained on the problems' texts, saved at
    ``path``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from corecode.models.tokenizer import train_bpe_tokenizer

    problems = problems or tiny_problems()
    roles = ("planner", "coder", "single")
    texts = [r["prompt"] + r["completion"] for role in roles for r in role_rows(role, problems, "train")]
    tok = train_bpe_tokenizer(texts, vocab_size=400, min_frequency=1)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
