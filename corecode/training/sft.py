"""Supervised fine-tuning of one role (Planner, Coder or the single-model baseline) with TRL's SFTTrainer.

``corecode sft --role R`` reads ``data/processed/R.jsonl`` (TRL prompt/completion rows with a ``split`` column written
by ``corecode build-data``), tokenizes each row as evaluation will feed its prompt (``corecode.generation.render``:
the prompt as plain text, or as a user message of the tokenizer's chat template, per ``generation.use_chat_template``;
the completion ending with EOS, or with the template's end-of-turn token), trains on ``split == "train"`` (the loss on
the completion only with ``sft.completion_only_loss``, TRL masking the prompt by the rows' ``completion_mask``),
evaluates the loss on ``split == "val"``, and saves the final model and tokenizer with ``save_pretrained`` to
``data/checkpoints/sft_R/``. Intermediate Trainer checkpoints (if any) go to
``sft.work_dir`` so the DVC output holds only the final model. The per-step log history is written to
``data/reports/train/sft_R.json`` (a list of records, for ``dvc plots`` and ``corecode report``); metrics go to MLflow
through TRL's ``report_to=["mlflow"]`` when tracking is on.

On CPU the run is deterministic from the seed: same params and data twice give bit-identical weights.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corecode import pysource
from corecode.generation.render import use_chat
from corecode.paths import CHECKPOINTS, PROCESSED, REPORTS
from corecode.training.sft_config import ROLES, ResolvedSFT, SFTParams

TRAIN_REPORTS = REPORTS / "train"


class SFTDataError(ValueError):
    """An SFT dataset file is missing or malformed; the message names the file and line."""


@dataclass
class SFTResult:
    """What one SFT run produced."""

    role: str
    output_dir: Path
    log_path: Path
    train_rows: int
    val_rows: int
    global_step: int
    train_loss: float | None
    eval_loss: float | None
    wall_time_s: float
    history: list[dict[str, Any]] = field(default_factory=list)


CODE_CUE = "### Code\n"


def default_paths(role: str) -> tuple[Path, Path, Path]:
    """(dataset, output checkpoint dir, log-history JSON) of ``role`` under ``data/``.

    ``pta`` has no file of its own: its dataset path is the Planner's, and the Coder's sibling file is joined in.
    """
    data = PROCESSED / ("planner.jsonl" if role == "pta" else f"{role}.jsonl")
    return data, CHECKPOINTS / f"sft_{role}", TRAIN_REPORTS / f"sft_{role}.json"


def join_plan_then_code(plan_completion: str, code_completion: str) -> str:
    """One plan-then-code completion: the Planner's completion, the code cue, the Coder's completion.

    The result is exactly what follows ``planner_prompt(p)`` in ``coder_prompt(p, plan)`` + code, so a PTA model sees
    the same text as the team, written by one model.
    """
    return f"{plan_completion.rstrip()}\n{CODE_CUE}{code_completion}"


def read_pta_rows(planner_path: str | Path, coder_path: str | Path) -> dict[str, list[dict[str, str]]]:
    """Plan-then-code rows: planner prompt -> plan + code, joined on (task_id, split) from the two role files."""
    plans, codes = _read_jsonl_rows(planner_path), _read_jsonl_rows(coder_path)
    code_by_key = {(r.get("task_id"), r.get("split", "train")): r for r in codes}
    splits: dict[str, list[dict[str, str]]] = {"train": [], "val": []}
    for r in plans:
        key = (r.get("task_id"), r.get("split", "train"))
        c = code_by_key.get(key)
        if c is None or key[1] not in splits:
            continue
        completion = join_plan_then_code(r["completion"], c["completion"])
        splits[key[1]].append({"prompt": r["prompt"], "completion": completion})
    if not splits["train"]:
        raise SFTDataError(
            f"{planner_path} + {coder_path}: no train rows share a task_id (needed to join plan and code)"
        )
    return splits


def read_sft_rows(path: str | Path) -> dict[str, list[dict[str, str]]]:
    """Read a prompt/completion JSONL file into ``{"train": rows, "val": rows}`` (other splits are ignored)."""
    splits: dict[str, list[dict[str, str]]] = {"train": [], "val": []}
    for row in _read_jsonl_rows(path):
        split = row.get("split", "train")
        if split in splits:
            splits[split].append({"prompt": row["prompt"], "completion": row["completion"]})
    if not splits["train"]:
        raise SFTDataError(f"{path}: no rows with split == 'train'")
    return splits


def _read_jsonl_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a prompt/completion JSONL file, each checked for non-empty ``prompt`` and ``completion`` strings.

    Read by hand rather than with ``datasets.load_dataset("json")`` so that a bad row is reported with its file and line
    number (Arrow's JSON reader only says the file failed to parse).
    """
    from corecode.data.io import iter_jsonl

    rows: list[dict[str, Any]] = []
    try:
        for lineno, row in iter_jsonl(path, "SFT dataset not found (run `corecode build-data` first)"):
            for key in ("prompt", "completion"):
                if not isinstance(row.get(key), str) or not row[key]:
                    raise SFTDataError(f"{path}:{lineno}: key {key!r} missing or not a non-empty string")
            rows.append(row)
    except (FileNotFoundError, ValueError) as e:
        raise e if isinstance(e, SFTDataError) else SFTDataError(str(e)) from None
    return rows


