"""``TransformersGenerator``: the default backend, on CPU and GPU, for a checkpoint path or a live ``nn.Module``.

GRPO samples with the policy it is training, so the generator accepts the module itself (a ``PreTrainedModel`` or a
peft model) and never copies it. Prompts x samples are flattened, cut into chunks of ``max_batch_size`` sequences and
left-padded; generation stops at EOS and at ``SamplingParams.stop`` strings (transformers' ``stop_strings``), and text
is truncated before the stop string as OpenAI/vLLM do.

GPU fast path (``fast_path``): ``static`` keeps transformers' ``StaticCache`` (one per batch/cache shape, reused
across calls) and runs the decode loop itself (``_StaticDecoder``): one ``torch.compile(mode="reduce-overhead")``
graph per step holds the forward pass *and* the sampling (temperature, top-p as one operator that Inductor calls
rather than compiles, ``_top_p_filter_op``; EOS masking), and the host looks at the finished flags only every
``_CHECK_EVERY`` steps. A compiled graph is reused only for identical shapes, so the batch is padded to a power of two
(at most ``max_batch_size`` rows) and prompt and cache lengths are rounded up to ``pad_to_multiple_of``.
``continuous`` uses transformers' continuous batching (``generate_batch``). Which is faster is measured by
benchmarks/generation_throughput.py (docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from pathlib import Path

import torch
import torch.nn.functional as F

from corecode.generation.base import Completion, SamplingParams
from corecode.generation.render import render_prompt, stop_token_ids, tokenize_rendered, use_chat

log = logging.getLogger(__name__)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


# Decode steps between two host looks at the finished flags / stop strings. Each look is one device->host sync; a
# row that finished in between keeps producing padding (or, after a stop string, tokens that are cut off later).
_CHECK_EVERY = 16
_GROUPED_ATTN = "corecode_grouped_decode"


def _grouped_decode_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention for one new token per row under grouped-query attention, without repeating the KV cache.

    transformers' sdpa function repeats K/V ``num_heads / num_kv_heads`` times whenever a mask is passed (a padded
    static cache always needs one): at decode time that copies the whole cache in every layer at every step. With one
    query token per row the query heads of a KV group can be laid out as that group's query *positions* instead:
    [B, H, 1, D] -> [B, KV, H/KV, D] against the cache [B, KV, L, D] under the same [B, 1, 1, L] mask. Registered
    with transformers' ``AttentionInterface`` and switched on only for the decode steps of ``_StaticDecoder``."""
    b, h, q_len, d = query.shape
    kv = key.shape[1]
    if q_len != 1 or kv == h:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    out = F.scaled_dot_product_attention(
        query.reshape(b, kv, h // kv, d), key, value, attn_mask=attention_mask, scale=scaling
    )
    return out.reshape(b, h, 1, d).transpose(1, 2), None


def _top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """``logits`` with the tokens outside the top-p nucleus set to -inf (transformers' TopPLogitsWarper arithmetic:
    ascending sort, cumulative softmax, drop while the mass so far is <= 1 - top_p, keep the most likely token)."""
    sorted_logits, order = torch.sort(logits, descending=False)
    remove = sorted_logits.softmax(-1).cumsum(-1) <= (1 - top_p)
    remove[..., -1:] = False  # keep at least the most likely token
    return logits.masked_fill(remove.scatter(1, order, remove), float("-inf"))


@torch.library.custom_op("corecode::top_p_filter", mutates_args=())
def _top_p_filter_op(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """``_top_p_filter`` as one operator that ``torch.compile`` does not trace into: the static decoder's compiled
    step calls it, Inductor leaves it as one call in the graph, and it runs the eager path's aten kernels (sort,
    softmax, cumsum, scatter), which CUDA graphs capture like any other kernel.

    Why: traced, the vocabulary-long ``cumsum`` is lowered by Inductor to a Triton scan of its own, split across
    blocks when rows x vocabulary is large; that code generation failed for 128 rows x 151,936 (Qwen2.5's vocabulary)
    on an H100 with torch 2.11 (``InductorError`` in the codegen of a ``SplitScan``), while 32k vocabularies compiled.
    Opaque, the nucleus depends on no Inductor scan at any vocabulary size and, for the same logits, is bit for bit
    the eager one (same kernels). The alternatives cost more: sampling outside the graph with the top-k nucleus
    (``_top_p_filter_topk``) needs a host sync every step for its data-dependent fallback, and catching the compile
    error would leave the path to whichever shapes the bug spares."""
    return _top_p_filter(logits, top_p)


@_top_p_filter_op.register_fake
def _(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    return torch.empty_like(logits)


# Candidates the eager nucleus filter looks at first (``_top_p_filter_topk``); rows whose top-k mass falls short of
# top_p (flat distributions) go through the full sort.
_NUCLEUS_K = 64
# Safety margin on that test: the two arithmetics (top-k sum here, ascending cumsum in the sort) round differently.
_NUCLEUS_MARGIN = 1e-4


def _top_p_filter_topk(logits: torch.Tensor, top_p: float, k: int = _NUCLEUS_K) -> torch.Tensor:
    """The same nucleus as ``_top_p_filter``, found from the top ``k`` tokens when they hold the whole nucleus.

    Why: a full sort of [rows, vocab] costs 3.5 ms on the 2-core CPU at 64 x 2048 (``torch.topk(64)`` 0.5 ms), more
    than half a decode step of the embedded model, and a sampled nucleus at evaluation temperatures is a handful of
    tokens. A token is dropped when the mass of the tokens above it is >= top_p (the sort's rule seen from the top);
    if the top k hold more than top_p, every token outside them is dropped too. Eager only: the data-dependent
    fallback would break a CUDA graph (the static path keeps ``_top_p_filter``, as ``_top_p_filter_op``)."""
    vocab = logits.shape[-1]
    if k >= vocab:
        return _top_p_filter(logits, top_p)
    probs = logits.softmax(-1)
    top_probs, top_idx = probs.topk(k, dim=-1)  # descending
    above = top_probs.cumsum(-1) - top_probs  # mass of the more likely tokens
    kept = torch.full_like(logits, float("-inf")).scatter(
        1, top_idx, logits.gather(1, top_idx).masked_fill(above >= top_p, float("-inf"))
    )
    short = top_probs.sum(-1) < top_p + _NUCLEUS_MARGIN
    if bool(short.any()):
        kept[short] = _top_p_filter(logits[short], top_p)
    return kept


def pick_tokens(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    is_eos: torch.Tensor,
    block_eos: bool,
    uniform: torch.Tensor | None = None,
    eager: bool = False,
) -> torch.Tensor:
    """Next token per row, as ``generate``'s logits processors + sampling do: EOS masked while ``min_new_tokens`` is
    not reached, greedy at temperature 0, else temperature, top-p (transformers' TopPLogitsWarper arithmetic) and a
    draw. The draw is Gumbel-max (argmax of logits + Gumbel noise), which samples exactly softmax(logits) without
    ``torch.multinomial``'s host-side checks, so it can sit inside a CUDA graph. ``uniform`` (same shape as
    ``logits``) supplies the draw's uniforms instead of the global RNG (``LeanDecoder``'s per-row streams).
    ``eager`` (callers outside a compiled graph) finds the nucleus from the top-k tokens (``_top_p_filter_topk``);
    otherwise the full sort runs as ``_top_p_filter_op`` (the same nucleus; opaque to ``torch.compile``)."""
    logits = logits.float()
    if block_eos:
        logits = logits.masked_fill(is_eos, float("-inf"))
    if temperature <= 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_p < 1.0:
        logits = _top_p_filter_topk(logits, top_p) if eager else _top_p_filter_op(logits, top_p)
    u = (torch.rand_like(logits) if uniform is None else uniform.float()).clamp_(min=1e-20)
    return (logits - torch.log(-torch.log(u))).argmax(-1)


class _StaticDecoder:
    """The ``static`` decode loop: transformers' ``StaticCache`` and model forward, driven by our own loop.

    Why not ``model.generate(cache_implementation="static")``: its loop compiles only the forward pass and runs the
    mask building, logits processors and stopping criteria eagerly around it, and it reads the finished flag on the
    host after every token, so at batch 64 the GPU spends most of each step waiting on Python (docs/benchmarks.md,
    "Generation throughput (GPU)"). Here one ``torch.compile(mode="reduce-overhead")`` graph per step does mask,
    forward and sampling (gpt-fast's recipe), and the host checks EOS / stop strings every ``_CHECK_EVERY`` steps.
    Caches are kept per (rows, cache length): their tensors have static addresses that the CUDA graphs point at, so
    a reused cache means no recompilation."""

    MAX_CACHES = 4

    def __init__(self, model, compile: bool, grouped_attention: bool = True):
        self.model = model
        base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft
        self.cache_kw = "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"
        self.caches: dict[tuple[int, int], object] = {}
        self.compiled = compile
        # dynamic=None (torch's default): a second (rows, cache length) shape recompiles once with symbolic sizes,
        # after which CUDA graphs are only re-recorded per shape (evaluation sees several prompt lengths).
        self.step_fn = torch.compile(self._step, mode="reduce-overhead") if compile else self._step
        cfg = model.config
        self.grouped = (
            grouped_attention
            and cfg._attn_implementation == "sdpa"
            and (getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads) < cfg.num_attention_heads
        )
        self.eager_mask = cfg._attn_implementation == "eager"
        self.is_eos: torch.Tensor | None = None

    @staticmethod
    def supports(model) -> bool:
        """Decoder-only, full attention in every layer (no sliding windows), sdpa or eager attention."""
        cfg = getattr(model, "config", None)
        if cfg is None or getattr(cfg, "is_encoder_decoder", False):
            return False
        if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
            return False
        return getattr(cfg, "_attn_implementation", None) in ("sdpa", "eager")

    def _cache(self, rows: int, length: int):
        from transformers import StaticCache

        key = (rows, length)
        cache = self.caches.pop(key, None)
        if cache is None:
            cache = StaticCache(config=self.model.config, max_cache_len=length)
        else:
            cache.reset()
        self.caches[key] = cache  # most recently used last
        while len(self.caches) > self.MAX_CACHES:
            self.caches.pop(next(iter(self.caches)))
        return cache

    def _step(
        self,
        tokens,
        keep2d,
        pos_offset,
        slot,
        done,
        cache,
        pad_id: int,
        temperature: float,
        top_p: float,
        block_eos: bool,
    ):
        """One decode step for every row: the token at cache ``slot`` in, the next token and finished flags out."""
        keep = keep2d & (torch.arange(keep2d.shape[1], device=keep2d.device) <= slot)
        mask = keep[:, None, None, :]
        if self.eager_mask:  # eager attention adds the mask to the scores
            dtype = next(self.model.parameters()).dtype
            mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)
        out = self.model(
            input_ids=tokens,
            attention_mask={"full_attention": mask},
            position_ids=pos_offset + slot,
            use_cache=True,
            **{self.cache_kw: cache},
        )
        nxt = pick_tokens(out.logits[:, -1], temperature, top_p, self.is_eos, block_eos)
        nxt = torch.where(done, pad_id, nxt)
        return nxt[:, None], done | self.is_eos[nxt]

    def run(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        real_rows: int,
        max_new: int,
        cache_len: int,
        pad_id: int,
        eos_ids: set[int],
        temperature: float,
        top_p: float,
        block_eos: bool,
        stop_check,
    ) -> torch.Tensor:
        """Generated ids [rows, <= max_new] (padding after a row's EOS). ``stop_check(ids_so_far, done)`` may mark
        rows finished (stop strings) and returns True when every row is."""
        rows, plen = input_ids.shape
        dev = input_ids.device
        if max_new < 1:
            return torch.empty(rows, 0, dtype=torch.long, device=dev)
        cache = self._cache(rows, cache_len)
        positions = (attention_mask.long().cumsum(-1) - 1).masked_fill_(attention_mask == 0, 1)
        logits = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_kw: cache},
        ).logits[:, -1]
        if self.is_eos is None or self.is_eos.shape[0] != logits.shape[-1] or self.is_eos.device != dev:
            self.is_eos = torch.zeros(logits.shape[-1], dtype=torch.bool, device=dev)
            self.is_eos[[i for i in eos_ids if i < logits.shape[-1]]] = True
        tok = pick_tokens(logits, temperature, top_p, self.is_eos, block_eos)
        done = self.is_eos[tok]
        done[real_rows:] = True  # bucket padding rows never hold the loop open
        out = torch.full((rows, max_new), pad_id, dtype=torch.long, device=dev)
        out[:, 0] = tok
        keep2d = torch.ones(rows, cache_len, dtype=torch.bool, device=dev)
        keep2d[:, :plen] = attention_mask.bool()
        pos_offset = attention_mask.long().sum(-1, keepdim=True) - plen  # position of cache slot s: s + offset
        slot = torch.tensor(plen, dtype=torch.long, device=dev)
        tok = tok[:, None]
        impl = self.model.config._attn_implementation
        if self.grouped:
            _register_grouped_attention()
            self.model.config._attn_implementation = _GROUPED_ATTN
        n = 1
        try:
            for i in range(1, max_new):
                if i % _CHECK_EVERY == 0 and stop_check(out[:, :i], done):
                    break
                if self.compiled:
                    torch.compiler.cudagraph_mark_step_begin()
                tok, done = self.step_fn(
                    tok,
                    keep2d,
                    pos_offset,
                    slot,
                    done,
                    cache,
                    pad_id=pad_id,
                    temperature=temperature,
                    top_p=top_p,
                    block_eos=block_eos,
                )
                tok, done = tok.clone(), done.clone()  # graph outputs are overwritten by the next replay
                out[:, i] = tok[:, 0]
                slot += 1
                n = i + 1
        finally:
            self.model.config._attn_implementation = impl
        return out[:, :n]


