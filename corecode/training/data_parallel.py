"""Data parallelism of the two-role GRPO trainers under accelerate (DDP, FSDP2): one gradient all-reduce per update,
zero-advantage sequences skipped on every rank, and each rank's share of the host's cores (docs/gpu.md).

Why the DDP gradient all-reduce is called here and not left to DDP's reducer: DDP all-reduces inside every backward
pass, so an update of k micro-batches paid k all-reduces of the whole gradient, and it needs every rank to run the same
number of backward passes, which skipping zero-advantage sequences (a different number on each rank) breaks. The
trainer accumulates an update's micro-batches under DDP's ``no_sync`` and calls :func:`all_reduce_gradients` once;
DDP has no call that reduces accumulated gradients on demand. DDP stays the wrapper (it broadcasts the initial weights
and accelerate expects it); its per-forward buffer broadcast must be off (``broadcast_buffers=False``: the trainer's
Accelerator sets it), or ranks that run different numbers of forward passes would pair mismatched broadcasts.
FSDP2 shards reduce-scatter inside backward (the gradients never exist whole), so there every rank runs the same number
of micro-batches: :func:`agree_max` gives the count, and a rank with fewer runs zero-weighted ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import torch

BUCKET_BYTES = 256 << 20  # gradients flattened per all-reduce: large enough for bandwidth, small enough for memory


def all_reduce_gradients(params: Iterable[torch.nn.Parameter], bucket_bytes: int = BUCKET_BYTES) -> None:
    """Average ``params``' gradients over all processes, in place: flattened into buckets of at most ``bucket_bytes``
    (one dtype and device each), one all-reduce (sum, then divide by the world size: gloo has no average) per bucket.
    A parameter without a gradient (a rank that ran no micro-batch) takes part with zeros, so every rank reduces the
    same buffers in the same order. Every rank must call this with the same parameters."""
    import torch.distributed as dist

    world = dist.get_world_size()
    grads = []
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        grads.append(param.grad)

    def reduce(bucket: list[torch.Tensor]) -> None:
        flat = torch.cat([g.reshape(-1) for g in bucket])
        dist.all_reduce(flat)
        flat.div_(world)
        offset = 0
        for g in bucket:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    bucket: list[torch.Tensor] = []
    size = 0
    for g in grads:
        nbytes = g.numel() * g.element_size()
        if bucket and (g.dtype != bucket[0].dtype or g.device != bucket[0].device or size + nbytes > bucket_bytes):
            reduce(bucket)
            bucket, size = [], 0
        bucket.append(g)
        size += nbytes
    if bucket:
        reduce(bucket)


def agree_max(value: int, device: torch.device) -> int:
    """The largest ``value`` over all processes (one all-reduce of one integer; every rank must call it)."""
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.long, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def local_processes() -> int:
    """Processes of this run on this host (``LOCAL_WORLD_SIZE``, set by accelerate launch / torchrun), else 1."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def host_share(cores: int | None = None, local: int | None = None) -> int:
    """Cores this process may use: those it may run on, divided among the host's processes of the run."""
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(1, cores // (local or local_processes()))


def take_host_share(sandbox_params, local: int | None = None, cores: int | None = None):
    """With several processes per host, keep this rank to its share of the cores: at most ``share`` torch threads and
    ``share - 1`` sandbox workers (one core left for the rank's own Python), where ``sandbox.workers`` asks for more.
    Returns the sandbox parameters to use (unchanged in one process)."""
    local = local or local_processes()
    if local <= 1:
        return sandbox_params
    share = host_share(cores, local)
    if torch.get_num_threads() > share:
        torch.set_num_threads(share)
    workers = min(sandbox_params.workers, max(1, share - 1))
    if workers == sandbox_params.workers:
        return sandbox_params
    return sandbox_params.model_copy(update={"workers": workers})