def trains_in_bf16(dtype: str) -> bool:
    """Whether a TRL trainer with ``dtype`` (``sft.dtype``, ``grpo.single.dtype``) trains in bf16 mixed precision:
    ``bfloat16``, or ``auto`` on a CUDA GPU that supports it."""
    import torch

    if dtype != "auto":
        return dtype == "bfloat16"
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def base_weight_dtype(cfg):
    """The dtype a trainer loads its model in (``cfg``: one role's ``sft``, or ``grpo.single``): fp32 master weights
    for a full fine-tune (bf16 is then the Trainer's autocast); with LoRA under bf16 the frozen base in bf16 (peft
    keeps the adapter in fp32), half the memory."""
    import torch

    return torch.bfloat16 if trains_in_bf16(cfg.dtype) and cfg.lora.enabled else torch.float32


def checkpointing_kwarg(args_cls: type, enabled: bool) -> dict[str, bool]:
    """``{"activation_checkpointing": enabled}`` on transformers >= 5.2x, ``{"gradient_checkpointing": ...}`` before.

    transformers renamed the TrainingArguments field during 5.x; pyproject allows any 5.x (the GPU image has 5.17).
    """
    import dataclasses

    names = {f.name for f in dataclasses.fields(args_cls)}
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": enabled}


def warmup_kwarg(args_cls: type, ratio: float) -> dict[str, float]:
    """Warmup as a fraction of the steps: ``warmup_ratio`` where the args class still has it (older transformers 5.x),
    else ``warmup_steps`` (transformers >= 5.2x reads a float < 1 there as a ratio)."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(args_cls)}
    return {"warmup_ratio": ratio} if "warmup_ratio" in names else {"warmup_steps": ratio}


def build_sft_config(cfg: ResolvedSFT, work_dir: Path, has_eval: bool, report_to: list[str]):
    """TRL ``SFTConfig`` from one role's resolved params (the only place params map onto TRL's knobs)."""
    import torch
    from trl import SFTConfig

    bf16 = trains_in_bf16(cfg.dtype)
    return SFTConfig(
        output_dir=str(work_dir),
        max_steps=cfg.max_steps,
        num_train_epochs=cfg.num_train_epochs,
        learning_rate=cfg.learning_rate,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        max_length=cfg.max_length,
        **warmup_kwarg(SFTConfig, cfg.warmup_ratio),
        lr_scheduler_type=cfg.lr_scheduler_type,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        eval_strategy="steps" if has_eval else "no",
        eval_steps=cfg.eval_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        save_total_limit=cfg.save_total_limit,
        seed=cfg.seed,
        data_seed=cfg.seed,
        bf16=bf16,
        **checkpointing_kwarg(SFTConfig, cfg.gradient_checkpointing),
        completion_only_loss=cfg.completion_only_loss,
        packing=False,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
        report_to=report_to,
    )


def _merge_history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trainer log entries merged into one record per step (train loss and eval loss of a step side by side)."""
    by_step: dict[int, dict[str, Any]] = {}
    for entry in log_history:
        step = int(entry.get("step", 0))
        rec = by_step.setdefault(step, {"step": step})
        for k, v in entry.items():
            if k in ("step", "total_flos") or not isinstance(v, (int, float)):
                continue
            rec[k] = float(v)
    return [by_step[s] for s in sorted(by_step)]


def write_history(log_history: list[dict[str, Any]], log_path: Path) -> list[dict[str, Any]]:
    """Write a trainer's log, one record a step (``_merge_history``), to ``log_path`` as JSON; return the records."""
    history = _merge_history(log_history)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(json.dumps(history, indent=1) + "\n")
    return history


