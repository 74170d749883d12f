"""``corecode build-data``: the composite splits and the Planner / Coder / single-model SFT sets.

Writes under ``out_dir`` (default ``data/processed``):

* ``composite_{train,val,test,rl}.jsonl``: the composite splits (``rl``: tests only, for GRPO; empty when n_rl is 0) as ``Problem`` JSONL (later stages read exactly these),
* ``planner.jsonl``: ``planner_prompt(p)`` -> ``format_plan(plan)`` (problems with a gold plan),
* ``coder.jsonl``: ``coder_prompt(p, plan)`` -> ``format_code(code)`` (problems with a plan and a reference),
* ``single.jsonl``: ``coder_prompt(p, None)`` -> ``format_code(code)`` (problems with a reference),

each row in TRL's prompt/completion format plus ``task_id``, ``source``, ``split`` (train | val) and ``provenance``.
Training items overlapping an evaluation benchmark are dropped first (``corecode.data.decontam``); the data card
(``data/reports/data_card.md``) and ``build_summary.json`` record sizes and drops.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from corecode.agents.prompts import coder_prompt, format_code, format_plan, planner_prompt
from corecode.data.config import DataParams
from corecode.data.schema import Problem
from corecode.paths import PROCESSED, REPORTS

SFT_SETS = ("planner", "coder", "single")


@dataclass
class BuildSummary:
    files: dict[str, str] = field(default_factory=dict)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # dataset -> split -> rows
    dropped: dict[str, int] = field(default_factory=dict)  # source -> dropped by decontamination
    dropped_ids: list[str] = field(default_factory=list)
    teacher: dict[str, dict] = field(default_factory=dict)  # source -> {problems, planned, mean_pass_rate}


def sft_rows(p: Problem, provenance: str) -> dict[str, dict]:
    """The SFT rows one problem contributes, by dataset name (a problem lacking a plan gives no planner/coder row)."""
    meta = {"task_id": p.task_id, "source": p.source, "split": p.split, "provenance": provenance}
    out: dict[str, dict] = {}
    if p.plan:
        out["planner"] = {"prompt": planner_prompt(p), "completion": format_plan(p.plan), **meta}
    if p.reference_solution:
        if p.plan:
            out["coder"] = {"prompt": coder_prompt(p, p.plan), "completion": format_code(p.reference_solution), **meta}
        out["single"] = {"prompt": coder_prompt(p, None), "completion": format_code(p.reference_solution), **meta}
    return out


def _training_problems(data: DataParams, composite: dict[str, list[Problem]], seed: int) -> list[tuple[Problem, str]]:
    from corecode.data.benchmarks import load_source

    items: list[tuple[Problem, str]] = []
    for name in data.train_sources:
        if name == "composite":
            prov = f"composite:generated(seed={seed}):gold-plan"
            items += [(p, prov) for split in ("train", "val") for p in composite[split]]
        else:
            spec = data.sources[name]
            prov = f"{name}:{spec.loader}:{spec.path}" + (f":{spec.split}" if spec.split else "")
            for p in load_source(name, spec):
                # external sources have no val split of their own here: everything goes to train
                items.append((p.model_copy(update={"split": "train"}), prov))
    return items


def _eval_problems(data: DataParams, composite: dict[str, list[Problem]], seed: int) -> list[Problem]:
    from corecode.data.benchmarks import load_benchmark, load_source

    probs: list[Problem] = []
    for name in data.decontam.against:
        if name.startswith("composite"):
            split = name.split("_", 1)[1] if "_" in name else "test"
            probs += composite[split]
        else:
            probs += load_benchmark(name, params=data, seed=seed)
    for name, spec in data.sources.items():
        if spec.role == "eval" and name not in data.decontam.against:
            probs += load_source(name, spec)
    return probs


def build_data(data: DataParams, seed: int = 0, out_dir: str | Path = PROCESSED,
               reports_dir: str | Path = REPORTS, progress: bool = True) -> BuildSummary:
    """Build every file listed in the module docstring; returns what was written and dropped."""
    from rich.progress import track

    from corecode.data.card import write_data_card
    from corecode.data.composite import generate_composite
    from corecode.data.decontam import decontaminate
    from corecode.data.io import write_jsonl, write_problems

    out_dir, reports_dir = Path(out_dir), Path(reports_dir)
    summary = BuildSummary()
    composite = generate_composite(data.composite, seed, progress=progress)
    for split, probs in composite.items():
        path = out_dir / f"composite_{split}.jsonl"
        write_problems(path, probs)
        summary.files[f"composite_{split}"] = str(path)
        summary.rows[f"composite_{split}"] = {split: len(probs)}
    if "rl" not in composite:  # the pipeline declares this file: an empty one means "no rl split" (n_rl: 0)
        write_problems(out_dir / "composite_rl.jsonl", [])

    items = _training_problems(data, composite, seed)
    summary.dropped = {p.source: 0 for p, _ in items}
    if data.decontam.enabled:
        evals = _eval_problems(data, composite, seed)
        report = decontaminate([p for p, _ in items], evals, data.decontam.n, data.decontam.threshold)
        dropped = {id(p) for p, _, _ in report.dropped}
        for p, _, _ in report.dropped:
            summary.dropped[p.source] += 1
            summary.dropped_ids.append(p.task_id)
        items = [(p, prov) for p, prov in items if id(p) not in dropped]

    if data.teacher.enabled:
        items = _teach(data, items, summary)

    rows: dict[str, list[dict]] = {name: [] for name in SFT_SETS}
    for p, prov in track(items, description="SFT rows", disable=not progress or len(items) < 5000):
        for name, row in sft_rows(p, prov).items():
            rows[name].append(row)
    for name in SFT_SETS:
        path = out_dir / f"{name}.jsonl"
        write_jsonl(path, rows[name])
        summary.files[name] = str(path)
        counts: dict[str, int] = {}
        for r in rows[name]:
            counts[r["split"]] = counts.get(r["split"], 0) + 1
        summary.rows[name] = counts

    card = write_data_card(reports_dir / "data_card.md", composite, rows, summary)
    summary.files["data_card"] = str(card)
    summary_path = reports_dir / "build_summary.json"
    summary_path.write_text(json.dumps(summary.__dict__, indent=2) + "\n")
    summary.files["build_summary"] = str(summary_path)
    return summary


def _teach(data: DataParams, items: list[tuple[Problem, str]], summary: BuildSummary) -> list[tuple[Problem, str]]:
    """Attach verified teacher plans to the configured sources' problems (see corecode/data/teacher.py)."""
    from corecode.data.teacher import CompletionCache, annotate_plans, teacher_generator
    from corecode.generation.base import SamplingParams
    from corecode.sandbox.sandbox import Sandbox

    cfg = data.teacher
    gen, model = teacher_generator(cfg)
    wanted = {data.sources[s].loader if s in data.sources else s for s in cfg.sources} | set(cfg.sources)
    targets = [p for p, _ in items if not p.plan and p.source in wanted]
    sampling = SamplingParams(n=cfg.n_candidates, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens)
    try:
        with Sandbox() as sb:
            results = annotate_plans(targets, gen, gen, sb, CompletionCache(cfg.cache), model, model,
                                     teacher_sampling=sampling)
    finally:
        close = getattr(gen, "close", None)
        if close is not None:
            close()
    by_id = {r.task_id: r for r in results}
    out = []
    for p, prov in items:
        r = by_id.get(p.task_id) if not p.plan else None
        if r is not None:
            stats = summary.teacher.setdefault(p.source, {"problems": 0, "planned": 0, "pass_rate_sum": 0.0})
            stats["problems"] += 1
            stats["pass_rate_sum"] += r.pass_rate
            if r.plan:
                stats["planned"] += 1
                p = p.model_copy(update={"plan": r.plan})
                prov = f"{prov}:teacher-plan({model},pass_rate={r.pass_rate:.2f})"
        out.append((p, prov))
    for stats in summary.teacher.values():
        stats["mean_pass_rate"] = round(stats.pop("pass_rate_sum") / max(1, stats["problems"]), 4)
    return out