_registered = False


def _register_grouped_attention() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface

        AttentionInterface.register(_GROUPED_ATTN, _grouped_decode_attention)
        _registered = True


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
            use_chat(tokenizer, use_chat_template)  # a template the tokenizer lacks: fail before loading weights
            model = load_model(model, dtype, device)
        if tokenizer is None:
            raise ValueError("TransformersGenerator: a tokenizer is required when passing a live model")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer = model, tokenizer
        self.max_batch_size = max_batch_size
        self.use_chat_template = use_chat(tokenizer, use_chat_template)
        if fast_path not in ("auto", "static", "lean", "continuous", "off"):
            raise ValueError(f"fast_path must be auto|static|lean|continuous|off, got {fast_path!r}")
        self.fast_path = fast_path
        self.pad_to_multiple_of = pad_to_multiple_of
        self.eos_ids = stop_token_ids(tokenizer, model.generation_config)  # EOS, the config's, chat end-of-turn
        self._decoder: _StaticDecoder | None = None  # built on the first static-path call
        self._lean = None  # LeanDecoder, built on the first lean-path call
        self.grouped_decode_attention = True  # benchmarks switch it off to measure transformers' sdpa path

    # ------------------------------------------------------------------------------------------------------ helpers
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def mode(self) -> str:
        """The path actually taken: 'static', 'lean', 'continuous' or 'off'. 'auto' resolves to static on CUDA and
        to lean elsewhere when the model is Llama-shaped (``LeanDecoder.supports``); 'lean' falls back to 'off' for
        other models."""
        from corecode.generation.lean_decode import LeanDecoder

        if self.fast_path == "auto":
            if self.device.type == "cuda":
                return "static"
            return "lean" if LeanDecoder.supports(self.model) else "off"
        if self.fast_path == "lean" and not LeanDecoder.supports(self.model):
            return "off"
        return self.fast_path

    def render(self, prompt: str) -> str:
        """The exact text fed to the model: the prompt, or the prompt as one user turn of the chat template
        (``corecode.generation.render``, the renderer training uses too)."""
        return render_prompt(self.tokenizer, prompt, self.use_chat_template)

    def _max_positions(self) -> int | None:
        cfg = getattr(self.model, "config", None)
        return getattr(cfg, "max_position_embeddings", None)

    def _encode(self, texts: list[str], max_new_tokens: int) -> tuple[list[list[int]], int]:
        """Token ids per text (left-truncated if needed) and max_new_tokens clamped to the position range."""
        ids = tokenize_rendered(self.tokenizer, texts)
        limit = self._max_positions()
        if limit is not None:
            longest = max(len(x) for x in ids)
            if longest + max_new_tokens > limit:
                new_max = min(max_new_tokens, max(limit - longest, limit // 4))  # prompt kept whole if it can be
                keep = limit - new_max
                if new_max < max_new_tokens:
                    log.warning(
                        "max_new_tokens %d clamped to %d (model max positions %d)", max_new_tokens, new_max, limit
                    )
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
        seeds = self._row_seeds(texts, params) if params.seed is not None and self.mode == "lean" else None
        was_training = self.model.training
        self.model.eval()
        try:
            # no_grad, not inference_mode: buffers a module caches lazily during generation (rotary tables, static
            # KV cache) must stay usable by the training step that follows with the same live module.
            with torch.no_grad():
                if self.mode == "continuous":
                    completions = self._generate_continuous(flat, params)
                else:
                    # Seeded lean rows do not depend on their batch (``_row_seeds``), so rows of similar length are
                    # batched together: less left padding to prefill and attend over. Other paths keep prompt order
                    # (their draws follow the chunk's RNG state).
                    order = list(range(len(flat)))
                    if seeds is not None:
                        order.sort(key=lambda i: len(flat[i]))
                    completions = [None] * len(flat)
                    for c, start in enumerate(range(0, len(flat), self.max_batch_size)):
                        rows = order[start : start + self.max_batch_size]
                        outs = self._generate_chunk(
                            [flat[i] for i in rows],
                            params,
                            chunk_index=c,
                            seeds=None if seeds is None else [seeds[i] for i in rows],
                        )
                        for i, comp in zip(rows, outs):
                            completions[i] = comp
        finally:
            self.model.train(was_training)
        for owner, comp in zip(owners, completions):
            results[owner].append(comp)
        return results

    @staticmethod
    def _row_seeds(texts: list[str], params: SamplingParams) -> list[int]:
        """One seed per flattened row (prompt x sample), from the call's seed, the prompt text, the sample index
        and which repeat of that text the prompt is: the same problem gets the same random stream in every model and
        every batch (common random numbers, ``LeanDecoder.run``), different rows get independent ones."""
        seen: dict[str, int] = {}
        seeds = []
        for text in texts:
            repeat = seen.get(text, 0)
            seen[text] = repeat + 1
            for j in range(params.n):
                digest = hashlib.sha256(f"{params.seed}\0{repeat}\0{j}\0{text}".encode()).digest()
                seeds.append(int.from_bytes(digest[:8], "little") & (2**63 - 1))
        return seeds

    def _generate_chunk(
        self, texts: list[str], params: SamplingParams, chunk_index: int, seeds: list[int] | None = None
    ) -> list[Completion]:
        ids, max_new = self._encode(texts, params.max_new_tokens)
        if self.mode == "lean":
            return self._decode_lean(ids, max_new, params, chunk_index, seeds)
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
        if static and _StaticDecoder.supports(self.model):
            return self._decode_static(enc, rows, max_new, params, chunk_index)
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
            out = self.model.generate_batch(
                inputs=ids,
                generation_config=cfg,
                max_new_tokens=max_new,
                **self._paged_cache_for(ids, max_new),
            )
        ordered = sorted(out.values(), key=lambda r: int(r.request_id.rsplit("_", 1)[-1]))
        if len(ordered) != len(ids) or any(r.error for r in ordered):
            errors = [r.error for r in ordered if r.error]
            raise RuntimeError(f"continuous batching returned {len(ordered)}/{len(ids)} results; errors: {errors[:3]}")
        return [self._finish(list(r.generated_tokens), params) for r in ordered]

    def _paged_cache_for(self, ids: list[list[int]], max_new: int) -> dict:
        """On CPU, a paged cache just large enough for this call's rows (``continuous_batching_config``): every row's
        prompt and new tokens in whole pages, and the whole prefill in one batch.

        transformers sizes the cache from the device's free memory, which on a CPU is the host's RAM: for two short
        prompts it filled about 14 GiB on a 24 GiB machine, 20 s a call (benchmarks/continuous_cache.py). On a GPU that
        sizing is the point (throughput over many calls), so it is kept there. Versions of transformers without
        ``ContinuousBatchingConfig`` keep their own sizing too.
        """
        if self.device.type != "cpu":
            return {}
        try:
            from transformers import ContinuousBatchingConfig
        except ImportError:
            return {}
        page = ContinuousBatchingConfig().page_size
        blocks = sum(_round_up(len(x) + max_new, page) // page for x in ids)
        prefill = sum(len(x) for x in ids)
        return {"continuous_batching_config": ContinuousBatchingConfig(num_blocks=blocks, max_batch_tokens=prefill)}

    def _decode_static(
        self, enc, rows: int, max_new: int, params: SamplingParams, chunk_index: int
    ) -> list[Completion]:
        """The static path's own decode loop (``_StaticDecoder``); compiled with CUDA graphs on CUDA only."""
        if self._decoder is None or self._decoder.model is not self.model:
            self._decoder = _StaticDecoder(
                self.model, compile=self.device.type == "cuda", grouped_attention=self.grouped_decode_attention
            )
        stops = [x for x in params.stop if x]
        tok = self.tokenizer

        def stop_check(ids: torch.Tensor, done: torch.Tensor) -> bool:
            if stops:  # stop strings: decode the unfinished rows, mark the ones that contain one
                flags = done.tolist()
                hit = [
                    r
                    for r, (row, d) in enumerate(zip(ids.tolist(), flags))
                    if not d and any(x in tok.decode(row, skip_special_tokens=True) for x in stops)
                ]
                if hit:
                    done[hit] = True
            elif params.ignore_eos:  # nothing can finish early: never sync
                return False
            return bool(done.all())

        prompt_len = enc["input_ids"].shape[1]
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=params.seed is not None):
            if params.seed is not None:
                torch.manual_seed(params.seed + chunk_index)
            out = self._decoder.run(
                enc["input_ids"],
                enc["attention_mask"],
                rows,
                max_new,
                cache_len=_round_up(prompt_len + max_new, self.pad_to_multiple_of),
                pad_id=self.tokenizer.pad_token_id,
                eos_ids=self.eos_ids,
                temperature=params.temperature,
                top_p=params.top_p,
                block_eos=params.ignore_eos,
                stop_check=stop_check,
            )
        return [self._finish(self._cut_at_stop(ids, stops), params) for ids in out[:rows].tolist()]

    def _decode_lean(
        self, ids: list[list[int]], max_new: int, params: SamplingParams, chunk_index: int, seeds: list[int] | None
    ) -> list[Completion]:
        """The CPU path (``LeanDecoder``): plain left padding, finished rows dropped as the batch goes; with a
        seed, one random stream per row (``_row_seeds``)."""
        from corecode.generation.lean_decode import LeanDecoder

        if self._lean is None or self._lean.model is not self.model:
            self._lean = LeanDecoder(self.model)
        enc = self.tokenizer.pad({"input_ids": ids}, padding=True, padding_side="left", return_tensors="pt").to(
            self.device
        )
        stops = [x for x in params.stop if x]
        tok = self.tokenizer

        def stop_check(so_far: torch.Tensor, finished: torch.Tensor) -> None:
            flags = finished.tolist()
            hit = [
                r
                for r, (row, d) in enumerate(zip(so_far.tolist(), flags))
                if not d and any(x in tok.decode(row, skip_special_tokens=True) for x in stops)
            ]
            if hit:
                finished[hit] = True

        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, enabled=params.seed is not None):
            if params.seed is not None:
                torch.manual_seed(params.seed + chunk_index)
            out = self._lean.run(
                enc["input_ids"],
                enc["attention_mask"],
                max_new,
                pad_id=tok.pad_token_id,
                eos_ids=self.eos_ids,
                temperature=params.temperature,
                top_p=params.top_p,
                block_eos=params.ignore_eos,
                stop_check=stop_check if stops else None,
                row_seeds=seeds,
            )
        return [self._finish(self._cut_at_stop(row, stops), params) for row in out.tolist()]

    def _cut_at_stop(self, ids: list[int], stops: list[str]) -> list[int]:
        """The shortest prefix of ``ids`` whose text contains a stop string (where ``generate``'s ``stop_strings``
        would have stopped), found by bisection; ``ids`` unchanged when none occurs."""
        if not stops:
            return ids
        has = lambda n: any(x in self.tokenizer.decode(ids[:n], skip_special_tokens=True) for x in stops)  # noqa: E731
        if not has(len(ids)):
            return ids
        lo, hi = 1, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if has(mid) else (mid + 1, hi)
        return ids[:lo]
