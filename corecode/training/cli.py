"""Training commands: ``sft``, ``grpo-single``, ``grpo-team``, ``grpo-magrpo``.

``register(app)`` calls one private ``_register_*`` per trainer, so a new trainer adds one function. Heavy imports
(torch, trl, mlflow, the trainer modules) stay inside the command bodies so ``corecode --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, load_cli_params, output_path

# What to change when a training stage runs out of (GPU) memory: corecode.models.oom.oom_guard puts these in the error.
_SFT_OOM_HINTS = (
    "lower sft.batch_size (and raise sft.gradient_accumulation_steps to keep the effective batch)",
    "lower sft.max_length",
    "set sft.gradient_checkpointing: true",
    "enable sft.lora.enabled or use a smaller model (model.embedded.*)",
)
_SINGLE_OOM_HINTS = (
    "lower grpo.single.batch_size (and raise grpo.single.gradient_accumulation_steps)",
    "lower grpo.single.num_generations or grpo.single.max_completion_length",
    "set grpo.single.gradient_checkpointing: true or grpo.single.lora.enabled: true",
)
_TEAM_OOM_HINTS = (
    "lower grpo.team.micro_batch_size (sequences per forward/backward)",
    "lower grpo.team.generation_batch_size (prompts per generate call)",
    "lower grpo.team.problems_per_step, grpo.team.num_plans or grpo.team.num_programs (the group sizes)",
    "lower grpo.team.max_plan_tokens / grpo.team.max_code_tokens",
    "set grpo.team.gradient_checkpointing: true, or grpo.team.lora.enabled and bf16: true (a bf16 base per role)",
    "share one base between the roles: grpo.team.shared_base: true (with LoRA)",
    "put the roles on two GPUs: grpo.team.planner_device: cuda:0, grpo.team.coder_device: cuda:1",
)


def _register_sft(app: typer.Typer) -> None:
    @app.command("sft")
    def sft(
        role: str = typer.Option(..., "--role", help="planner | coder | single | pta (plan-then-code, one model)"),
        params: Path = PARAMS_OPTION,
        set_: list[str] = SET_OPTION,
    ) -> None:
        """Supervised fine-tuning of one role with TRL's SFTTrainer -> data/checkpoints/sft_<role>/."""
        from corecode.training.sft_config import ROLES

        if role not in ROLES:
            raise typer.BadParameter(f"{role!r} is not one of {', '.join(ROLES)}", param_hint="--role")
        p = load_cli_params(params, set_)
        from corecode.models.oom import oom_guard
        from corecode.tracking.runs import stage_run
        from corecode.training.sft import default_paths, train_sft

        _, out_dir, log_path = default_paths(role)
        long = _long_rows(role, p)
        with stage_run(f"sft_{role}", p) as run, oom_guard(f"sft_{role}", _SFT_OOM_HINTS):
            res = train_sft(
                role,
                p.sft,
                seed=p.seed,
                output_dir=output_path(out_dir),
                log_path=output_path(log_path),
                report_to=["mlflow"] if run.enabled else [],
                chat=p.generation.use_chat_template,
            )
            run.log_metrics({"final_train_loss": res.train_loss or 0.0, "wall_time_s": res.wall_time_s})
            if long is not None:
                _merge_summary(res, role, long.summary())
                run.log_metrics({"truncated_rows": long.count})
            if res.eval_loss is not None:
                run.log_metrics({"final_eval_loss": res.eval_loss})
            check = _sample_check(role, p, res)
            run.log_metrics(check)
            run.log_artifacts(res.log_path, "reports")
        if check:
            typer.echo("sample check: " + ", ".join(f"{k}={v:.3f}" for k, v in check.items()))
        val = "n/a" if res.eval_loss is None else f"{res.eval_loss:.4f}"
        typer.echo(
            f"sft {role}: {res.global_step} steps on {res.train_rows} rows in {res.wall_time_s:.1f}s, "
            f"train loss {res.train_loss:.4f}, val loss {val} -> {res.output_dir}"
        )


def _long_rows(role: str, p):
    """The rows SFT will truncate (corecode.training.sft_lengths), warned about on stderr before training; None when
    the base checkpoint's tokenizer or the data cannot be read here (training then says why)."""
    from corecode.training.sft import default_paths
    from corecode.training.sft_lengths import long_rows, role_texts

    cfg = p.sft.for_role(role, p.seed)
    try:
        from corecode.models.factory import load_tokenizer

        tokenizer = load_tokenizer(cfg.base_checkpoint, key="sft.base_checkpoint")
        texts = role_texts(role, default_paths(role)[0])
    except (OSError, ValueError):  # a missing checkpoint or data file: train_sft names it
        return None
    found = long_rows(texts, tokenizer, cfg.max_length, p.generation.use_chat_template)
    if found.count:
        typer.echo(f"warning: {found.message(role)}", err=True)
    return found


def _merge_summary(res, role: str, extra: dict) -> None:
    """Add ``extra`` to sft_<role>_summary.json (written by train_sft beside the training log)."""
    import json

    path = res.log_path.with_name(f"sft_{role}_summary.json")
    summary = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(summary | extra, indent=1) + "\n")


