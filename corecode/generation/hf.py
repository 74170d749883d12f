"""``TransformersGenerator``: the default backend, on CPU and GPU, for a checkpoint path or a live ``nn.Module``.

GRPO samples with the policy it is training, so the generator accepts the module itself (a ``PreTrainedModel`` or a
peft model) and never copies it. Prompts x samples are flattened, cut into chunks of ``max_batch_size`` sequences and
left-padded; generation stops at EOS and at ``SamplingParams.stop`` strings (transformers' ``stop_strings``), and text
is truncated before the stop string as OpenAI/vLLM do.

GPU fast path (``fast_path``): ``static`` uses transformers' static KV cache, with which ``generate`` compiles the
decode step (torch.compile, CUDA graphs). A compiled graph is reused only for identical shapes, so here the batch is
padded to a power of two (at most ``max_batch_size`` rows) and prompt and cache lengths are rounded up to
``pad_to_multiple_of``. ``continuous`` uses
transformers' continuous batching (``generate_batch``). Which is faster is measured by
benchmarks/generation_throughput.py (docs/benchmarks.md).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from corecode.generation.base import Completion, SamplingParams

log = logging.getLogger(__name__)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class TransformersGenerator:
    """Batched sampling with ``model.generate``; see the module docstring."""

    def __init__(
        self,
        model: torch.nn.Module | str | Path,
        tokenizer=None,
        *,
        max_batch_size: int = 64,
        use_chat_template: bool | None = None,
        fast_path: str = "auto",
        pad_to_multiple_of: int = 64,
        dtype: str = "auto",
        device: str = "auto",
    ):
        if isinstance(model, (str, Path)):
            from corecode.models.factory import load_model, load_tokenizer

            tokenizer = tokenizer if tokenizer is not None else load_tokenizer(model)
            model = load_model(model, dtype, device)
        if tokenizer is None:
            raise ValueError("TransformersGenerator: a tokenizer is required when passing a live model")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer = model, tokenizer
        self.max_batch_size = max_batch_size
        self.use_chat_template = (
            getattr(tokenizer, "chat_template", None) is not None if use_chat_template is None else use_chat_template
        )
        if fast_path not in ("auto", "static", "continuous", "off"):
            raise ValueError(f"fast_path must be auto|static|continuous|off, got {fast_path!r}")
        self.fast_path = fast_path
        self.pad_to_multiple_of = pad_to_multiple_of
        eos = model.generation_config.eos_token_id if model.generation_config.eos_token_id is not None else []
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
        self.eos_ids.discard(None)

    # ------------------------------------------------------------------------------------------------------ helpers
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def mode(self) -> str:
        """The path actually taken: 'static', 'continuous' or 'off' ('auto' resolves to static on CUDA only)."""
        if self.fast_path == "auto":
            return "static" if self.device.type == "cuda" else "off"
        return self.fast_path

    def render(self, prompt: str) -> str:
        """The exact text fed to the model: the prompt, or the prompt as one user turn of the chat template."""
        if not self.use_chat_template:
            return prompt
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def _max_positions(self) -> int | None:
        cfg = getattr(self.model, "config", None)
        return getattr(cfg, "max_position_embeddings", None)

    def _encode(self, texts: list[str], max_new_tokens: int) -> tuple[list[list[int]], int]:
        """Token ids per text (left-truncated if needed) and max_new_tokens clamped to the position range."""
        ids = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        limit = self._max_positions()
        if limit is not None:
            longest = max(len(x) for x in ids)
            if longest + max_new_tokens > limit:
                new_max = min(max_new_tokens, max(limit - longest, limit // 4))  # prompt kept whole if it can be
                keep = limit - new_max
                if new_max < max_new_tokens:
                    log.warning("max_new_tokens %d clamped to %d (model max positions %d)", max_new_tokens, new_max,
                                limit)
                if longest > keep:
                    log.warning("prompts longer than %d tokens left-truncated (model max positions %d)", keep, limit)
                ids = [x[-keep:] for x in ids]
                max_new_tokens = new_max
        return ids, max_new_tokens

    def _sampling_kwargs(self, params: SamplingParams, max_new: int) -> dict:
        # use_cache explicitly: gradient checkpointing sets config.use_cache=False on the training policy
        kw: dict = {"pad_token_id": self.tokenizer.pad_token_id, "max_new_tokens": max_new, "use_cache": True}
        if params.temperature > 0:
            kw.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
        else:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        kw["eos_token_id"] = sorted(self.eos_ids)
        if params.ignore_eos:  # EOS logits masked until max_new tokens (what the throughput anchors measure)
            kw["min_new_tokens"] = max_new
        return kw

    def _finish(self, ids: list[int], params: SamplingParams) -> Completion:
        """Cut generated ids at EOS (kept in token_ids) or trailing padding; cut text before the first stop string."""
        finish = "length"
        if not params.ignore_eos:
            for j, t in enumerate(ids):
                if t in self.eos_ids:
                    ids, finish = ids[: j + 1], "stop"
                    break
        pad = self.tokenizer.pad_token_id
        if finish == "length" and pad not in self.eos_ids:
            while ids and ids[-1] == pad:
                ids = ids[:-1]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        cuts = [i for i in (text.find(s) for s in params.stop if s) if i >= 0]
        if cuts:
            text, finish = text[: min(cuts)], "stop"
        return Completion(text=text, num_tokens=len(ids), token_ids=ids, finish_reason=finish)

    # ------------------------------------------------------------------------------------------------------- generate
    def generate(self, prompts: list[str], params: SamplingParams) -> list[list[Completion]]:
        """For each prompt, ``params.n`` completions (in prompt order)."""
        if params.n < 1:
            raise ValueError(f"SamplingParams.n must be >= 1, got {params.n}")
        if not prompts:
            return []
        texts = [self.render(p) for p in prompts]
        owners = [i for i in range(len(texts)) for _ in range(params.n)]
        flat = [texts[i] for i in owners]
        results: list[list[Completion]] = [[] for _ in prompts]
        was_training = self.model.training
        self.model.eval()
        try:
            # no_grad, not inference_mode: buffers a module caches lazily during generation (rotary tables, static
            # KV cache) must stay usable by the training step that follows with the same live module.
            with torch.no_grad():
                if self.mode == "continuous":
                    completions = self._generate_continuous(flat, params)
                else:
                    completions = []
                    for c, start in enumerate(range(0, len(flat), self.max_batch_size)):
                        chunk = flat[start : start + self.max_batch_size]
                        completions += self._generate_chunk(chunk, params, chunk_index=c)
        finally:
            self.model.train(was_training)
        for owner, comp in zip(owners, completions):
            results[owner].append(comp)
        return results

    def _generate_chunk(self, texts: list[str], params: SamplingParams, chunk_index: int) -> list[Completion]:
        ids, max_new = self._encode(texts, params.max_new_tokens)
        static = self.mode == "static"
        rows = len(ids)
        if static:  # few batch shapes (powers of two up to max_batch_size) -> compiled decode graphs are reused
            bucket = min(self.max_batch_size, 1 << (rows - 1).bit_length())
            ids = ids + [ids[0]] * (bucket - rows)
        enc = self.tokenizer.pad(
            {"input_ids": ids},
            padding=True,
            padding_side="left",
            pad_to_multiple_of=self.pad_to_multiple_of if static else None,
            return_tensors="pt",
        ).to(self.device)
        kw = self._sampling_kwargs(params, max_new)
        if params.stop:
            kw.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
        if static:
            prompt_len = enc["input_ids"].shape[1]
            kw.update(
                cache_implementation="static",
                max_cache_len=_round_up(prompt_len + max_new, self.pad_to_multiple_of),
            )
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=params.seed is not None):
            if params.seed is not None:
                torch.manual_seed(params.seed + chunk_index)
            out = self.model.generate(**enc, **kw)
        gen = out[:rows, enc["input_ids"].shape[1] :].tolist()
        return [self._finish(g, params) for g in gen]

    def _generate_continuous(self, texts: list[str], params: SamplingParams) -> list[Completion]:
        from transformers import GenerationConfig

        ids, max_new = self._encode(texts, params.max_new_tokens)
        kw = self._sampling_kwargs(params, max_new)
        cfg = GenerationConfig(**{k: v for k, v in kw.items() if v is not None})
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=params.seed is not None):
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate_batch(inputs=ids, generation_config=cfg, max_new_tokens=max_new)
        ordered = sorted(out.values(), key=lambda r: int(r.request_id.rsplit("_", 1)[-1]))
        if len(ordered) != len(ids) or any(r.error for r in ordered):
            errors = [r.error for r in ordered if r.error]
            raise RuntimeError(f"continuous batching returned {len(ordered)}/{len(ids)} results; errors: {errors[:3]}")
        return [self._finish(list(r.generated_tokens), params) for r in ordered]