def sft_trainer_class(fused_lm_head: bool | None):
    """TRL's ``SFTTrainer`` (fused LM-head loss) or ``LogitsLossSFTTrainer`` (loss from the full logits); None picks
    the fused head on CUDA only (``sft.fused_lm_head``)."""
    import torch

    if fused_lm_head is None:
        fused_lm_head = torch.cuda.is_available()
    if fused_lm_head:
        from trl import SFTTrainer

        return SFTTrainer
    from corecode.training.sft_trainer import LogitsLossSFTTrainer

    return LogitsLossSFTTrainer


def tokenized_rows(rows: list[dict[str, str]], tokenizer, chat: bool):
    """prompt/completion rows as the TRL dataset SFT trains on: ``input_ids`` and ``completion_mask`` per row, from
    ``corecode.generation.render.sft_example`` (the prompt part is the ids generation feeds the model)."""
    from datasets import Dataset

    from corecode.generation.render import completion_end_id, sft_example

    end = completion_end_id(tokenizer, chat)
    return Dataset.from_list([sft_example(tokenizer, r["prompt"], r["completion"], chat, end) for r in rows])


def build_sft_trainer(
    cfg: ResolvedSFT,
    data_path: str | Path,
    base_checkpoint: str | Path,
    report_to: list[str] | None = None,
    chat: bool | None = None,
):
    """Load the base checkpoint and the role's rows and return a ready TRL ``SFTTrainer`` (not yet trained).
    ``chat``: ``generation.use_chat_template`` (None: the chat template when the tokenizer has one)."""
    import torch
    from transformers import set_seed

    from corecode.models.factory import check_source, load_model, load_tokenizer
    from corecode.models.lora import trainer_peft_config
    from corecode.models.memory import check_fits_gpu, role_bytes

    base, key = str(base_checkpoint), "sft.base_checkpoint"
    check_source(base, key, hint=" (run `corecode init-model` first)")
    weight_dtype = base_weight_dtype(cfg)
    check_fits_gpu(
        role_bytes(base, cfg.lora, weight_dtype),
        f"sft --role {cfg.role} on {base}",
        "set sft.lora.enabled: true (the frozen base is then loaded in bf16 on such a GPU), or apply a smaller "
        "profile (`corecode profile list`)",
    )
    if cfg.role == "pta":
        data_path = Path(data_path)
        splits = read_pta_rows(data_path, data_path.with_name("coder.jsonl"))
    else:
        splits = read_sft_rows(data_path)
    val_rows = splits["val"][: cfg.max_eval_rows] if cfg.max_eval_rows else splits["val"]

    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    set_seed(cfg.seed)
    tokenizer = load_tokenizer(base, key=key)
    if tokenizer.eos_token is None:
        raise ValueError(f"{base}: tokenizer has no eos_token; SFT appends EOS to every completion")
    chat = use_chat(tokenizer, chat)
    train_ds = tokenized_rows(splits["train"], tokenizer, chat)
    val_ds = tokenized_rows(val_rows, tokenizer, chat) if val_rows else None
    model = load_model(base, weight_dtype, attn_implementation=cfg.attn_implementation, key=key)
    work_dir = Path(cfg.work_dir) / f"sft_{cfg.role}"
    args = build_sft_config(cfg, work_dir, has_eval=val_ds is not None, report_to=report_to or [])
    return sft_trainer_class(cfg.fused_lm_head)(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=val_ds,
        processing_class=tokenizer,
        peft_config=trainer_peft_config(cfg.lora),
    )


