"""Single-agent GRPO baselines with TRL's GRPOTrainer: one model, problem -> code, rewarded by the sandbox.

``corecode grpo-single`` starts from ``sft_single`` and trains on ``coder_prompt(problem, None)`` prompts;
``corecode grpo-single --plan-then-code`` (PTA-GRPO style) has the same model write a plan and then the code in one
completion (:func:`pta_prompt`; ``sft --role pta`` teaches the format), with a plan-format term added to the reward.
Rewards come from ``corecode.training.rewards.SandboxCodeReward`` (the MAGRPO-style shaping shared with the team
trainer: syntax ok, runs, per-test credit, all-pass bonus; weights in ``grpo.single.reward``); every completion runs
only inside ``corecode.sandbox``. Every update adds the PPO-ptx term (``grpo.single.ptx_coef`` x the SFT loss of a
batch of ``single.jsonl``, as the team's Coder gets; not with --plan-then-code), which TRL lacks
(:func:`ptx_trainer_class`). On CPU the completions are sampled by corecode's decode loop, the team's sampler, handed
to TRL as its ``rollout_func`` (:func:`lean_rollout`, ``grpo.single.lean_decode``). Everything else — group-relative
advantages, the loss variant (``grpo`` / ``dapo`` / ``dr_grpo``), KL to the start policy, and sampling elsewhere — is
TRL's. Knobs: ``grpo.single`` (SingleGRPOParams).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode.agents.prompts import planner_prompt
from corecode.data.io import read_problems
from corecode.data.schema import Problem
from corecode.training.sft import (
    base_weight_dtype,
    checkpointing_kwarg,
    save_final_model,
    trains_in_bf16,
    warmup_kwarg,
)
from corecode.training.single_grpo_config import SingleGRPOParams


def pta_prompt(problem: Problem) -> str:
    """Plan-then-code prompt: the Planner's cue; the model continues with the plan, then ``### Code`` and the code."""
    return planner_prompt(problem)


def build_dataset(problems: list[Problem], plan_then_code: bool, tokenizer=None, chat: bool | None = None):
    """TRL prompt-only dataset with the ``task_id`` column the sandbox reward needs. With a ``tokenizer`` the prompts
    are rendered as evaluation renders them (``corecode.generation.render.render_prompt``; ``chat``:
    ``generation.use_chat_template``) and TRL tokenizes that text (adding no special tokens for Qwen-family and the
    embedded tokenizers, so the ids are evaluation's)."""
    from datasets import Dataset

    from corecode.agents.prompts import coder_prompt
    from corecode.generation.render import render_prompt

    make = pta_prompt if plan_then_code else (lambda p: coder_prompt(p, None))
    render = (lambda text: text) if tokenizer is None else (lambda text: render_prompt(tokenizer, text, chat))
    return Dataset.from_list([{"prompt": render(make(p)), "task_id": p.task_id} for p in problems])


def build_grpo_config(cfg: SingleGRPOParams, seed: int, work_dir: Path, plan_then_code: bool, report_to: list[str]):
    """TRL ``GRPOConfig`` from ``grpo.single`` (the only place params map onto TRL's knobs)."""
    import torch
    from trl import GRPOConfig

    if cfg.batch_size % cfg.num_generations:
        raise ValueError(
            f"grpo.single.batch_size ({cfg.batch_size}) must be a multiple of grpo.single.num_generations "
            f"({cfg.num_generations}): each step scores whole groups"
        )
    bf16 = trains_in_bf16(cfg.dtype)
    return GRPOConfig(
        output_dir=str(work_dir),
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type,
        **warmup_kwarg(GRPOConfig, cfg.warmup_ratio),
        max_grad_norm=cfg.max_grad_norm,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.pta_max_completion_length if plan_then_code else cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        loss_type=cfg.loss_type,
        beta=cfg.beta,
        epsilon=cfg.epsilon,
        scale_rewards=cfg.scale_rewards,
        logging_steps=cfg.logging_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        save_total_limit=1,
        seed=seed,
        data_seed=seed,
        bf16=bf16,
        **checkpointing_kwarg(GRPOConfig, cfg.gradient_checkpointing),
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
        report_to=report_to,
    )


