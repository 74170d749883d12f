"""``LeanDecoder``: sampling for Llama/Qwen2-shaped decoders without ``generate``'s per-token overhead (CPU and GPU).

Why it exists: for the embedded default (a 2M-parameter Qwen2) a decode step of 32 rows is about 2 ms of matrix work,
but ``model.generate`` spends another 6-8 ms per token in Python (logits processors, stopping criteria, cache
objects, mask building in every layer), and ``torch.compile`` removes that only after a 25-30 s cold compile per
shape on this CPU (docs/benchmarks.md, "CPU decoding"). Neither transformers nor TRL has an eager decode loop that
skips this machinery, so this one is written here; it is kept small by reusing the model's own modules (projections,
norms, MLP, rotary embedding and ``apply_rotary_pos_emb``): only the attention over our preallocated KV buffers and
the loop are new. Rows that finish are dropped from the batch (their KV rows too) once a quarter of it is done,
so a batch costs its live rows, not its longest row.

The prompt is prefilled by the model's own forward (transformers' masks and attention), so only the one-token decode
step is re-stated; tests check its logits against the model's forward and its greedy output against ``generate``.

On a GPU the same loop is launch-bound instead: a 1.5B Qwen2 step is about 1,500 kernels (more with LoRA adapters),
each launched from Python, so a 16-row step took 45-90 ms where the weights take under 1 ms to read (2x H200,
2026-11-27, docs/benchmarks.md). There the step runs with fixed shapes (attention over the whole KV buffer under the
keep-mask, the new K/V written at a slot held in a tensor, no compaction) and is recorded once per ``run`` as a CUDA
graph (``_GraphedStep``), then replayed each token: no compile, so no minutes-long first step as with the static
cache's ``torch.compile``. Sampling stays outside the graph (it may draw from per-row streams).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from corecode.generation.hf import pick_tokens
from corecode.models.factory import decoder_parts

# Compact the batch (drop finished rows from the KV buffers) once this fraction of its rows is finished: copying the
# buffers costs about one decode step, so compacting after every finished row would cost more than it saves.
_COMPACT_AT = 0.25
# Steps between two looks at stop strings (decoding text is slow); EOS is checked every step.
_STOP_EVERY = 16


class LeanDecoder:
    """Sample continuations of left-padded prompts with one model, on its device: on a CPU an eager loop that drops
    finished rows, on a GPU fixed-shape steps replayed from a CUDA graph."""

    def __init__(self, model, graphs: bool | None = None):
        """``graphs``: fixed-shape steps recorded as a CUDA graph (None: when the model is on a GPU; False on a GPU
        runs the eager loop, True on a CPU runs the fixed-shape step eagerly, which tests use)."""
        parts = decoder_parts(model)
        if parts is None or not self.supports(model):
            raise ValueError(f"LeanDecoder does not support {type(model).__name__}")
        self.model = model
        self.graphs = graphs
        self.base, self.inner = parts
        attn = self.inner.layers[0].self_attn
        self.apply_rope = sys.modules[type(attn).__module__].apply_rotary_pos_emb
        # transformers >= 5.x renames the forward's cache argument (``past_key_values`` -> ``cache``)
        self.cache_kw = "cache" if "cache" in inspect.signature(self.base.forward).parameters else "past_key_values"

    @staticmethod
    def supports(model) -> bool:
        """Decoder-only, full causal attention in every layer, Llama-style layers (q/k/v/o projections, pre-norms,
        one MLP module) and a rotary embedding on the decoder stack: Qwen2, Qwen3, Llama, Mistral without windows."""
        parts = decoder_parts(model)
        cfg = getattr(model, "config", None)
        if parts is None or cfg is None or getattr(cfg, "is_encoder_decoder", False):
            return False
        _, inner = parts
        if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
            return False
        if getattr(cfg, "sliding_window", None) and getattr(cfg, "use_sliding_window", True):
            return False
        if not hasattr(inner, "rotary_emb") or not hasattr(inner, "norm"):
            return False
        layer = inner.layers[0]
        attn = getattr(layer, "self_attn", None)
        needed = ("q_proj", "k_proj", "v_proj", "o_proj", "head_dim", "scaling")
        if attn is None or not all(hasattr(attn, n) for n in needed):
            return False
        if not (
            hasattr(layer, "input_layernorm") and hasattr(layer, "post_attention_layernorm") and hasattr(layer, "mlp")
        ):
            return False
        return hasattr(sys.modules[type(attn).__module__], "apply_rotary_pos_emb")

    # ---------------------------------------------------------------------------------------------------- one step
    def step(
        self,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        slot: int | torch.Tensor,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
        keep: torch.Tensor,
    ) -> torch.Tensor:
        """Logits [rows, vocab] for one new token per row at ``positions``; its K/V are written at buffer ``slot``
        and attention sees the buffer slots up to ``slot`` where ``keep`` is True. ``slot`` as a one-element tensor
        gives the fixed-shape step a CUDA graph can record: the write indexes by the tensor and attention spans the
        whole buffer (``keep`` is False past ``slot``), so no shape depends on the step."""
        rows = tokens.shape[0]
        x = self.inner.embed_tokens(tokens)[:, None, :]  # [rows, 1, hidden]
        cos, sin = self.inner.rotary_emb(x, positions[:, None])
        fixed = isinstance(slot, torch.Tensor)
        span = keys[0].shape[2] if fixed else slot + 1
        mask = keep[:, None, None, :span]
        for layer, k_buf, v_buf in zip(self.inner.layers, keys, values):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            shape = (rows, 1, -1, attn.head_dim)
            q = attn.q_proj(h).view(shape).transpose(1, 2)  # [rows, heads, 1, head_dim]
            k = attn.k_proj(h).view(shape).transpose(1, 2)
            v = attn.v_proj(h).view(shape).transpose(1, 2)
            if hasattr(attn, "q_norm"):  # Qwen3
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = self.apply_rope(q, k, cos, sin)
            if fixed:
                k_buf.index_copy_(2, slot, k)
                v_buf.index_copy_(2, slot, v)
            else:
                k_buf[:, :, slot] = k[:, :, 0]
                v_buf[:, :, slot] = v[:, :, 0]
            n_kv = k_buf.shape[1]
            # One query token: the query heads of a KV group become that group's query positions, so grouped-query
            # attention needs no repeated K/V (see hf._grouped_decode_attention).
            out = F.scaled_dot_product_attention(
                q.reshape(rows, n_kv, -1, attn.head_dim),
                k_buf[:, :, :span],
                v_buf[:, :, :span],
                attn_mask=mask,
                scale=attn.scaling,
            )
            x = x + attn.o_proj(out.reshape(rows, 1, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.base.lm_head(self.inner.norm(x))[:, 0].float()

    def prefill(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, max_new: int):
        """Run the prompts through the model's own forward; return last logits, KV buffers with room for
        ``max_new`` tokens, the attention keep-mask over the buffers and each row's next position."""
        rows, plen = input_ids.shape
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        logits = (
            self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
                **{self.cache_kw: cache},
            )
            .logits[:, -1]
            .float()
        )
        keys, values = [], []
        for layer in cache.layers:
            k = layer.keys.new_zeros(rows, layer.keys.shape[1], plen + max_new, layer.keys.shape[-1])
            v = layer.values.new_zeros(rows, layer.values.shape[1], plen + max_new, layer.values.shape[-1])
            k[:, :, :plen], v[:, :, :plen] = layer.keys, layer.values
            keys.append(k)
            values.append(v)
        keep = torch.zeros(rows, plen + max_new, dtype=torch.bool, device=input_ids.device)
        keep[:, :plen] = attention_mask.bool()
        return logits, keys, values, keep, positions[:, -1] + 1

    # ----------------------------------------------------------------------------------------------------- the loop
    @torch.no_grad()
    def run(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        max_new: int,
        pad_id: int,
        eos_ids: set[int],
        temperature: float,
        top_p: float,
        block_eos: bool = False,
        stop_check: Callable[[torch.Tensor, torch.Tensor], None] | None = None,
        row_seeds: Sequence[int] | None = None,
    ) -> torch.Tensor:
        """Generated ids [rows, <= max_new], ``pad_id`` after a row's EOS. Sampling is ``hf.pick_tokens`` (the
        distribution ``generate`` samples) with the torch global RNG, or with ``row_seeds``: one random stream per
        row (common random numbers). A row's sample then depends only on its seed, prompt and model, not on the
        batch it shares or on when other rows finish; two models sampled with the same seeds draw the same noise,
        so a paired comparison of the two sees their differences rather than sampling noise (see the README).
        ``stop_check(ids_so_far, finished)`` may mark rows finished (stop strings); it sees every original row."""
        rows, plen = input_ids.shape
        dev = input_ids.device
        out = torch.full((rows, max(max_new, 0)), pad_id, dtype=torch.long, device=dev)
        if max_new < 1:
            return out
        was_training = self.model.training
        self.model.eval()
        try:
            logits, keys, values, keep, positions = self.prefill(input_ids, attention_mask, max_new)
            is_eos = torch.zeros(logits.shape[-1], dtype=torch.bool, device=dev)
            is_eos[[i for i in eos_ids if i < logits.shape[-1]]] = True
            streams = None
            if row_seeds is not None and temperature > 0:
                if len(row_seeds) != rows:
                    raise ValueError(f"row_seeds: {len(row_seeds)} seeds for {rows} rows")
                streams = [torch.Generator(device=dev).manual_seed(int(x)) for x in row_seeds]
            vocab = logits.shape[-1]

            def uniforms(buffer_rows: torch.Tensor) -> torch.Tensor | None:
                if streams is None:
                    return None
                return torch.stack([torch.rand(vocab, generator=streams[r], device=dev) for r in buffer_rows.tolist()])

            live = torch.arange(rows, device=dev)  # original row of each buffer row
            fixed = self.graphs if self.graphs is not None else dev.type == "cuda"
            graphed = _GraphedStep(self, keys, values, keep) if fixed else None
            tok = pick_tokens(logits, temperature, top_p, is_eos, block_eos, uniforms(live), eager=True)
            out[:, 0] = tok
            finished = is_eos[tok]  # per original row
            n = 1
            for i in range(1, max_new):
                if stop_check is not None and i % _STOP_EVERY == 0:
                    stop_check(out[:, :i], finished)
                done_live = finished[live]
                if bool(done_live.all()):
                    break
                if graphed is None and done_live.float().mean() >= _COMPACT_AT:  # fixed shapes: finished rows go on
                    idx = (~done_live).nonzero().squeeze(1)
                    keys, values = [k[idx] for k in keys], [v[idx] for v in values]
                    keep, positions, tok, live = keep[idx], positions[idx], tok[idx], live[idx]
                slot = plen + i - 1
                keep[:, slot] = True
                if graphed is None:
                    logits = self.step(tok, positions, slot, keys, values, keep)
                else:
                    logits = graphed(tok, positions, slot)
                positions = positions + 1
                tok = pick_tokens(logits, temperature, top_p, is_eos, block_eos, uniforms(live), eager=True)
                tok = torch.where(finished[live], pad_id, tok)
                out[live, i] = tok
                finished[live] |= is_eos[tok]
                n = i + 1
        finally:
            self.model.train(was_training)
        return out[:, :n]


