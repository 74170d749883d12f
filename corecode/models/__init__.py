"""Models: the embedded tiny Qwen2 + trained BPE tokenizer, hub checkpoints, LoRA per role, dtype/device, OOM guard.

Entry points: ``factory.load_model`` / ``factory.load_tokenizer`` (any checkpoint), ``factory.init_base_checkpoint``
(``corecode init-model``), ``lora.load_role_model``, ``oom.oom_guard``.
"""