def _sample_check(role: str, p, res) -> dict[str, float]:
    """Post-SFT greedy sample check on ``sft.check_n`` problems, merged into sft_<role>_summary.json."""
    import json

    cfg = p.sft.for_role(role, p.seed)
    if not cfg.check_n or not Path(cfg.check_problems).exists():
        return {}
    from corecode.data.io import read_problems
    from corecode.sandbox import Sandbox
    from corecode.training.sft import sample_check

    problems = read_problems(cfg.check_problems, cfg.check_n)
    kw = {"max_new_tokens": cfg.check_max_new_tokens, "chat": p.generation.use_chat_template}
    if role == "planner":  # plans are checked for form only; nothing runs
        check = sample_check(role, res.output_dir, problems, **kw)
    else:
        with Sandbox(p.sandbox) as sb:
            check = sample_check(role, res.output_dir, problems, sandbox=sb, **kw)
    summary_path = res.log_path.with_name(f"sft_{role}_summary.json")
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary_path.write_text(json.dumps(summary | check, indent=1) + "\n")
    return check


def _register_single(app: typer.Typer) -> None:
    @app.command("grpo-single")
    def grpo_single(
        plan_then_code: bool = typer.Option(
            False, "--plan-then-code", help="PTA-GRPO: one model writes plan + code -> data/checkpoints/pta_grpo/."
        ),
        params: Path = PARAMS_OPTION,
        set_: list[str] = SET_OPTION,
    ) -> None:
        """Single-agent GRPO baseline with TRL's GRPOTrainer and sandbox rewards -> data/checkpoints/grpo_single/."""
        p = load_cli_params(params, set_)
        from corecode.tracking.runs import stage_run
        from corecode.training.single_grpo import train_grpo_single

        stage = "pta_grpo" if plan_then_code else "grpo_single"
        from corecode.models.oom import oom_guard

        with stage_run(stage, p) as run, oom_guard(stage, _SINGLE_OOM_HINTS):
            res = train_grpo_single(p, plan_then_code=plan_then_code, report_to=["mlflow"] if run.enabled else [])
            run.log_metrics({"wall_time_s": res.wall_time_s, "final_reward_mean": res.final_reward_mean})
            run.log_artifacts(res.log_path, "reports")
        typer.echo(
            f"{stage}: {res.global_step} steps in {res.wall_time_s:.1f}s, reward {res.first_reward_mean:.3f} -> "
            f"{res.final_reward_mean:.3f} -> {res.output_dir}"
        )


def _control_without_ptx(team) -> None:
    """The ptx-only control of a recipe without a ptx term (``ptx_coef: 0``, as in the Qwen profiles) updates
    nothing, so it is the SFT team: copy the start checkpoints to the control's places and write an empty training
    log, rather than stop the pipeline's grpo_ptx stage (or let AdamW's weight decay alone move the weights)."""
    import json
    import shutil

    ctl = team.ptx_control
    for start, out in ((team.planner_model, ctl.planner_output), (team.coder_model, ctl.coder_output)):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(start, out)
    Path(ctl.log_path).parent.mkdir(parents=True, exist_ok=True)
    Path(ctl.log_path).write_text(json.dumps([]) + "\n")
    typer.echo(
        "grpo-team --ptx-control: grpo.team.ptx_coef is 0 or grpo.team.ptx_data is empty, so the control is the SFT "
        f"team: copied {team.planner_model} -> {ctl.planner_output}, {team.coder_model} -> {ctl.coder_output}"
    )


def _register_team(app: typer.Typer) -> None:
    """``grpo-team`` / ``grpo-magrpo``: thin commands over corecode.training.team_grpo.

    Declared here, not in team_grpo, because importing team_grpo loads torch: registering the commands there made
    every ``corecode`` invocation (``--help`` included) take 13-26 s on the 2-core CPU box.
    """

    def _run(
        stage: str, fn_name: str, section: str, params_path: Path, overrides: list[str] | None, ptx_control=False
    ) -> None:
        import json

        p = load_cli_params(params_path, overrides)
        if ptx_control:  # the team's recipe with the RL term zeroed, written to grpo.team.ptx_control's places
            team = p.grpo.team
            if not team.has_ptx:
                _control_without_ptx(team)
                return
            p.grpo.team = team.model_copy(update={"rl_coef": 0.0, **team.ptx_control.model_dump()})
        from corecode.models.oom import oom_guard
        from corecode.tracking.runs import stage_run
        from corecode.training import team_grpo

        with stage_run(stage, p) as run:  # the active MLflow run: the trainer logs per-step metrics into it
            with oom_guard(stage, _TEAM_OOM_HINTS):
                final = getattr(team_grpo, fn_name)(p)
            run.log_metrics({k.replace("/", "_"): v for k, v in final.items()})
            log = Path(getattr(p.grpo, section).log_path)
            if log.exists():
                run.log_artifacts(log, "reports")
        typer.echo(json.dumps(final, indent=1))

    @app.command("grpo-team")
    def grpo_team(
        ptx_control: bool = typer.Option(
            False,
            "--ptx-control",
            help="The ptx-only control (method planner_coder_ptx): grpo.team's recipe with rl_coef 0 (no rollouts; "
            "the same ptx batches, steps, learning rate and optimizer) -> grpo.team.ptx_control's places.",
        ),
        params: Path = PARAMS_OPTION,
        set_: list[str] = SET_OPTION,
    ) -> None:
        """Collaborative GRPO of the Planner -> Coder team (resumes from grpo.team.checkpoint_dir)."""
        if ptx_control:
            _run("grpo_ptx", "run_team_grpo", "team", params, set_, ptx_control=True)
        else:
            _run("grpo_team", "run_team_grpo", "team", params, set_)

    @app.command("grpo-magrpo")
    def grpo_magrpo(params: Path = PARAMS_OPTION, set_: list[str] = SET_OPTION) -> None:
        """MAGRPO-style helper/main joint GRPO (resumes from grpo.magrpo.checkpoint_dir)."""
        _run("grpo_magrpo", "run_magrpo", "magrpo", params, set_)


def register(app: typer.Typer) -> None:
    _register_sft(app)
    _register_single(app)
    _register_team(app)
