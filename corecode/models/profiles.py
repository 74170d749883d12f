"""Documented ``model`` / ``generation`` settings for real Qwen2.5-Coder checkpoints.

Each profile is a set of params.yaml overrides (``corecode init-model --set model.name_or_path=...`` or paste the
keys into params.yaml). Memory figures are rough bf16 estimates for weights + LoRA optimizer state, not measurements.

| profile              | weights (bf16) | GPU for LoRA SFT/GRPO | roles | LoRA r/alpha | grad. ckpt | gen. batch |
|----------------------|----------------|-----------------------|-------|--------------|------------|------------|
| qwen2.5-coder-1.5b   | ~3 GiB         | 1x 24-80 GiB          | lora  | 16 / 32      | on         | 64         |
| qwen2.5-coder-7b     | ~15 GiB        | 1x 80 GiB             | lora  | 32 / 64      | on         | 32         |
| qwen2.5-coder-14b    | ~30 GiB        | 1x 80-141 GiB         | lora  | 64 / 128     | on         | 16         |

Full fine-tuning needs roughly 16 bytes/parameter with AdamW (1.5B: ~24 GiB; 7B: ~112 GiB, i.e. several GPUs).
For GRPO at 7B+ prefer ``generation.backend: vllm`` (or an external ``vllm serve`` via ``backend: openai``).
"""

from __future__ import annotations

_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

PROFILES: dict[str, dict[str, object]] = {
    "embedded": {"model.name_or_path": "embedded"},
    "qwen2.5-coder-1.5b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "model.dtype": "bfloat16",
        "model.roles": "lora",
        "model.lora.r": 16,
        "model.lora.alpha": 32,
        "model.lora.target_modules": _LORA_TARGETS,
        "model.gradient_checkpointing": True,
        "generation.max_batch_size": 64,
    },
    "qwen2.5-coder-7b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-7B-Instruct",
        "model.dtype": "bfloat16",
        "model.roles": "lora",
        "model.lora.r": 32,
        "model.lora.alpha": 64,
        "model.lora.target_modules": _LORA_TARGETS,
        "model.gradient_checkpointing": True,
        "model.copy_weights": False,
        "generation.max_batch_size": 32,
    },
    "qwen2.5-coder-14b": {
        "model.name_or_path": "Qwen/Qwen2.5-Coder-14B-Instruct",
        "model.dtype": "bfloat16",
        "model.roles": "lora",
        "model.lora.r": 64,
        "model.lora.alpha": 128,
        "model.lora.target_modules": _LORA_TARGETS,
        "model.gradient_checkpointing": True,
        "model.copy_weights": False,
        "generation.max_batch_size": 16,
    },
}
