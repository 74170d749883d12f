"""Per-step, per-rank phase timings of the two-role GRPO trainers (docs/gpu.md, "Reading the phase timings").

A step is cut into phases: each role's generation, scoring (the wait for the sandbox's results: a chunk is scored while
the next one is generated, so this is what generation did not hide), waiting for the slowest rank (the collectives that
gather the rollout metrics), each role's forward/backward, gradient all-reduce, optimizer step and refresh of its
sampling copy. ``PhaseTimer.phase(name, device)`` brackets one;
a phase entered several times in a step (one generation call per chunk, one update per ``num_iterations``) adds up.
The time between two steps (rank 0 writing the log and MLflow, evaluation, checkpoints) is reported in the next step's
row as ``log_checkpoint`` (outside ``step``).

How a phase is timed. On a CUDA device: two CUDA events recorded on the device's current stream at the phase's start
and end, all read after one synchronisation per device at the end of the step (``finish``), so the timer adds no
host-device synchronisation inside a step. An event is stamped when the GPU reaches it, so a phase's time is the span of
the GPU timeline between its boundaries: GPU work the host queued in a phase counts in that phase even when it ran after
the host had moved on, and host-only work (the sandbox wait) counts because the GPU reaches the end event only after
the host recorded it. Elsewhere (CPU) ``time.perf_counter`` around the phase. A step's phases are disjoint on one
device, so with the step time taken after ``finish`` they sum to at most the step time; the rest is Python between
phases (building prompts and batches, the trainer's bookkeeping). Phases of two devices in one process (roles on two
GPUs) may overlap.

Written here because neither accelerate nor TRL times phases (TRL logs per-step totals); ``torch.profiler`` records
every kernel, far more than a run can keep for each of its steps.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch

_END = object()


class PhaseTimer:
    """Accumulates phase durations between ``start()`` and ``finish()``; outside a step ``phase`` times nothing."""

    def __init__(self) -> None:
        self._open = False
        self._host: dict[str, float] = {}
        self._events: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []
        self._devices: set[torch.device] = set()

    def start(self) -> None:
        self._open = True
        self._host, self._events, self._devices = {}, [], set()

    @contextmanager
    def phase(self, name: str, device: torch.device | str | None = None) -> Iterator[None]:
        if not self._open:
            yield
            return
        dev = torch.device(device) if device is not None else None
        # also a named range for torch.profiler (benchmarks/step_profile.py reads it; about a microsecond otherwise)
        with torch.profiler.record_function(f"phase/{name}"):
            if dev is not None and dev.type == "cuda":
                stream = torch.cuda.current_stream(dev)
                begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record(stream)
                try:
                    yield
                finally:
                    end.record(stream)
                    self._events.append((name, begin, end))
                    self._devices.add(dev)
            else:
                t = time.perf_counter()
                try:
                    yield
                finally:
                    self._host[name] = self._host.get(name, 0.0) + time.perf_counter() - t

    def timed(self, name: str, items: Iterable, device: torch.device | str | None = None) -> Iterator:
        """Yield from ``items`` with the time spent producing each item counted in phase ``name`` (a generator of
        generation chunks: the caller's work between chunks is not counted)."""
        it = iter(items)
        while True:
            with self.phase(name, device):
                item = next(it, _END)
            if item is _END:
                return
            yield item

    def finish(self) -> dict[str, float]:
        """Seconds per phase of this step (one synchronisation per CUDA device used); closes the step."""
        for dev in self._devices:
            torch.cuda.synchronize(dev)
        out = dict(self._host)
        for name, begin, end in self._events:
            out[name] = out.get(name, 0.0) + begin.elapsed_time(end) / 1000.0
        self._open = False
        self._host, self._events, self._devices = {}, [], set()
        return out


def phase_names(roles: Sequence[str]) -> list[str]:
    """The phases a two-role trainer reports, in log order (every rank reports each one, 0 when it did not run)."""
    names = [f"{role}_generation" for role in roles] + ["scoring", "wait"]
    for role in roles:
        names += [f"{role}_backward", f"{role}_allreduce", f"{role}_optimizer", f"{role}_sampler_sync"]
    return names + ["log_checkpoint"]


def rank_times(accelerator, names: Sequence[str], times: dict[str, float], step_s: float) -> dict[str, float]:
    """Every rank's phase times and step time as log keys ``time/rank{R}/{phase}_s`` (and ``time/rank{R}/step_s``):
    one all-gather of a small tensor (a collective every rank calls once per step); none in one process."""
    values = torch.tensor([times.get(n, 0.0) for n in names] + [step_s], dtype=torch.float64)
    if accelerator.num_processes > 1:
        values = accelerator.gather(values.to(accelerator.device)).cpu()
    table = values.view(-1, len(names) + 1)
    keys = [*names, "step"]
    return {f"time/rank{r}/{k}_s": float(table[r, i]) for r in range(table.shape[0]) for i, k in enumerate(keys)}
