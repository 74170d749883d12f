"""``corecode sandbox-selftest``: check that the sandbox works on this machine (isolation available, verdicts right).

Runs every HumanEval canonical solution (must pass) and a constant-return variant of each (must fail), and prints
the throughput; exits non-zero when anything is off. Cheap enough to run after installing on a new box.
"""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import fail, load_cli_params


def register(app: typer.Typer) -> None:
    @app.command("sandbox-selftest")
    def sandbox_selftest(
        workers: int | None = typer.Option(None, "--workers", "-w", min=1, help="Sandbox workers."),
        isolation: str | None = typer.Option(None, "--isolation", help="bwrap | unshare | none."),
        params: Path | None = typer.Option(None, "--params", help="params.yaml whose `sandbox` section to use."),
    ) -> None:
        """Canonical HumanEval solutions must all pass and constant answers all fail, inside the sandbox."""
        import time

        from corecode.data.loaders.humaneval import load_humaneval
        from corecode.sandbox import Sandbox, SandboxParams, SandboxUnavailable

        sp = load_cli_params(params).sandbox if params else SandboxParams()
        overrides = {k: v for k, v in {"workers": workers, "isolation": isolation}.items() if v is not None}
        try:
            sp = SandboxParams.model_validate({**sp.model_dump(), **overrides})
        except ValueError as e:
            fail(str(e))
        problems = load_humaneval()
        good = [(p, p.reference_solution) for p in problems]
        bad = [(p, p.prompt + "    return None\n") for p in problems]
        try:
            with Sandbox(sp) as sb:
                t0 = time.perf_counter()
                ok = sb.run_batch(good)
                wrong = sb.run_batch(bad)
                elapsed = time.perf_counter() - t0
        except SandboxUnavailable as e:
            fail(str(e))
        n_ok = sum(r.passed for r in ok)
        n_wrong = sum(not r.passed for r in wrong)
        typer.echo(f"isolation={sp.isolation} workers={sp.workers}")
        typer.echo(f"canonical solutions passed: {n_ok}/{len(ok)}")
        typer.echo(f"'return None' variants failed: {n_wrong}/{len(wrong)}")
        typer.echo(f"{len(ok) + len(wrong)} samples in {elapsed:.2f}s ({(len(ok) + len(wrong)) / elapsed:.0f}/s)")
        for r in ok:
            if not r.passed:
                typer.echo(f"  FAIL {r.task_id}: {r.verdict.value} {r.detail}", err=True)
        if n_ok != len(ok) or n_wrong != len(wrong):
            raise typer.Exit(1)
