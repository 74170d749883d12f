"""Data parallelism of the two-role GRPO trainers under accelerate (DDP, FSDP2): one gradient all-reduce per update,
zero-advantage sequences skipped on every rank, and each rank's share of the host's cores (docs/gpu.md).

DDP: one gradient all-reduce per update. DDP's reducer all-reduces inside every backward pass, so an update of k
micro-batches would pay k all-reduces of the whole gradient; and every rank must run the same number of backward passes,
which skipping zero-advantage sequences (a different number on each rank) breaks. So the trainer accumulates an
update's passes under DDP's ``no_sync`` and calls :func:`all_reduce_gradients` once after the backward (DDP has no call
that reduces accumulated gradients on demand). With one model per role, ``grpo.<trainer>.overlap_allreduce`` instead
agrees the number of passes (:func:`agree_max`; a rank with fewer runs zero-weighted ones) and runs only the last with
DDP's reducer on (:class:`DDPAccumulation`), which all-reduces the accumulated gradient while that backward goes on;
not the default, since at the 1.5B shape the overlapped backward took longer than the two one after the other
(docs/gpu.md). With one base and an adapter per role, the wrapper's other adapter gets no gradient in a role's update,
so that case always reduces after the backward. DDP stays the wrapper either way (it broadcasts the initial weights and
accelerate expects it); its per-forward buffer broadcast must be off (``broadcast_buffers=False``: the trainer's
Accelerator sets it), or ranks that run different numbers of forward passes would pair mismatched broadcasts.
FSDP2 shards reduce-scatter inside backward (the gradients never exist whole), so there every rank runs the same number
of micro-batches: :func:`agree_max` gives the count, and a rank with fewer runs zero-weighted ones. By default each
micro-batch's backward reduce-scatters (and, unless ``reshard_after_forward`` is false, all-gathers again);
``grpo.<trainer>.fsdp_accumulate`` (:class:`FSDPAccumulation`) accumulates unsharded instead and reduce-scatters once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

import torch

BUCKET_BYTES = 256 << 20  # gradients flattened per all-reduce: large enough for bandwidth, small enough for memory


def buckets(items: Iterable, key: Callable, nbytes: Callable, limit: int) -> Iterator[list]:
    """``items`` in runs of consecutive items with one ``key`` and at most ``limit`` bytes (``nbytes`` of each; an
    item larger than ``limit`` makes a bucket of its own): what one flattened collective moves at a time."""
    bucket: list = []
    size = 0
    for item in items:
        n = nbytes(item)
        if bucket and (key(item) != key(bucket[0]) or size + n > limit):
            yield bucket
            bucket, size = [], 0
        bucket.append(item)
        size += n
    if bucket:
        yield bucket


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

    for bucket in buckets(grads, lambda g: (g.dtype, g.device), lambda g: g.numel() * g.element_size(), bucket_bytes):
        reduce(bucket)


def deal(items: list, ranks: int, rank: int, size: Callable[[object], int]) -> list:
    """``rank``'s share of ``items`` (``ranks`` times a share long): the items sorted by ``size``, largest first,
    dealt in snake order (ranks 0..R-1, then R-1..0, ...), so every rank gets as many items and about the same total
    size; within a share the items keep their order. Every rank computes the same deal (a stable sort). Under data
    parallelism the slowest rank sets a step's pace; ranks with about as much prompt to prefill and train wait less
    for each other than ranks given consecutive items. One rank: the items, unchanged."""

    def dealt_to(pos: int) -> int:  # the rank of the pos-th largest item: 0..R-1 in even rounds, R-1..0 in odd ones
        turn, seat = divmod(pos, ranks)
        return seat if turn % 2 == 0 else ranks - 1 - seat

    largest_first = sorted(range(len(items)), key=lambda i: -size(items[i]))
    mine = sorted(i for pos, i in enumerate(largest_first) if dealt_to(pos) == rank)
    return [items[i] for i in mine]


@torch.no_grad()
def gather_into(sources: list[torch.Tensor], targets: list[torch.Tensor], bucket_bytes: int = BUCKET_BYTES) -> None:
    """Copy each of ``sources`` whole into its target, in the target's dtype. FSDP2 shards (DTensors sharded on dim 0
    of a 1-D mesh) are cast to that dtype on their rank and gathered in buckets of at most ``bucket_bytes`` of this
    rank's shards, one all-gather per bucket; other DTensors go through ``full_tensor()``, plain tensors are copied.
    Every rank must call this with the same sources in the same order.

    Why by hand: ``DTensor.full_tensor()`` is one all-gather per parameter with its own padding and copies; for the
    ~340 trained parameters of the 1.5B shape that took 0.15-0.25 s a role on H100s (0.034 s in buckets), far more
    than the bytes cost, and torch has no call that gathers many DTensors at once. FSDP2's own ``unshard()`` would
    gather whole layers, frozen weights included (a LoRA model's base)."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor, Shard

    def sharded_rows(src) -> bool:
        return isinstance(src, DTensor) and src.device_mesh.ndim == 1 and tuple(src.placements) == (Shard(0),)

    def chunk(src) -> int:  # elements of one rank's chunk: FSDP2 splits dim 0 as torch.chunk does, ceil(rows / world)
        return -(-src.shape[0] // src.device_mesh.size()) * (src.numel() // src.shape[0])

    def gather(bucket: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        group = bucket[0][0].device_mesh.get_group()
        world = dist.get_world_size(group)
        spans = [chunk(src) for src, _ in bucket]
        flat = torch.empty(sum(spans), dtype=bucket[0][1].dtype, device=bucket[0][0].to_local().device)
        offset = 0
        for (src, _), span in zip(bucket, spans):  # this rank's rows, then padding up to the chunk (never read)
            local = src.to_local().reshape(-1)
            flat[offset : offset + local.numel()].copy_(local)
            offset += span
        out = flat.new_empty(world * flat.numel())
        dist.all_gather_into_tensor(out, flat, group=group)
        out, offset = out.view(world, -1), 0
        for (src, dst), span in zip(bucket, spans):  # rank r's chunk holds rows r*chunk.. of the whole tensor
            rows = out[:, offset : offset + span].reshape(-1, *src.shape[1:])
            dst.copy_(rows[: src.shape[0]])
            offset += span

    shards = []
    for src, dst in zip(sources, targets, strict=True):
        if sharded_rows(src) and src.shape[0]:
            shards.append((src, dst))
        else:
            dst.copy_(src.to(dst.dtype).full_tensor() if isinstance(src, DTensor) else src)
    for bucket in buckets(
        shards,
        key=lambda pair: (pair[0].device_mesh, pair[1].dtype),
        nbytes=lambda pair: chunk(pair[0]) * pair[1].element_size(),  # the padded chunk: every rank cuts alike
        limit=bucket_bytes,
    ):
        gather(bucket)


def agree_max(value: int, device: torch.device) -> int:
    """The largest ``value`` over all processes (one all-reduce of one integer; every rank must call it)."""
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.long, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


class AccumulationSchedule:
    """Gradient sync in only the last backward pass of an update: every pass but the last runs with the wrapper's
    sync off, so gradients accumulate locally, and the last turns it on, so the wrapper's collective reduces the
    accumulated gradient inside that backward (overlapped with it). Subclasses name the switch.

    The last pass must be known before it runs, so the update declares its passes: ``passes`` at construction (the
    ptx micro-batch), plus what :meth:`expect` adds (``policy_loss_backward``'s agreed micro-batches: wrap its
    ``agree``). Every rank runs the same passes, so every rank's last is the same. The switch is set for the next pass
    before its forward (DDP decides in the forward whether the backward reduces): on entering, on each declaration and
    after each backward.
    ``backward`` replaces the trainer's callable; used as a context manager, entering sets the switch for the first
    pass, leaving turns sync back on and checks that every declared pass ran. Hand-written: torch has the switches but
    no schedule over them, and accelerate's ``accumulate`` needs the step count up front as a fixed
    ``gradient_accumulation_steps``."""

    def __init__(self, model, backward: Callable[[torch.Tensor], None], passes: int = 0):
        self.model, self._backward = model, backward
        self.passes, self.done = passes, 0

    def expect(self, passes: int) -> int:
        """Declare ``passes`` more backward passes of this update; returns ``passes``."""
        self.passes += passes
        self._next()
        return passes

    def backward(self, loss: torch.Tensor) -> None:
        if self.done >= self.passes:
            raise RuntimeError(f"{type(self).__name__}: backward pass {self.done + 1} of an update of {self.passes}")
        self._backward(loss)
        self.done += 1
        self._next()

    def _next(self) -> None:
        """Set the switch for the pass about to run: sync only in the update's last."""
        self._sync(self.done == self.passes - 1)

    def _sync(self, on: bool) -> None:
        raise NotImplementedError

    def __enter__(self) -> AccumulationSchedule:
        self._next()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._sync(True)
        if exc_type is None and self.done != self.passes:
            raise RuntimeError(f"{type(self).__name__}: {self.done} backward passes of an update of {self.passes}")


class FSDPAccumulation(AccumulationSchedule):
    """One reduce-scatter per update on an FSDP2 model: every backward pass but the update's last runs with gradient
    sync and reshard-after-backward off (torch's ``FSDPModule.set_requires_gradient_sync`` and
    ``set_reshard_after_backward``), so gradients accumulate unsharded on each rank and the gathered weights stay for
    the next micro-batch; the last turns both on, and FSDP2 reduce-scatters the accumulated gradient with it. Costs the
    memory of the unsharded gradient (and weights) of the trained parameters for the update."""

    def _sync(self, on: bool) -> None:
        self.model.set_requires_gradient_sync(on)
        self.model.set_reshard_after_backward(on)


class DDPAccumulation(AccumulationSchedule):
    """One all-reduce per update on a DDP model, overlapped with the update's last backward: every pass but the last
    runs as under DDP's ``no_sync`` (``require_backward_grad_sync`` off, the flag ``no_sync`` sets), the last with
    DDP's reducer on, which all-reduces the accumulated gradient bucket by bucket while the backward goes on. Needs a
    wrapper whose every trainable parameter gets a gradient in the last pass (one model per role: with a shared base
    the other role's adapter gets none, and :func:`all_reduce_gradients` after the backward is used instead)."""

    def _sync(self, on: bool) -> None:
        self.model.require_backward_grad_sync = on


def local_processes() -> int:
    """Processes of this run on this host (``LOCAL_WORLD_SIZE``, set by accelerate launch / torchrun), else 1."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def host_share(cores: int | None = None, local: int | None = None) -> int:
    """Cores this process may use: those it may run on, divided among the host's processes of the run."""
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    return max(1, cores // (local or local_processes()))


def local_rank() -> int:
    """This process's index among the run's processes on this host: ``LOCAL_RANK`` (set by accelerate launch /
    torchrun), else ``CORECODE_LOCAL_RANK`` (processes started side by side without a launcher, as
    benchmarks/team_timing_pair.sh does: ``LOCAL_RANK`` would make accelerate expect a process group), else 0."""
    return int(os.environ.get("LOCAL_RANK", os.environ.get("CORECODE_LOCAL_RANK", "0")))


def own_cores(allowed: list[int], local: int, rank: int) -> list[int]:
    """The ``rank``-th of ``local`` equal runs of consecutive cores of ``allowed`` (sorted); every core where there are
    fewer cores than processes."""
    allowed = sorted(allowed)
    share = len(allowed) // local
    return allowed[rank * share : (rank + 1) * share] if share else allowed


def pin_to_own_cores(local: int | None = None, rank: int | None = None) -> list[int] | None:
    """With several processes per host, keep this rank, every thread it has and every process it forks later (its
    sandbox workers) to its own run of the host's cores (:func:`own_cores`), so that no rank's Python thread, which
    launches its GPU work, waits behind another rank's sandbox workers or threads. Returns the cores, None in one
    process. Written here because accelerate launch and torchrun bind no cores (numactl would have to wrap each rank's
    command) and a thread's affinity is its own: every thread already started is set one by one."""
    local = local or local_processes()
    if local <= 1:
        return None
    cores = own_cores(list(os.sched_getaffinity(0)), local, local_rank() if rank is None else rank)
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except (ProcessLookupError, PermissionError):  # a thread that ended meanwhile
            continue
    return cores


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
