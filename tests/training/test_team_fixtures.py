"""Shared builders for the team-GRPO tests (imported by test_team*.py / test_resume*.py; holds no tests itself).

Tiny composite-like problems and two tiny Qwen2 role models, SFT'd for a few seconds with plain torch on the gold
plans/code so that sampling at temperature 1 gives a *mix* of right and wrong programs (groups with reward variance,
which GRPO needs to move the weights).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from corecode.agents.prompts import (
    coder_prompt,
    format_code,
    format_plan,
    helper_prompt,
    main_prompt,
    planner_prompt,
)
from corecode.data.schema import Problem, TestCase
from corecode.models.config import LoraParams
from corecode.training.grpo_config import MAGRPOParams, TeamGRPOParams

# Test-sized GRPO settings: the config defaults are the embedded default's 200-step recipe (ptx on, Planner frozen);
# these tests train tiny models for a step or two, both roles, without ptx unless a test asks for it.
TINY_TWO_ROLE = dict(
    ptx_coef=0.0,
    problems_per_step=2,
    temperature=1.0,
    generation_batch_size=16,
    max_steps=4,
    learning_rate=1e-4,
    save_steps=2,
    eval_steps=2,
    eval_problems=8,
)
TINY_TEAM = dict(TINY_TWO_ROLE, num_plans=2, num_programs=2, frozen_roles=[])


def _lora(r: int | None) -> dict:
    return (
        {}
        if r is None
        else {
            "lora": LoraParams(
                enabled=True,
                r=r,
                alpha=16,
                dropout=0.0,
                target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            )
        }
    )


def team_params(lora_r: int | None = None, **kw) -> TeamGRPOParams:
    """Team GRPO settings for tests: TINY_TEAM, then ``kw``; ``lora_r`` turns on a LoRA adapter of that rank."""
    return TeamGRPOParams(**{**TINY_TEAM, **_lora(lora_r), **kw})


def one_step_params(tmp_path: Path, **kw) -> TeamGRPOParams:
    """One update on tiny groups (2 problems x 2 plans x 3 programs) at a high rate and temperature, logged and
    checkpointed under ``tmp_path``: what the single-step trainer tests run."""
    base = dict(
        problems_per_step=2,
        num_plans=2,
        num_programs=3,
        max_plan_tokens=40,
        max_code_tokens=48,
        max_steps=1,
        eval_steps=0,
        eval_problems=4,
        learning_rate=1e-3,
        temperature=1.2,
        checkpoint_dir=str(tmp_path / "ckpt"),
        log_path=str(tmp_path / "log.json"),
    )
    return team_params(**{**base, **kw})


def magrpo_params(lora_r: int | None = None, **kw) -> MAGRPOParams:
    """MAGRPO settings for tests: TINY_TWO_ROLE, then ``kw``."""
    return MAGRPOParams(**{**TINY_TWO_ROLE, **_lora(lora_r), **kw})


def _fn(task, name, doc, plan, body, tests):
    prompt = f'def {name}(xs):\n    """{doc}"""\n'
    return Problem(
        task_id=f"tiny/{task}",
        source="tiny",
        split="train",
        prompt=prompt,
        entry_point=name,
        tests=[TestCase(input=i, output=o) for i, o in tests],
        reference_solution=f"def {name}(xs):\n    {body}\n",
        plan=plan,
    )


PROBLEMS = [
    _fn(
        0,
        "add_one",
        "Add 1 to each number.",
        "1. Loop over xs.\n2. Add 1 to each number.\n3. Return the list.",
        "return [x + 1 for x in xs]",
        [("[[1, 2]]", "[2, 3]"), ("[[]]", "[]"), ("[[5]]", "[6]")],
    ),
    _fn(
        1,
        "double_all",
        "Double each number.",
        "1. Loop over xs.\n2. Double each number.\n3. Return the list.",
        "return [x * 2 for x in xs]",
        [("[[1, 2]]", "[2, 4]"), ("[[]]", "[]"), ("[[0, 3]]", "[0, 6]")],
    ),
    _fn(
        2,
        "keep_even",
        "Keep the even numbers.",
        "1. Loop over xs.\n2. Keep even numbers.\n3. Return the list.",
        "return [x for x in xs if x % 2 == 0]",
        [("[[1, 2, 4]]", "[2, 4]"), ("[[3]]", "[]")],
    ),
    _fn(
        3,
        "sum_all",
        "Sum the numbers.",
        "1. Start at 0.\n2. Add each number.\n3. Return the total.",
        "return sum(xs)",
        [("[[1, 2]]", "3"), ("[[]]", "0"), ("[[4, 4]]", "8")],
    ),
]


# MAGRPO gold pairs: (helper, main) per problem.
PAIRS = {
    "tiny/0": ("def step(x):\n    return x + 1", "def add_one(xs):\n    return [step(x) for x in xs]"),
    "tiny/1": ("def step(x):\n    return x * 2", "def double_all(xs):\n    return [step(x) for x in xs]"),
    "tiny/2": ("def keep(x):\n    return x % 2 == 0", "def keep_even(xs):\n    return [x for x in xs if keep(x)]"),
    "tiny/3": (
        "def add(a, b):\n    return a + b",
        "def sum_all(xs):\n    t = 0\n    for x in xs:\n        t = add(t, x)\n    return t",
    ),
}


def gold_code(p: Problem) -> str:
    return p.reference_solution.strip()


def sft_texts():
    """(prompt, completion) pairs per role in the project's formats."""
    planner = [(planner_prompt(p), format_plan(p.plan)) for p in PROBLEMS]
    coder = [(coder_prompt(p, p.plan), format_code(gold_code(p))) for p in PROBLEMS]
    coder += [(coder_prompt(p, None), format_code(gold_code(p))) for p in PROBLEMS]
    return planner, coder


