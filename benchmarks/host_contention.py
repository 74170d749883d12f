"""What a host gives several GPUs at once, before any training: the same four workloads on 1 GPU alone and then on 2
(and 4) GPUs at the same moment, one process per GPU with no collective between them, each process's time against the
one process's time in the same command.

    python3 benchmarks/host_contention.py                 # 1, 2 and (where 4 are visible) 4 GPUs
    python3 benchmarks/host_contention.py --gpus 1 2 --repeats 5 --json /tmp/contention.json

Workloads (each repeated --repeats times, the median taken):
  matmul   bf16 8192 x 8192 matrix products: the GPU's arithmetic alone (clocks, power, cooling)
  launch   one decode step of a 1.5B-sized stack of small matrix-vector products launched op by op from Python:
           the CPU side of a step (the Python thread, the driver), as eager generation is
  graph    the same step recorded once as a CUDA graph and replayed: small kernels with almost no CPU work, as
           grpo.team.lean_decode's rollouts are
  h2d      256 MiB copied from pinned host memory to the GPU: the host's memory and PCIe
A slowdown above 1.0 on n GPUs is the host's share of a data-parallel run's shortfall: benchmarks/gpu_scaling.sh's
``pair`` arrangement measures the same for a whole training step. Written here since no library times concurrent
per-GPU processes against one alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.multiprocessing as mp

WORKLOADS = ("matmul", "launch", "graph", "h2d")
LAYERS, HIDDEN = 28, 1536  # Qwen2.5-1.5B's depth and width


def _workload(name: str, device: torch.device):
    """A callable that runs one repeat of ``name`` on ``device`` and waits for it."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda *a: None)
    if name == "matmul":
        n = 8192 if device.type == "cuda" else 256
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)

        def run():
            for _ in range(40):
                a @ a
            sync(device)

        return run
    weights = [torch.randn(HIDDEN, HIDDEN, device=device, dtype=torch.bfloat16) / 40 for _ in range(LAYERS)]
    x = torch.randn(1, HIDDEN, device=device, dtype=torch.bfloat16)

    def step():
        h = x
        for w in weights:
            h = torch.nn.functional.silu(h @ w) + h
        return h

    if name == "launch":

        def run():
            for _ in range(30):
                step()
            sync(device)

        return run
    if name == "graph":
        if device.type != "cuda":
            return _workload("launch", device)
        stream = torch.cuda.Stream(device)
        with torch.cuda.stream(stream):
            step()  # warm up outside the graph, on a side stream as capture requires
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()

        def run():
            for _ in range(300):
                graph.replay()
            sync(device)

        return run
    if name == "h2d":
        src = torch.empty(256 << 20, dtype=torch.uint8, pin_memory=device.type == "cuda")
        dst = torch.empty_like(src, device=device)

        def run():
            for _ in range(8):
                dst.copy_(src, non_blocking=True)
            sync(device)

        return run
    raise ValueError(f"unknown workload {name!r} ({', '.join(WORKLOADS)})")


def _worker(index: int, device_name: str, repeats: int, barrier, results) -> None:
    """One process on one GPU: every workload, warmed up, then ``repeats`` timed runs, each started together with the
    other processes' (a barrier before every run)."""
    device = torch.device(device_name if device_name == "cpu" else f"cuda:{index}")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    out = {}
    for name in WORKLOADS:
        run = _workload(name, device)
        run()  # warm-up: allocation, kernels' first launch
        times = []
        for _ in range(repeats):
            barrier.wait()
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    results[index] = out


def measure(processes: int, device: str, repeats: int) -> list[dict[str, float]]:
    """Each of ``processes`` processes' median seconds per workload, all running at once."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(processes), ctx.Manager().dict()
    procs = [ctx.Process(target=_worker, args=(i, device, repeats, barrier, results)) for i in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"a process of the {processes}-GPU run failed (exit codes {[p.exitcode for p in procs]})")
    return [results[i] for i in range(processes)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    visible = torch.cuda.device_count()
    ap.add_argument("--gpus", type=int, nargs="+", default=[n for n in (1, 2, 4) if n <= max(visible, 1)])
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each workload (median taken)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: check the script without a GPU")
    ap.add_argument("--json", default=None, help="write every process's medians here")
    args = ap.parse_args()
    if args.device == "cuda" and max(args.gpus) > visible:
        raise SystemExit(f"--gpus asks for {max(args.gpus)} GPUs, {visible} visible")
    runs = {n: measure(n, args.device, args.repeats) for n in sorted(set(args.gpus) | {1})}
    alone = runs[1][0]
    print("| workload | GPUs at once | seconds per process (GPU 0 .. n-1) | slowdown against one alone, worst |")
    print("|---|---:|---|---:|")
    for name in WORKLOADS:
        for n, procs in runs.items():
            times = " / ".join(f"{p[name]:.4f}" for p in procs)
            print(f"| {name} | {n} | {times} | {max(p[name] for p in procs) / alone[name]:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({str(n): procs for n, procs in runs.items()}, f, indent=1)


if __name__ == "__main__":
    main()
