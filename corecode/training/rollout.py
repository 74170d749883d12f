"""Rollouts (sampling with token ids) and the GRPO per-token policy loss for one role model.

Sampling is ``transformers``' ``generate`` on the policy being trained (the trainer needs the sampled token ids and
the live weights; ``corecode.generation``'s ``Completion`` is the returned record). The loss mirrors
``trl.GRPOTrainer._compute_loss`` for ``loss_type`` grpo / dapo / dr_grpo with TRL's own ``selective_log_softmax``
and ``entropy_from_logits``; it is re-stated here (not called) because TRL's version is a method bound to a single
trainer's state (one model, one accumulation window), while a team updates several models from nested groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from trl.trainer.utils import entropy_from_logits, pad, selective_log_softmax

from corecode.generation.base import Completion


@dataclass
class Sample:
    """One sampled completion with the token ids the loss needs."""

    prompt_ids: list[int]
    completion: Completion
    # Per-token log-probs under the policy that sampled it, kept when the batch serves several optimizer steps
    # (num_iterations > 1): the "old" policy of the clipped ratio.
    old_logps: torch.Tensor | None = None


def completion_ids(row: list[int], eos_ids: set[int], pad_id: int | None) -> tuple[list[int], str]:
    """Cut a generated row after its first stop token (kept, as TRL does) or drop trailing padding."""
    for j, t in enumerate(row):
        if t in eos_ids:
            return row[: j + 1], "stop"
    if pad_id is not None and pad_id not in eos_ids:
        while row and row[-1] == pad_id:
            row = row[:-1]
    return row, "length"


def check_vocabulary(model, tokenizer) -> None:
    """A model must have an embedding row for every token id its tokenizer produces (more rows are fine: the hub's
    checkpoints pad theirs): otherwise an id past the table ends a GPU run with a device-side assert, not an error."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        raise ValueError(
            f"tokenizer {name!r} has {len(tokenizer)} tokens but the model's embedding has {rows} rows: ids from "
            f"{rows} up would index past it; use the tokenizer saved with the checkpoint, or resize the embedding "
            "(model.resize_token_embeddings(len(tokenizer)))"
        )


@torch.no_grad()
def generate_chunks(
    model,
    tokenizer,
    prompts: Sequence[str],
    n: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    chunk_size: int = 16,
    do_sample: bool = True,
    static_cache: bool = False,
    lean_decode: bool | None = False,
    chat: bool | None = None,
    fixed_length: bool = False,
) -> Iterator[list[list[Sample]]]:
    """Yield, chunk by chunk of prompts, ``n`` samples per prompt (so a caller can score a chunk while the next one
    is generated). Left padding; the model's own RNG stream (torch global) drives sampling. ``lean_decode``
    samples with ``LeanDecoder`` instead of ``generate`` (None: on CPU only). ``prompts`` are role prompts, fed as
    evaluation feeds them (``corecode.generation.render``: the chat template when ``chat``, None = when the tokenizer
    has one) and cut where evaluation stops (EOS, the model's EOS ids, the template's end-of-turn token).
    ``fixed_length`` blocks every stop token, so each completion has ``max_new_tokens`` tokens (timing runs: every
    chunk, step and rank does the same work)."""
    from corecode.generation.attention_mask import mend_sdpa_masks
    from corecode.generation.lean_decode import LeanDecoder, lean_decode_wanted
    from corecode.generation.render import render_prompt, stop_token_ids, tokenize_rendered

    check_vocabulary(model, tokenizer)
    mend_sdpa_masks()  # left padding: no query row without a key (NaN on a GPU, see corecode.generation.attention_mask)
    was_training = model.training
    model.eval()
    eos_ids, pad_id = stop_token_ids(tokenizer, getattr(model, "generation_config", None)), tokenizer.pad_token_id
    extra = {"cache_implementation": "static"} if static_cache else {}
    lean = LeanDecoder(model) if lean_decode_wanted(model, lean_decode) else None
    try:
        for start in range(0, len(prompts), chunk_size):
            chunk = [render_prompt(tokenizer, p, chat) for p in prompts[start : start + chunk_size]]
            enc = _left_padded(tokenizer, tokenize_rendered(tokenizer, chunk), static_cache).to(model.device)
            if lean is not None:
                rows = enc["input_ids"].repeat_interleave(n, 0), enc["attention_mask"].repeat_interleave(n, 0)
                gen = lean.run(
                    *rows,
                    max_new_tokens,
                    pad_id=pad_id,
                    eos_ids=eos_ids,
                    temperature=temperature if do_sample else 0.0,
                    top_p=top_p,
                    block_eos=fixed_length,
                ).tolist()
            else:
                out = model.generate(
                    **enc,
                    max_new_tokens=max_new_tokens,
                    do_sample=do_sample,
                    num_return_sequences=n,
                    temperature=temperature if do_sample else None,
                    top_p=top_p if do_sample else None,
                    top_k=None,
                    pad_token_id=pad_id,
                    eos_token_id=sorted(eos_ids),
                    min_new_tokens=max_new_tokens if fixed_length else None,
                    **extra,
                )
                gen = out[:, enc["input_ids"].shape[1] :].tolist()
            yield _sample_groups(tokenizer, enc, gen, n, eos_ids, pad_id)
    finally:
        model.train(was_training)


