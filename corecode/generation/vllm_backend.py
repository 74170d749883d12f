"""``VLLMGenerator``: the same interface over vLLM's offline ``LLM`` engine (GPU; optional dependency).

vLLM is not installed in the CPU development environment, so this module is small and only imports vllm when a
generator is built. Install with ``pip install corecode[vllm]``.
"""

from __future__ import annotations

from pathlib import Path

from corecode.generation.base import Completion, SamplingParams
from corecode.generation.render import render_prompt, stop_token_ids, tokenize_rendered, use_chat

INSTALL_HINT = "the vllm backend needs vLLM: `pip install corecode[vllm]` (CUDA machine), or set generation.backend"


def _import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from e
    return vllm


class VLLMGenerator:
    """Offline vLLM engine over a checkpoint directory or hub id (not a live module: vLLM owns its weights)."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        use_chat_template: bool | None = None,
        gpu_memory_utilization: float = 0.85,
        tensor_parallel_size: int = 1,
        dtype: str = "auto",
        seed: int = 0,
    ):
        vllm = _import_vllm()
        self._vllm = vllm
        self.llm = vllm.LLM(
            model=str(model_path),
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
            dtype=dtype,
            seed=seed,
        )
        self.tokenizer = self.llm.get_tokenizer()
        self.use_chat_template = use_chat(self.tokenizer, use_chat_template)
        self.stop_ids = sorted(stop_token_ids(self.tokenizer))  # vLLM adds the model's generation_config EOS itself

    def render(self, prompt: str) -> str:
        """The text fed to the model, by the renderer training uses (``corecode.generation.render``)."""
        return render_prompt(self.tokenizer, prompt, self.use_chat_template)

    def generate(self, prompts: list[str], params: SamplingParams) -> list[list[Completion]]:
        sp = self._vllm.SamplingParams(
            n=params.n,
            max_tokens=params.max_new_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            stop=list(params.stop) or None,
            seed=params.seed,
            ignore_eos=params.ignore_eos,
            stop_token_ids=None if params.ignore_eos else self.stop_ids,
        )
        # token ids, not text: vLLM would tokenize text with the tokenizer's default special tokens
        ids = tokenize_rendered(self.tokenizer, [self.render(p) for p in prompts])
        outputs = self.llm.generate([{"prompt_token_ids": x} for x in ids], sp, use_tqdm=False)
        return [
            [
                Completion(
                    text=o.text,
                    num_tokens=len(o.token_ids),
                    token_ids=list(o.token_ids),
                    finish_reason="length" if o.finish_reason == "length" else "stop",
                )
                for o in req.outputs
            ]
            for req in outputs
        ]
