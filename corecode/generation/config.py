"""Parameters of the `generation` section of params.yaml: which backend samples completions, and its knobs.

Sampling itself (n, temperature, max_new_tokens, stop) is per call (``SamplingParams``), set by each stage.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GenerationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["transformers", "vllm", "openai"] = Field(
        "transformers",
        description="'transformers' (default, CPU and GPU), 'vllm' (offline engine, GPU, needs "
        "`pip install corecode[vllm]`), 'openai' (any OpenAI-compatible HTTP endpoint: vllm serve, corecode serve...).",
    )
    max_batch_size: int = Field(
        128,
        gt=0,
        description="Sequences (prompts x samples) per forward batch in the transformers backend; lower it "
        "on out-of-memory.",
    )
    use_chat_template: bool | None = Field(
        None,
        description="Render each role prompt as one user message of the tokenizer's chat template, in every stage "
        "(SFT rows, GRPO rollouts, evaluate, solve; corecode.generation.render), completions then ending with the "
        "template's end-of-turn token. None (auto): when the tokenizer has a template (hub instruct models yes, "
        "embedded model no); true without a template is an error.",
    )
    fast_path: Literal["auto", "static", "lean", "continuous", "off"] = Field(
        "auto",
        description="transformers backend: 'static' (GPU) = static KV cache + torch.compile'd decode step "
        "(batch padded to a power of two, prompt/cache lengths rounded up: shapes, hence compiled graphs, are reused); "
        "'lean' (CPU) = corecode's eager decode loop for Llama/Qwen2-shaped models (no generate overhead, finished "
        "rows dropped; other models fall back to 'off'); 'continuous' = transformers continuous batching "
        "(generate_batch); 'off' = plain generate; 'auto' = static on CUDA, lean elsewhere (both measured faster, "
        "docs/benchmarks.md).",
    )
    pad_to_multiple_of: int = Field(
        64, gt=0, description="Static fast path: prompt lengths and KV cache length rounded up to this many tokens."
    )
    # --- openai backend
    base_url: str = Field("http://127.0.0.1:8000/v1", description="openai backend: endpoint base URL (ends in /v1).")
    openai_model: str = Field(
        "", description="openai backend: model name sent to the endpoint ('' = the first one /v1/models lists)."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="openai backend: environment variable holding the API key (unset: no key)."
    )
    chat: bool = Field(False, description="openai backend: /v1/chat/completions (True) or /v1/completions (False).")
    request_timeout_s: float = Field(120.0, gt=0, description="openai backend: timeout per HTTP request.")
    max_retries: int = Field(5, ge=0, description="openai backend: retries on 429/5xx/timeouts (exponential backoff).")
    backoff_s: float = Field(1.0, gt=0, description="openai backend: first retry delay; doubles each retry.")
    requests_per_second: float | None = Field(
        None, gt=0, description="openai backend: client-side rate limit (None: unlimited)."
    )
    max_concurrency: int = Field(8, gt=0, description="openai backend: requests in flight at once.")
    # --- vllm backend
    gpu_memory_utilization: float = Field(0.85, gt=0, le=1, description="vllm backend: fraction of GPU memory.")
    tensor_parallel_size: int = Field(1, gt=0, description="vllm backend: GPUs to shard the model over.")
