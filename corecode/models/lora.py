"""LoRA adapters (peft) on a base loaded by ``corecode.models.factory.load_model``.

``load_role_model`` is a base checkpoint + an optional adapter directory (an agents role given as
``{model: BASE, adapter: DIR}``; team GRPO's shared base, ``grpo.team.shared_base``, where the Planner and the Coder
share the base weights and differ only by an adapter each, half the memory of two models for 7B+ teams).
"""

from __future__ import annotations

from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model

from corecode.models.config import LoraParams
from corecode.models.factory import load_model


def lora_config(params: LoraParams) -> LoraConfig:
    """A ``LoraParams`` block (``sft.lora``, ``grpo.team.lora``, ...) as a peft ``LoraConfig`` (causal LM)."""
    return LoraConfig(
        r=params.r,
        lora_alpha=params.alpha,
        lora_dropout=params.dropout,
        target_modules=params.target_modules,
        modules_to_save=list(params.modules_to_save) or None,
        ensure_weight_tying=bool(params.modules_to_save),
        task_type="CAUSAL_LM",
    )


def trainer_peft_config(params: LoraParams) -> LoraConfig | None:
    """A trainer's ``peft_config``: the LoRA adapter's config, or None (full fine-tuning) when LoRA is off."""
    return lora_config(params) if params.enabled else None


def load_role_model(
    base_path: str | Path,
    adapter_path: str | Path | None = None,
    *,
    dtype: str | torch.dtype = "auto",
    device: str = "auto",
    trainable: bool = False,
    lora: LoraParams | None = None,
    adapter_name: str = "default",
    gradient_checkpointing: bool = False,
    attn_implementation: str | None = None,
) -> torch.nn.Module:
    """The model for one role.

    - ``adapter_path`` given: base + that saved adapter (trainable if ``trainable``).
    - no adapter, ``lora`` given and ``trainable``: base + a fresh adapter from ``lora`` (start of role training).
    - otherwise: the plain base model (a role that is a full model of its own).
    """
    model = load_model(
        base_path, dtype, device, gradient_checkpointing=gradient_checkpointing, attn_implementation=attn_implementation
    )
    if adapter_path is not None:
        adapter_path = Path(adapter_path)
        if not (adapter_path / "adapter_config.json").is_file():
            raise FileNotFoundError(f"{adapter_path}: not a LoRA adapter directory (no adapter_config.json)")
        return PeftModel.from_pretrained(model, adapter_path, adapter_name=adapter_name, is_trainable=trainable)
    if trainable and lora is not None:
        if gradient_checkpointing:
            model.enable_input_require_grads()  # checkpointed blocks need a grad-requiring input under frozen base
        return get_peft_model(model, lora_config(lora), adapter_name=adapter_name)
    return model


def add_role_adapters(model: torch.nn.Module, roles: list[str], lora: LoraParams) -> PeftModel:
    """One base, a fresh adapter per role name; switch with ``model.set_adapter(role)`` before generating/training."""
    if not roles:
        raise ValueError("add_role_adapters: roles is empty")
    peft_model = get_peft_model(model, lora_config(lora), adapter_name=roles[0])
    for role in roles[1:]:
        peft_model.add_adapter(role, lora_config(lora))
    return peft_model