def load_policy(cfg: SingleGRPOParams, model_path: str | Path, plan_then_code: bool = False):
    """(model, tokenizer) the run starts from, through ``corecode.models.factory``; a source that cannot be loaded or
    a model too big for the GPU stops here, naming the key."""
    from corecode.models.factory import check_source, load_model, load_tokenizer
    from corecode.models.memory import check_fits_gpu, role_bytes

    key = "grpo.single.pta_model" if plan_then_code else "grpo.single.model"
    check_source(model_path, key, hint=f" (run `corecode sft --role {'pta' if plan_then_code else 'single'}` first)")
    weight_dtype = base_weight_dtype(cfg)
    check_fits_gpu(
        role_bytes(model_path, cfg.lora, weight_dtype),
        f"{key} {model_path}",
        "set grpo.single.lora.enabled: true, or apply a smaller profile (`corecode profile list`)",
    )
    tokenizer = load_tokenizer(model_path, key=key)  # pads on the left, as generation needs
    model = load_model(model_path, weight_dtype, attn_implementation=cfg.attn_implementation, key=key)
    return model, tokenizer


def ptx_trainer_class():
    """``trl.GRPOTrainer`` with the PPO-ptx term (``corecode.training.ptx``): every ``compute_loss`` (one per
    optimizer step at ``gradient_accumulation_steps: 1``) adds ``ptx_coef`` x the SFT loss of that step's batch of
    ``ptx_rows``. A class factory so that importing this module does not import TRL."""
    from trl import GRPOTrainer

    from corecode.training.ptx import ptx_batch, ptx_loss

    class PtxGRPOTrainer(GRPOTrainer):
        def __init__(self, *args, ptx_rows=(), ptx_coef=0.0, ptx_batch_size=8, ptx_seed=0, chat=False, **kwargs):
            super().__init__(*args, **kwargs)
            self.ptx_rows, self.ptx_coef, self.ptx_batch_size = list(ptx_rows), ptx_coef, ptx_batch_size
            self.ptx_seed, self.ptx_chat = ptx_seed, chat

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if not (self.ptx_coef and self.ptx_rows):
                return loss
            step = self._step  # micro-steps so far: one per optimizer step at gradient_accumulation_steps 1
            batch = ptx_batch(
                self.ptx_rows, self.ptx_batch_size, self.ptx_seed, "single", step, self.accelerator.process_index
            )
            lm = ptx_loss(model, self.processing_class, batch, self.ptx_chat)
            mode = "train" if model.training else "eval"
            self._metrics[mode]["ptx_loss"].append(float(lm.detach()))
            return loss + self.ptx_coef * lm

    return PtxGRPOTrainer


def lean_rollout(max_new_tokens: int, temperature: float, top_p: float, eos_ids: set[int]):
    """TRL ``rollout_func`` that samples each prompt's completion with ``LeanDecoder``, the loop the team's rollouts
    and evaluation use. Written here because TRL's own path calls ``generate``, which on a CPU spends more time in
    Python per token than in the model (docs/benchmarks.md, "CPU decoding"); TRL's hook lets the sampler be swapped
    and keeps everything after it (rewards, advantages, loss) TRL's. Prompts are tokenized as evaluation tokenizes
    them; a completion keeps its first stop token, as TRL's generate path does. No sampling log-probabilities:
    TRL needs them only for vLLM's importance-sampling correction."""

    def rollout(prompts: list[str], trainer) -> dict:
        from corecode.generation.lean_decode import LeanDecoder
        from corecode.generation.render import tokenize_rendered
        from corecode.training.rollout import completion_ids

        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        ids = tokenize_rendered(tokenizer, prompts)
        enc = tokenizer.pad({"input_ids": ids}, return_tensors="pt", padding=True, padding_side="left")
        enc = enc.to(model.device)
        pad_id = tokenizer.pad_token_id
        rows = LeanDecoder(model).run(
            enc["input_ids"], enc["attention_mask"], max_new_tokens, pad_id, eos_ids, temperature, top_p
        )
        completions = [completion_ids(row, eos_ids, pad_id)[0] for row in rows.tolist()]
        return {"prompt_ids": ids, "completion_ids": completions, "logprobs": None}

    return rollout


@dataclass
class SingleGRPOResult:
    output_dir: Path
    log_path: Path
    global_step: int
    wall_time_s: float
    first_reward_mean: float
    final_reward_mean: float
    history: list[dict[str, Any]] = field(default_factory=list)


