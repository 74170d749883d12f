"""``corecode solve``: one problem through a team from params.yaml, plan and code printed with rich, then each
attempt run in the sandbox on the problem's tests (or, for a bare statement, its examples) with the verdict shown.

The command prints the problem and the checkpoint of each role before it loads anything heavy (torch and the
transformers modeling stack take seconds to import), so it answers at once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from corecode.cli_common import PARAMS_OPTION, SET_OPTION, fail, load_cli_params

ROLE_FLAGS = ("planner", "coder", "helper", "main", "repair")


def problem_from_arg(arg: str, task_id: str | None = None):
    """A ``Problem`` from the command-line argument: a .json/.jsonl file of Problem records, another file (its text is
    the prompt), or the prompt text itself. A prompt that defines a function is a function problem on its last
    ``def``; anything else is a stdin/stdout problem."""
    from corecode.data.io import read_problems
    from corecode.data.schema import Problem

    path = Path(arg)
    is_file = len(arg) < 4096 and "\n" not in arg and path.is_file()
    if is_file and path.suffix in (".json", ".jsonl"):
        if path.suffix == ".json":
            try:
                problems = [Problem.model_validate_json(path.read_text())]
            except ValueError as e:
                raise typer.BadParameter(f"{path}: not a Problem record: {e}") from None
        else:
            try:
                problems = read_problems(path)
            except ValueError as e:
                raise typer.BadParameter(str(e)) from None
        if task_id is not None:
            problems = [p for p in problems if p.task_id == task_id]
            if not problems:
                raise typer.BadParameter(f"{path}: no problem with task_id {task_id!r}")
        return problems[0]
    text = path.read_text() if is_file else arg
    if not text.strip():
        raise typer.BadParameter("the problem text is empty")
    defs = re.findall(r"^def\s+([A-Za-z_]\w*)\s*\(", text, re.M)
    if defs:
        return Problem(task_id=task_id or "cli/0", source="cli", prompt=text, io_mode="function", entry_point=defs[-1])
    return Problem(task_id=task_id or "cli/0", source="cli", prompt=text, io_mode="stdio")


def with_role_overrides(params, team: str, overrides: dict[str, str]):
    """A copy of params where ``team`` (and, for a debugging team, its inner team) uses the given role models."""
    from corecode.agents.config import RoleModel

    agents = params.agents.model_copy(deep=True)
    if team not in agents.teams:
        raise typer.BadParameter(f"agents.teams: no team named {team!r} (have {', '.join(sorted(agents.teams))})")
    spec = agents.teams[team]
    targets = [spec]
    if spec.type == "debugging":
        targets.append(agents.teams[spec.parsed_options().inner])
    for role, model in overrides.items():
        hit = False
        for t in targets:
            if role in t.roles or (role == "repair" and t.type == "debugging"):
                t.roles[role] = RoleModel(model=model)
                hit = True
        if not hit:
            raise typer.BadParameter(f"team {team!r} ({spec.type}) has no role {role!r}")
    return params.model_copy(update={"agents": agents})


def role_checkpoints(params, team: str) -> dict[str, str]:
    """Role -> the checkpoint it loads: ``spec`` or ``spec -> resolved path`` (registry URIs, per-role subdirs)."""
    from corecode.agents.factory import resolve_role_model

    spec = params.agents.teams[team]
    roles = dict(spec.roles)
    if spec.type == "debugging":
        inner = params.agents.teams[spec.parsed_options().inner]
        roles = {**inner.roles, **roles}
        roles.setdefault("repair", inner.roles.get("coder") or inner.roles.get("main"))
    out = {}
    for role, model in roles.items():
        if model is None:
            continue
        path, adapter = resolve_role_model(model, role)
        text = model.model if path == model.model else f"{model.model} -> {path}"
        out[role] = text + (f" + adapter {adapter}" if adapter else "")
    return out


def judge(problem, attempts, sandbox) -> tuple[str, list]:
    """Run each attempt's program in the sandbox: on the problem's tests if it has any, else on the examples its
    statement gives (``f(1, 2)`` -> ``3``, doctests). Returns (what was run, one SampleResult or None per attempt)."""
    from corecode.agents.debugging import docstring_examples

    if problem.tests or problem.check_code:
        target, what = problem, "the problem's tests"
    else:
        examples = docstring_examples(problem)
        if not examples:
            return "no tests and no examples in the statement: not run", [None] * len(attempts)
        target = problem.model_copy(update={"tests": examples})
        what = f"the statement's {len(examples)} example{'s' * (len(examples) > 1)}"
    results = sandbox.run_batch([(target, a.program) for a in attempts], reveal_expected=True)
    return what, results


def render_verdicts(what: str, results, console) -> None:
    from rich.markup import escape

    for k, res in enumerate(results):
        if res is None:
            console.print(f"attempt {k + 1}: [yellow]{escape(what)}[/yellow]")
            continue
        passed = sum(t.verdict.value == "passed" for t in res.tests)
        color = "green" if res.passed else "red"
        line = f"attempt {k + 1}: [{color}]{res.verdict.value}[/{color}] ({passed}/{len(res.tests)} on {escape(what)})"
        detail = next((t.detail for t in res.tests if t.verdict.value != "passed" and t.detail), res.detail)
        console.print(line + (f"\n  {escape(detail.strip()[:300])}" if detail and not res.passed else ""))


def render_problem(problem, console) -> None:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.text import Text

    console.print(Panel(Text(problem.prompt.rstrip()), title=f"problem {escape(problem.task_id)}", border_style="blue"))


def render(problem, attempts, console, show_problem: bool = True) -> None:
    """Rich panels: the problem, then per attempt its plan / reasoning, code and extraction notes.

    Model text goes in as ``Text``/``Syntax`` (never markup), so brackets in it cannot break the rendering.
    """
    from rich.markup import escape
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    if show_problem:
        render_problem(problem, console)
    for k, att in enumerate(attempts):
        head = f"attempt {k + 1}/{len(attempts)}"
        if att.plan is not None or "planner" in att.raw:
            plan = att.plan or att.raw.get("planner", "").strip() or "(empty)"
            console.print(Panel(Text(plan), title=f"{head}: plan", border_style="green" if att.plan else "red"))
        if att.meta.get("reasoning"):
            console.print(Panel(Text(att.meta["reasoning"]), title=f"{head}: reasoning", border_style="green"))
        code = att.code if att.code is not None else "# (no code extracted)"
        console.print(Panel(Syntax(code, "python", line_numbers=False), title=f"{head}: code", border_style="cyan"))
        info = [escape(f"tokens {att.tokens}")]
        info += [f"[red]{role} failed:[/red] {escape(why)}" for role, why in att.failures.items()]
        info += [f"[yellow]{role}:[/yellow] {escape(', '.join(n))}" for role, n in att.notes.items()]
        for key in ("retrieved", "visible_verdicts", "repair_rounds"):
            if key in att.meta:
                info.append(escape(f"{key}: {att.meta[key]}"))
        console.print("\n".join(info), highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("solve")
    def solve(
        problem: str = typer.Argument(..., help="Problem text, a text/.py file, or a .json/.jsonl of Problems."),
        team: str | None = typer.Option(None, "--team", help="Team in agents.teams (default: agents.default_team)."),
        planner: str | None = typer.Option(None, help="Planner model: checkpoint dir, hub id or models:/NAME@ALIAS"),
        coder: str | None = typer.Option(None, help="Coder model (path, hub id or models:/ URI)."),
        helper: str | None = typer.Option(None, help="Helper model (helper_main teams)."),
        main: str | None = typer.Option(None, help="Main model (helper_main teams)."),
        repair: str | None = typer.Option(None, help="Repair model (debugging teams)."),
        n: int = typer.Option(1, "--n", min=1, help="Attempts to sample."),
        task_id: str | None = typer.Option(None, help="Which problem of a .jsonl file (default: the first)."),
        params_file: Path = PARAMS_OPTION,
        overrides: list[str] = SET_OPTION,
        as_json: bool = typer.Option(False, "--json", help="Print the attempts as JSON instead of rich panels."),
        run_tests: bool = typer.Option(
            True, "--run/--no-run", help="Run each attempt in the sandbox on the tests or the statement's examples."
        ),
    ) -> None:
        """Solve one problem with a team: print the checkpoints used, the plan(s) and code, and each attempt's verdict
        on the problem's tests or the statement's examples (default params without a params file)."""
        from rich.console import Console

        from corecode.config import Params

        params = load_cli_params(params_file, overrides) if params_file.exists() or overrides else Params()
        name = team or params.agents.default_team
        roles = {r: v for r, v in zip(ROLE_FLAGS, (planner, coder, helper, main, repair)) if v is not None}
        params = with_role_overrides(params, name, roles)
        prob = problem_from_arg(problem, task_id)
        console = Console(stderr=as_json)  # with --json, stdout carries only the JSON
        try:
            used = role_checkpoints(params, name)
        except (LookupError, OSError, ValueError) as e:  # missing checkpoint, unknown registry alias, ...
            fail(f"cannot build team {name!r}: {e.args[0] if e.args else e}", code=1)
        console.print(f"team {name} ({params.agents.teams[name].type})", highlight=False)
        for role, text in used.items():
            console.print(f"  {role}: {text}", highlight=False, markup=False)
        if not as_json:
            render_problem(prob, console)

        import torch

        from corecode.agents.factory import build_team, default_sandbox, model_generator_factory

        torch.manual_seed(params.seed)
        try:
            team_obj = build_team(name, params, model_generator_factory(params), seed=params.seed)
        except (LookupError, OSError, ValueError) as e:  # missing corpus, a checkpoint that does not load, ...
            fail(f"cannot build team {name!r}: {e.args[0] if e.args else e}", code=1)
        box = getattr(team_obj, "sandbox", None)
        try:
            attempts = team_obj.solve([prob], n)[0]
            if run_tests:
                box = box or default_sandbox(params)
                what, results = judge(prob, attempts, box)
            else:
                what, results = "not run (--no-run)", [None] * len(attempts)
        finally:
            if box is not None and hasattr(box, "close"):
                box.close()
        if as_json:
            rows = [
                {
                    "task_id": a.task_id,
                    "plan": a.plan,
                    "code": a.code,
                    "program": a.program,
                    "raw": a.raw,
                    "failures": a.failures,
                    "notes": a.notes,
                    "tokens": a.tokens,
                    "meta": a.meta,
                    "checkpoints": used,
                    "tested_on": what,
                    "verdict": res.verdict.value if res else None,
                    "tests": [t.verdict.value for t in res.tests] if res else [],
                }
                for a, res in zip(attempts, results)
            ]
            typer.echo(json.dumps(rows, indent=2, default=str))
        else:
            render(prob, attempts, console, show_problem=False)
            render_verdicts(what, results, console)