def train_sft(
    role: str,
    params: SFTParams,
    *,
    seed: int = 0,
    data_path: str | Path | None = None,
    base_checkpoint: str | Path | None = None,
    output_dir: str | Path | None = None,
    log_path: str | Path | None = None,
    report_to: list[str] | None = None,
    chat: bool | None = None,
) -> SFTResult:
    """Fine-tune ``role``'s model on its prompt/completion data and save it; see the module docstring.

    ``seed`` is the global seed (``params.yaml: seed``), used unless ``sft.<role>.seed`` overrides it. Paths default
    to the ``data/`` layout (:func:`default_paths`, ``sft.base_checkpoint``).
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    cfg = params.for_role(role, default_seed=seed)
    d_data, d_out, d_log = default_paths(role)
    output_dir = Path(output_dir or d_out)
    log_path = Path(log_path or d_log)
    trainer = build_sft_trainer(cfg, data_path or d_data, base_checkpoint or cfg.base_checkpoint, report_to, chat)
    tokenizer = trainer.processing_class
    work_dir = Path(trainer.args.output_dir)
    n_train = len(trainer.train_dataset)
    n_val = len(trainer.eval_dataset) if trainer.eval_dataset is not None else 0
    t0 = time.perf_counter()
    train_out = trainer.train()
    eval_loss = None
    if trainer.eval_dataset is not None:
        eval_loss = float(trainer.evaluate()["eval_loss"])
    wall = time.perf_counter() - t0

    final = save_final_model(trainer.model, tokenizer, cfg, output_dir, work_dir)

    history = write_history(trainer.state.log_history, log_path)
    summary = {
        "role": role,
        "train_rows": n_train,
        "val_rows": n_val,
        "global_step": trainer.state.global_step,
        "train_loss": float(train_out.training_loss),
        "eval_loss": eval_loss,
        "wall_time_s": round(wall, 2),
        "num_parameters": sum(p.numel() for p in final.parameters()),
        # what the model was trained on, as it reads it: plain text or the chat template, special tokens included
        "chat_template": use_chat(tokenizer, chat),
        "first_train_row": tokenizer.decode(trainer.train_dataset[0]["input_ids"]) if n_train else None,
    }
    log_path.with_name(f"sft_{role}_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return SFTResult(
        role=role,
        output_dir=output_dir,
        log_path=log_path,
        train_rows=n_train,
        val_rows=n_val,
        global_step=trainer.state.global_step,
        train_loss=float(train_out.training_loss),
        eval_loss=eval_loss,
        wall_time_s=wall,
        history=history,
    )


def sample_check(
    role: str,
    checkpoint: str | Path,
    problems: list,
    *,
    sandbox=None,
    max_new_tokens: int = 192,
    chat: bool | None = None,
) -> dict[str, float]:
    """Greedy-sample a freshly SFT'd role on held-out problems and measure what a loss curve cannot show.

    planner: fraction of well-formed plans. coder (gold plan in the prompt), single (no plan) and pta (plan then
    code): fraction whose extracted code parses, and greedy pass rate / mean pass fraction from ``corecode.sandbox``
    (the generated code runs nowhere else). Returns ``{"check_n", "check_parses", "check_pass_rate", ...}``.
    """

    from corecode.agents.extract import build_program, extract_code, extract_plan
    from corecode.agents.prompts import coder_prompt, planner_prompt
    from corecode.generation.base import SamplingParams
    from corecode.generation.hf import TransformersGenerator

    if role == "planner" or role == "pta":
        prompts = [planner_prompt(p) for p in problems]
    else:
        prompts = [coder_prompt(p, p.plan if role == "coder" else None) for p in problems]
    gen = TransformersGenerator(
        str(checkpoint), max_batch_size=32, use_chat_template=chat, dtype="float32", device="auto"
    )
    texts = [
        c[0].text for c in gen.generate(prompts, SamplingParams(n=1, max_new_tokens=max_new_tokens, temperature=0))
    ]
    out: dict[str, float] = {"check_n": float(len(problems))}
    if role == "planner":
        out["check_plan_ok"] = sum(extract_plan(t).ok for t in texts) / max(1, len(texts))
        return out
    programs = []
    for p, t in zip(problems, texts):
        ex = extract_code(t, p)
        programs.append(build_program(p, ex.value) if ex.ok else "")

    def parses(src: str) -> bool:
        try:
            pysource.parse(src)
        except (SyntaxError, ValueError):
            return False
        return bool(src.strip())

    from corecode.sandbox import Sandbox

    if sandbox is None:
        with Sandbox() as sb:
            results = sb.run_batch(list(zip(problems, programs)))
    else:
        results = sandbox.run_batch(list(zip(problems, programs)))
    n = max(1, len(problems))
    out["check_parses"] = sum(map(parses, programs)) / n
    out["check_pass_rate"] = sum(r.passed for r in results) / n
    out["check_pass_fraction"] = sum(r.pass_fraction for r in results) / n
    return out


def save_final_model(model, tokenizer, cfg, output_dir: Path, work_dir: Path):
    """Save a trainer's final model (LoRA merged when asked) + tokenizer as a plain checkpoint in ``output_dir``.

    Shared by SFT and the TRL GRPO baselines so that every stage leaves the same kind of checkpoint; without
    ``save_steps`` nothing resumable was kept, so the Trainer's scratch ``work_dir`` is removed too.
    """
    if cfg.lora.enabled and cfg.lora.merge:
        model = model.merge_and_unload()
    if output_dir.exists():
        shutil.rmtree(output_dir)
    output_dir.mkdir(parents=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    if not cfg.save_steps and work_dir.exists():
        shutil.rmtree(work_dir)
    return model