def magrpo_texts():
    helper = [(helper_prompt(p), format_code(PAIRS[p.task_id][0])) for p in PROBLEMS]
    main = [(main_prompt(p, PAIRS[p.task_id][0]), format_code(PAIRS[p.task_id][1])) for p in PROBLEMS]
    return helper, main


def tiny_tokenizer():
    from corecode.models.tokenizer import train_bpe_tokenizer

    planner, coder = sft_texts()
    helper, main = magrpo_texts()
    return train_bpe_tokenizer([a + b for a, b in planner + coder + helper + main] * 4, vocab_size=400, min_frequency=1)


def quick_sft(pairs, tok, steps: int, seed: int) -> Qwen2ForCausalLM:
    """Completion-only next-token training on ``pairs``; a few seconds on CPU."""
    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
    )
    model = Qwen2ForCausalLM(cfg)
    rows = []
    for prompt, completion in pairs:
        p_ids = tok(prompt)["input_ids"]
        c_ids = tok(completion)["input_ids"] + [tok.eos_token_id]
        rows.append((p_ids + c_ids, [-100] * len(p_ids) + c_ids))
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [tok.pad_token_id] * (width - len(r[0])) for r in rows])
    labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows])
    attn = (torch.arange(width)[None, :] < torch.tensor([len(r[0]) for r in rows])[:, None]).long()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    return model.eval()


def build_shared_base(root: Path, steps: int = 120) -> Path:
    """One model SFT'd on both the planner and the coder rows (the base of a shared-base LoRA team)."""
    tok = tiny_tokenizer()
    planner, coder = sft_texts()
    d = root / "sft_team"
    quick_sft(planner + coder, tok, steps, 3).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def build_team(root: Path, steps: int = 60, magrpo: bool = False) -> tuple[Path, Path]:
    """Write sft_planner / sft_coder (or sft_helper / sft_main) checkpoints (save_pretrained + tokenizer)."""
    tok = tiny_tokenizer()
    first, second = magrpo_texts() if magrpo else sft_texts()
    names = ("sft_helper", "sft_main") if magrpo else ("sft_planner", "sft_coder")
    out = []
    for name, pairs, seed in ((names[0], first, 1), (names[1], second, 2)):
        d = root / name
        quick_sft(pairs, tok, steps, seed).save_pretrained(d)
        tok.save_pretrained(d)
        out.append(d)
    return out[0], out[1]


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def launch_two_ranks(script: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """``script`` in two processes on this host: torchrun (what accelerate launch runs) starts them, and
    ``ACCELERATE_USE_CPU`` makes accelerate join them over gloo (MULTI_CPU), as ``--cpu`` does for one process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", ACCELERATE_USE_CPU="true", PYTHONPATH=str(Path(__file__).parents[2]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def two_rank_results(root: Path, script_text: str) -> list[dict]:
    """``script_text`` run on two ranks (:func:`launch_two_ranks`, ``root`` as its argument), each rank saving a dict
    to ``root/rank{R}.pt``: the two dicts."""
    script = root / "ranks.py"
    script.write_text(script_text)
    out = launch_two_ranks(script, str(root), timeout=120)
    assert out.returncode == 0, out.stderr[-4000:]
    return [torch.load(root / f"rank{r}.pt") for r in (0, 1)]


def same_gradients(a: dict, b: dict) -> bool:
    """Two {name: gradient} dicts with the same names and every gradient present and equal up to float rounding."""
    return a.keys() == b.keys() and all(
        x is not None and y is not None and torch.allclose(x, y, rtol=1e-5, atol=1e-7)
        for x, y in zip(a.values(), b.values())
    )