def train_grpo_single(
    params,
    *,
    plan_then_code: bool = False,
    model_path: str | Path | None = None,
    problems_path: str | Path | None = None,
    output_dir: str | Path | None = None,
    log_path: str | Path | None = None,
    sandbox=None,
    extra_reward_funcs: list | None = None,
    report_to: list[str] | None = None,
) -> SingleGRPOResult:
    """Run TRL's GRPOTrainer on one model with sandbox rewards and save the result (see the module docstring).

    ``params`` is the whole ``Params`` (``grpo.single``, ``sandbox`` and ``seed`` are read).
    ``sandbox`` is an open ``corecode.sandbox.Sandbox`` to reuse; by default one is opened from ``params.sandbox``.
    ``extra_reward_funcs`` are appended to ``reward_funcs`` (TRL sums them).
    """
    from transformers import set_seed

    from corecode.generation.lean_decode import lean_decode_wanted
    from corecode.generation.render import use_chat
    from corecode.models.lora import trainer_peft_config
    from corecode.sandbox import Sandbox
    from corecode.training.ptx import read_ptx_rows
    from corecode.training.rewards import SandboxCodeReward

    cfg: SingleGRPOParams = params.grpo.single
    seed = params.seed if cfg.seed is None else cfg.seed
    name = "pta_grpo" if plan_then_code else "grpo_single"
    model_path = Path(model_path or (cfg.pta_model if plan_then_code else cfg.model))
    output_dir = Path(output_dir or (cfg.pta_output if plan_then_code else cfg.output))
    log_path = Path(log_path or Path(cfg.log_dir) / f"{name}.json")
    problems = read_problems(problems_path or cfg.train_problems, cfg.max_problems)
    set_seed(seed)
    model, tokenizer = load_policy(cfg, model_path, plan_then_code)
    dataset = build_dataset(problems, plan_then_code, tokenizer, params.generation.use_chat_template)
    stop = _stop_at_evaluation_ids(model, tokenizer)
    work_dir = Path(cfg.work_dir) / name
    args = build_grpo_config(cfg, seed, work_dir, plan_then_code, report_to or [])
    ptx_rows = read_ptx_rows(cfg.ptx_data, "single") if cfg.ptx_coef and not plan_then_code else []

    rollout = None
    if lean_decode_wanted(model, cfg.lean_decode):  # as the team's rollouts decide (corecode.training.rollout)
        rollout = lean_rollout(args.max_completion_length, cfg.temperature, cfg.top_p, stop)

    with contextlib.ExitStack() as stack:
        if sandbox is None:
            sandbox = stack.enter_context(Sandbox(params.sandbox))
        reward = SandboxCodeReward(
            problems,
            sandbox=sandbox,
            weights=cfg.reward,
            plan_format_weight=cfg.plan_format_weight if plan_then_code else 0.0,
        )
        trainer = ptx_trainer_class()(
            model=model,
            reward_funcs=[reward, *(extra_reward_funcs or [])],
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            peft_config=trainer_peft_config(cfg.lora),
            ptx_rows=ptx_rows,
            ptx_coef=cfg.ptx_coef,
            ptx_batch_size=cfg.ptx_batch_size,
            ptx_seed=seed,
            chat=use_chat(tokenizer, params.generation.use_chat_template),
            rollout_func=rollout,
        )
        t0 = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - t0

    save_final_model(trainer.model, tokenizer, cfg, output_dir, work_dir)
    return _write_result(trainer, output_dir, log_path, wall)


def _stop_at_evaluation_ids(model, tokenizer) -> set[int]:
    """Make the model's generation-config EOS ids the ids evaluation stops at, and return them: TRL ends a completion
    at the former, and with a chat template the latter include its end-of-turn token."""
    from corecode.generation.render import stop_token_ids

    stop, eos = stop_token_ids(tokenizer, model.generation_config), model.generation_config.eos_token_id
    if stop != set(eos if isinstance(eos, list) else [eos]):
        model.generation_config.eos_token_id = sorted(stop)
    return stop


def _write_result(trainer, output_dir: Path, log_path: Path, wall: float) -> SingleGRPOResult:
    """Write the trainer's log (one record a step, train and eval rows merged) to ``log_path``; sum the run up."""
    from corecode.training.sft import write_history

    history = write_history(trainer.state.log_history, log_path)
    rewards = [h["reward"] for h in history if "reward" in h]
    return SingleGRPOResult(
        output_dir=output_dir,
        log_path=log_path,
        global_step=trainer.state.global_step,
        wall_time_s=wall,
        first_reward_mean=rewards[0] if rewards else float("nan"),
        final_reward_mean=rewards[-1] if rewards else float("nan"),
        history=history,
    )
