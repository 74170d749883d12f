"""Does a training stage's model fit the GPU? Checked from config.json before any weights are loaded.

The estimate is a lower bound: the weights in the dtype they are loaded in, plus 16 bytes for every trainable parameter
(fp32 weight, fp32 gradient, AdamW's two fp32 moments), plus a bf16 sampling copy where the team trainer keeps one.
Activations, the KV cache and allocator slack come on top, so a stage that fails this check cannot run, and one that
passes may still need smaller batches (the out-of-memory message names those keys). Written by hand because
``accelerate estimate-memory`` counts inference/full-training bytes only, not a frozen base under a LoRA adapter.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from corecode.models.config import LoraParams
from corecode.models.factory import ModelSourceError, adapter_base, count_parameters, resolve_source

GIB = 2**30
TRAINABLE_BYTES = 16  # fp32 weight + fp32 gradient + two fp32 AdamW moments


def training_bytes(n_frozen: int, frozen_bytes: int, n_trainable: int, n_sampler: int = 0) -> int:
    """Bytes of ``n_frozen`` weights stored at ``frozen_bytes`` each, ``n_trainable`` trained parameters (weight,
    gradient and AdamW state, all fp32) and ``n_sampler`` parameters of a bf16 sampling copy."""
    return n_frozen * frozen_bytes + n_trainable * TRAINABLE_BYTES + n_sampler * 2


def parameter_counts(name_or_path: str | Path, lora: LoraParams | None = None) -> tuple[int, int]:
    """(parameters of the model, parameters a LoRA adapter ``lora`` trains on it, its modules_to_save included), from
    config.json alone: the model is built on the meta device, so a 14B config costs no memory."""
    from transformers import AutoConfig, AutoModelForCausalLM

    source, revision = resolve_source(adapter_base(name_or_path) or name_or_path)
    config = AutoConfig.from_pretrained(source, revision=revision)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    n_lora = 0
    if lora is not None and lora.enabled:
        targets = lora.target_modules
        for name, module in model.named_modules():
            if not isinstance(module, torch.nn.Linear) or name.endswith("lm_head"):
                continue
            if targets == "all-linear" or name.rsplit(".", 1)[-1] in targets:
                n_lora += lora.r * (module.in_features + module.out_features)
        saved = {
            id(p): p
            for name, module in model.named_modules()
            if name.endswith(tuple(lora.modules_to_save))
            for p in module.parameters()
        }
        n_lora += sum(p.numel() for p in saved.values())
    return count_parameters(model), n_lora


def role_bytes(
    name_or_path: str | Path,
    lora: LoraParams | None,
    weight_dtype: torch.dtype,
    *,
    sampler: bool = False,
    trained: bool = True,
) -> int:
    """Lower bound of one model in training: a frozen base in ``weight_dtype`` plus the adapter with LoRA, else every
    weight trained in fp32 (plus a bf16 sampling copy when ``sampler``). A role that is never ``trained`` (frozen)
    holds its weights only."""
    n_params, n_lora = parameter_counts(name_or_path, lora)
    weight_bytes = torch.finfo(weight_dtype).bits // 8
    if not trained:
        return training_bytes(n_params, weight_bytes, 0, n_params if sampler else 0)
    if lora is not None and lora.enabled:
        return training_bytes(n_params, weight_bytes, n_lora)
    return training_bytes(0, 0, n_params, n_params if sampler else 0)


def check_fits(need_bytes: int, free_bytes: int, what: str, fix: str) -> None:
    """Raise :class:`ModelSourceError` when ``need_bytes`` exceed ``free_bytes``, naming ``what`` and ``fix``."""
    if need_bytes > free_bytes:
        raise ModelSourceError(
            f"{what} needs at least {need_bytes / GIB:.1f} GiB of GPU memory for weights and optimizer state "
            f"(activations not counted), and the GPU has {free_bytes / GIB:.1f} GiB free; {fix}"
        )


def check_fits_gpu(need_bytes: int, what: str, fix: str, device: str | torch.device | None = None) -> None:
    """:func:`check_fits` against ``torch.cuda.mem_get_info`` of ``device`` (None: :func:`process_gpu`); nothing to
    check off CUDA."""
    device = torch.device(device) if device is not None else None
    if not torch.cuda.is_available() or (device is not None and device.type != "cuda"):
        return
    device = device or process_gpu()
    free, _ = torch.cuda.mem_get_info(device)
    check_fits(need_bytes, free, what, fix)


def process_gpu() -> torch.device:
    """The GPU this process trains on: ``cuda:LOCAL_RANK`` under accelerate launch / torchrun (the device accelerate
    gives the process), else ``cuda:0``. Not the current device: before accelerate sets it, that is GPU 0 in every
    process, and querying it would check the wrong card and open a CUDA context there from every rank."""
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count()))