def _left_padded(tokenizer, input_ids: list[list[int]], static_cache: bool):
    """A chunk's prompt ids padded on the left into one batch."""
    # A static cache is compiled per shape: pad prompt lengths to a multiple of 64 to bound recompiles.
    return tokenizer.pad(
        {"input_ids": input_ids},
        return_tensors="pt",
        padding=True,
        padding_side="left",
        pad_to_multiple_of=64 if static_cache else None,
    )


def _sample_groups(tokenizer, enc, gen: list[list[int]], n: int, eos_ids, pad_id) -> list[list[Sample]]:
    """A chunk's generated rows (``n`` a prompt, prompt-major) as one group of samples a prompt, each completion cut
    after its first stop token and the prompt's padding dropped."""
    prompt_rows = [ids[m.bool()].tolist() for ids, m in zip(enc["input_ids"], enc["attention_mask"])]
    groups: list[list[Sample]] = []
    for i, p_ids in enumerate(prompt_rows):
        group = []
        for j in range(n):
            ids, finish = completion_ids(gen[i * n + j], eos_ids, pad_id)
            text = tokenizer.decode(ids, skip_special_tokens=True)
            group.append(Sample(p_ids, Completion(text, len(ids), ids, finish)))
        groups.append(group)
    return groups


def collate(samples: Sequence[Sample], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Left-padded prompts + right-padded completions, as TRL lays out a GRPO batch."""
    prompts = [torch.tensor(s.prompt_ids, dtype=torch.long) for s in samples]
    completions = [torch.tensor(s.completion.token_ids or [pad_id], dtype=torch.long) for s in samples]
    # An empty completion is padded to one token that the mask leaves out of the loss.
    completion_masks = [
        torch.ones(len(s.completion.token_ids), dtype=torch.long)
        if s.completion.token_ids
        else torch.zeros(1, dtype=torch.long)
        for s in samples
    ]
    return {
        "prompt_ids": pad(prompts, pad_id, "left").to(device),
        "prompt_mask": pad([torch.ones_like(ids) for ids in prompts], 0, "left").to(device),
        "completion_ids": pad(completions, pad_id, "right").to(device),
        "completion_mask": pad(completion_masks, 0, "right").to(device),
    }


def per_token_logps(model, batch: dict[str, torch.Tensor], temperature: float = 1.0, with_entropy: bool = False):
    """Log-probs (and entropies) of the completion tokens, like TRL's ``_get_per_token_logps_and_entropies``.
    Position ids follow the attention mask so left-padded rows see the positions generation used."""
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    n = batch["completion_ids"].shape[1]
    logits = model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
    ).logits
    logits = logits[:, -n - 1 : -1, :] / temperature
    logps = selective_log_softmax(logits, batch["completion_ids"])
    entropies = entropy_from_logits(logits.detach()) if with_entropy else None
    return logps, entropies


def eval_batches(
    model, samples: Sequence[Sample], pad_id: int, micro_batch_size: int
) -> Iterator[dict[str, torch.Tensor]]:
    """``samples`` collated in micro-batches on ``model``'s device, the model in eval mode (no dropout) meanwhile and
    in its own mode again after the last batch: the loop of the no-grad scoring passes below."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(samples), micro_batch_size):
            yield collate(samples[start : start + micro_batch_size], pad_id, device)
    finally:
        model.train(was_training)


@torch.no_grad()
def completion_logprob_means(
    model, tokenizer, rows: Sequence[tuple[str, str]], chat: bool, micro_batch_size: int
) -> torch.Tensor:
    """Mean per-token log-probability of each (prompt, completion) row's completion under ``model``, the row
    tokenized as the SFT stage tokenizes it (``corecode.generation.render.sft_example``: the end token included).
    No-grad forwards in micro-batches; one float a row, on the CPU."""
    from corecode.generation.render import completion_end_id, sft_example

    end = completion_end_id(tokenizer, chat)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    samples = []
    for prompt, completion in rows:
        ex = sft_example(tokenizer, prompt, completion, chat, end)
        cut = ex["completion_mask"].index(1)
        ids = ex["input_ids"]
        samples.append(Sample(ids[:cut], Completion(completion, len(ids) - cut, ids[cut:])))
    out = []
    for batch in eval_batches(model, samples, pad_id, micro_batch_size):
        logps, _ = per_token_logps(model, batch)
        mask = batch["completion_mask"].float()
        out.append(((logps.float() * mask).sum(1) / mask.sum(1).clamp(min=1)).cpu())
    return torch.cat(out) if out else torch.zeros(0)


@torch.no_grad()
def mean_token_entropy(
    model, samples: Sequence[Sample], pad_id: int, micro_batch_size: int, temperature: float = 1.0
) -> float:
    """Mean per-token entropy (nats) of ``model``'s next-token distribution over the completion tokens of
    ``samples``, at ``temperature`` (the distribution the samples were drawn from); 0.0 for no tokens. One no-grad
    forward pass per micro-batch: it measures a role's sampling diversity whether or not the role is updated (the loss's
    entropy covers only the sequences it runs)."""
    total, tokens = 0.0, 0
    for batch in eval_batches(model, samples, pad_id, micro_batch_size):
        _, entropies = per_token_logps(model, batch, temperature, with_entropy=True)
        mask = batch["completion_mask"].float()
        total += float((entropies.float() * mask).sum())
        tokens += int(mask.sum())
    return total / tokens if tokens else 0.0


@dataclass
class LossConfig:
    loss_type: str = "grpo"
    beta: float = 0.0
    epsilon_low: float = 0.2
    epsilon_high: float = 0.2
    temperature: float = 1.0
    max_completion_length: int = 256


def policy_loss_backward(
    model,
    samples: Sequence[Sample],
    advantages: torch.Tensor,
    cfg: LossConfig,
    pad_id: int,
    micro_batch_size: int,
    ref_model=None,
    backward=None,
    skip_zero_advantage: bool = False,
    record_old: bool = False,
    agree: Callable[[int], int] | None = None,
) -> dict[str, float]:
    """Accumulate the gradient of TRL's GRPO loss over micro-batches of ``samples`` (one optimizer step's worth).

    Normalisers span the whole set, so the accumulated gradient equals one full-batch step: grpo = mean over
    sequences of per-sequence token means; dapo = sum over tokens / all tokens; dr_grpo = sum / (B * max length).
    Returns the loss, KL and entropy (token means) for logging.

    ``skip_zero_advantage``: sequences whose advantage is exactly 0 (groups where every sample scored the same: most
    groups of a sharp policy) contribute nothing to the gradient when there is no KL term, so their forward and
    backward passes are skipped; the normalisers still count them, so the gradient is the same. TRL computes them
    anyway. Without KL only; entropy is then the token mean over the sequences that were run. Ranks that must run the
    same number of forward/backward passes (FSDP: each one is a collective) pass ``agree``, which maps this rank's
    number of micro-batches to the number every rank runs (the largest); the difference is run as micro-batches of one
    sequence whose loss is multiplied by 0 (the same collectives, no gradient, left out of the statistics). Under DDP
    the trainer accumulates without synchronising and all-reduces once (``data_parallel``), so ranks may differ.

    Several optimizer steps on one batch (TRL's ``num_iterations``): the first call passes ``record_old`` and keeps
    each run sample's log-probs (before any update: the sampling policy) in ``Sample.old_logps``; later calls find
    them there and the ratio is taken against them, as TRL's ``old_per_token_logps``.
    """
    backward = backward or (lambda loss: loss.backward())
    device = next(model.parameters()).device
    total_seqs = len(samples)
    total_tokens = max(1, sum(len(s.completion.token_ids or []) for s in samples))
    # summed on the device and read once at the end: no host-device synchronisation per micro-batch
    sums = {k: torch.zeros((), device=device) for k in ("loss", "kl", "entropy")}
    order = list(range(total_seqs))
    skip = skip_zero_advantage and not cfg.beta
    if skip:
        order = [i for i in order if float(advantages[i]) != 0.0]
    run_tokens = max(1, sum(len(samples[i].completion.token_ids or []) for i in order)) if skip else total_tokens
    chunks = [order[start : start + micro_batch_size] for start in range(0, len(order), micro_batch_size)]
    runs = agree(len(chunks)) if agree is not None else len(chunks)
    for k in range(runs):
        real = k < len(chunks)
        idx = chunks[k] if real else [0]
        part = [samples[i] for i in idx]
        batch = collate(part, pad_id, device)
        mask = batch["completion_mask"].float()
        adv = advantages[idx].to(device).float().unsqueeze(1)
        logps, entropies = per_token_logps(model, batch, cfg.temperature, with_entropy=True)
        old = _old_logps(samples, idx, logps, mask, record_old and real)
        coef_1 = torch.exp(logps - old)
        coef_2 = torch.clamp(coef_1, 1 - cfg.epsilon_low, 1 + cfg.epsilon_high)
        per_token_loss = -torch.min(coef_1 * adv, coef_2 * adv)
        if cfg.beta:
            with torch.no_grad():
                ref_logps, _ = per_token_logps(ref_model, batch, cfg.temperature)
            kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
            per_token_loss = per_token_loss + cfg.beta * kl
            if real:
                sums["kl"] += (kl.detach() * mask).sum() / total_tokens
        loss = _normalised_loss(per_token_loss, mask, cfg, total_seqs, total_tokens)
        if not real:  # a padding micro-batch: the collectives of a forward/backward, no gradient
            backward(loss * 0.0)
            continue
        backward(loss)
        sums["loss"] += loss.detach()
        sums["entropy"] += (entropies.detach() * mask).sum() / run_tokens
    if skip:  # every advantage 0: keep the optimizer step identical to a zero gradient (AdamW skips grad=None)
        for p in model.parameters():
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
    stats = {k: float(v) for k, v in sums.items()}
    return stats


def _old_logps(samples: Sequence[Sample], idx: list[int], logps: torch.Tensor, mask: torch.Tensor, record: bool):
    """The sampling policy's per-token log-probs for the micro-batch ``idx``: those kept in ``Sample.old_logps`` by
    an earlier call on the same batch, else ``logps`` itself (detached), kept there when ``record``."""
    if all(samples[i].old_logps is not None for i in idx):
        old = torch.zeros_like(logps)
        for j, i in enumerate(idx):
            old[j, : len(samples[i].old_logps)] = samples[i].old_logps.to(logps.device)
        return old
    old = logps.detach()  # first step on this batch: the ratio is 1 (TRL's shortcut for num_iterations=1)
    if record:
        lengths = mask.sum(-1).clamp(min=1).tolist()
        for j, i in enumerate(idx):
            samples[i].old_logps = old[j, : int(lengths[j])].cpu()
    return old


def _normalised_loss(
    per_token_loss: torch.Tensor, mask: torch.Tensor, cfg: LossConfig, total_seqs: int, total_tokens: int
) -> torch.Tensor:
    """A micro-batch's share of the whole set's loss under ``cfg.loss_type`` (normalisers span the whole set)."""
    if cfg.loss_type == "grpo":
        return ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).sum() / total_seqs
    if cfg.loss_type == "dapo":
        return (per_token_loss * mask).sum() / total_tokens
    if cfg.loss_type == "dr_grpo":
        return (per_token_loss * mask).sum() / (total_seqs * cfg.max_completion_length)
    raise ValueError(f"grpo.loss_type must be grpo, dapo or dr_grpo, got {cfg.loss_type!r}")