class _GraphedStep:
    """``LeanDecoder.step`` with fixed shapes over one ``run``'s KV buffers, recorded as a CUDA graph on its first call
    and replayed after (on a CPU it runs eagerly). Inputs are copied into static tensors the graph reads; the logits it
    returns are overwritten by the next call. Written here because torch's ``make_graphed_callables`` is for
    autograd modules and ``torch.compile(mode="reduce-overhead")`` compiles for minutes at a 1.5B shape."""

    def __init__(self, decoder: LeanDecoder, keys: list[torch.Tensor], values: list[torch.Tensor], keep: torch.Tensor):
        self.decoder, self.keys, self.values, self.keep = decoder, keys, values, keep
        rows, dev = keep.shape[0], keep.device
        self.tokens = torch.zeros(rows, dtype=torch.long, device=dev)
        self.positions = torch.zeros(rows, dtype=torch.long, device=dev)
        self.slot = torch.zeros(1, dtype=torch.long, device=dev)
        self.graph = None
        self.logits: torch.Tensor | None = None

    def _step(self) -> torch.Tensor:
        return self.decoder.step(self.tokens, self.positions, self.slot, self.keys, self.values, self.keep)

    def __call__(self, tokens: torch.Tensor, positions: torch.Tensor, slot: int) -> torch.Tensor:
        self.tokens.copy_(tokens)
        self.positions.copy_(positions)
        self.slot.fill_(slot)
        dev = self.keep.device
        if dev.type != "cuda":
            return self._step()
        # Everything on the decoder's own GPU, which need not be the current device (the roles on two GPUs in one
        # process): torch.cuda.graph's default capture stream is one per process, made on whichever device was
        # current at the first capture, so a model on another GPU is captured on its own stream instead.
        with torch.cuda.device(dev):
            if self.graph is not None:
                self.graph.replay()
                return self.logits
            # The first call computes this token on a side stream (CUDA's recipe: lazy initialisations such as
            # cuBLAS workspaces must not happen during capture), then records the graph, which capture does not run.
            side = torch.cuda.Stream(device=dev)
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                logits = self._step()
            torch.cuda.current_stream(dev).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, stream=side, capture_error_mode="thread_local"):
                self.logits = self._step()
        return logits


def lean_decode_wanted(model, setting: bool | None) -> bool:
    """A rollout ``lean_decode`` setting (``grpo.team.lean_decode``, ``grpo.single.lean_decode``) resolved for
    ``model``: null (auto) on CPU only, true wherever ``LeanDecoder`` supports the model, false never."""
    wanted = setting if setting is not None else model.device.type == "cpu"
    return bool(wanted) and LeanDecoder.supports(model)
