"""``make_generator``: pick the backend named by ``generation.backend``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from corecode.generation.base import Generator
from corecode.generation.config import GenerationParams

if TYPE_CHECKING:
    import torch


def make_generator(
    params: GenerationParams,
    model_or_path: torch.nn.Module | str | Path | None,
    tokenizer=None,
    *,
    dtype: str = "auto",
    device: str = "auto",
) -> Generator:
    """A ``Generator`` for ``params.backend``.

    - transformers: ``model_or_path`` is a checkpoint dir/hub id or a live module (then ``tokenizer`` is required);
      a path is loaded by ``corecode.models.factory.load_model`` in ``dtype`` on ``device`` (``model.dtype``,
      ``model.device``).
    - vllm: ``model_or_path`` must be a path/hub id (vLLM loads its own copy of the weights); init-model's pointer
      resolves to the source it names.
    - openai: ``model_or_path`` is ignored except as the model name when ``generation.openai_model`` is empty and it
      is a string; the endpoint is ``generation.base_url``.
    """
    if params.backend == "transformers":
        from corecode.generation.hf import TransformersGenerator

        if model_or_path is None:
            raise ValueError("generation.backend=transformers needs a model or checkpoint path")
        return TransformersGenerator(
            model_or_path,
            tokenizer,
            max_batch_size=params.max_batch_size,
            use_chat_template=params.use_chat_template,
            fast_path=params.fast_path,
            pad_to_multiple_of=params.pad_to_multiple_of,
            dtype=dtype,
            device=device,
        )
    if params.backend == "vllm":
        from corecode.generation.vllm_backend import VLLMGenerator
        from corecode.models.factory import adapter_base, check_source, resolve_source

        if not isinstance(model_or_path, (str, Path)):
            raise ValueError("generation.backend=vllm needs a checkpoint path or hub id, not a live model")
        check_source(model_or_path, "generation.backend=vllm model")
        if adapter_base(model_or_path) is not None:
            raise ValueError(
                f"generation.backend=vllm: {model_or_path} is a LoRA adapter directory; train with lora.merge: true "
                "(a plain checkpoint) or use generation.backend: transformers"
            )
        model_or_path = resolve_source(model_or_path)[0]
        return VLLMGenerator(
            model_or_path,
            use_chat_template=params.use_chat_template,
            gpu_memory_utilization=params.gpu_memory_utilization,
            tensor_parallel_size=params.tensor_parallel_size,
        )
    if params.backend == "openai":
        from corecode.generation.openai_http import OpenAIGenerator

        model = params.openai_model or (str(model_or_path) if isinstance(model_or_path, str) else "")
        return OpenAIGenerator(
            params.base_url,
            model,
            os.environ.get(params.api_key_env) or None,
            chat=params.chat,
            timeout_s=params.request_timeout_s,
            max_retries=params.max_retries,
            backoff_s=params.backoff_s,
            requests_per_second=params.requests_per_second,
            max_concurrency=params.max_concurrency,
        )
    raise ValueError(f"generation.backend: unknown backend {params.backend!r}")
