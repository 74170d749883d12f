"""``corecode build-data``: the composite splits, the real sources' RL problems, and the Planner / Coder /
single-model SFT sets.

Writes under ``out_dir`` (default ``data/processed``):

* ``composite_{train,val,test,dev,rl}.jsonl``: the composite splits (``dev``: held-out compositions like ``test``, for
  tuning; ``rl``: tests only, for GRPO; each empty when its size is 0) as ``Problem`` JSONL (later stages read exactly
  these),
* ``sources/<name>_rl.jsonl``: for each external source in ``data.train_sources`` (MBPP, APPS, CodeContests,
  Codeforces), the ``rl_fraction`` of its problems kept for GRPO (split ``rl``; never SFT rows), within the source's
  limits (``data.validation.per_source``: long tests cut, at most ``max_tests`` kept; problems exact-output tests
  cannot judge left out). The directory exists, empty, when there is no external source,
* ``planner.jsonl``: ``planner_prompt(p)`` -> ``format_plan(plan)`` (problems with a gold plan, or a teacher plan
  that led the Coder to passing code: ``data.teacher``, corecode/data/teacher.py),
* ``coder.jsonl``: ``coder_prompt(p, plan)`` -> ``format_code(code)`` (problems with a plan and a reference),
* ``single.jsonl``: ``coder_prompt(p, None)`` -> ``format_code(code)`` (problems with a reference),

each row in TRL's prompt/completion format plus ``task_id``, ``source``, ``split`` (train | val) and ``provenance``;
an external source's rows longer than its limits are left out. Training items overlapping an evaluation set (the
``data.decontam.against`` benchmarks and every eval-role source) are dropped first (``corecode.data.decontam``); the
data card (``data/reports/data_card.md``) and ``build_summary.json`` record sizes and drops.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from corecode.agents.prompts import coder_prompt, format_code, format_plan, planner_prompt
from corecode.data.config import DataParams, SourceLimits
from corecode.data.schema import Problem, count_tests, judgeable
from corecode.paths import PROCESSED, REPORTS

SFT_SETS = ("planner", "coder", "single")
SOURCES_DIR = "sources"  # under out_dir: the external sources' RL problem files
# What exact-output tests cannot judge (the Codeforces loader tags it): never an RL problem.
UNJUDGEABLE_TAGS = frozenset({"interactive", "file_io", "custom_checker"})


@dataclass
class BuildSummary:
    files: dict[str, str] = field(default_factory=dict)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # dataset -> split -> rows
    dropped: dict[str, int] = field(default_factory=dict)  # source -> dropped by decontamination
    dropped_ids: list[str] = field(default_factory=list)
    teacher: dict[str, dict] = field(default_factory=dict)  # source -> {problems, planned, mean_pass_rate}
    sources: dict[str, dict] = field(default_factory=dict)  # external source -> what became of its problems

    def to_json(self) -> dict:
        """The summary as JSON; ``sources`` only when there are external sources."""
        return {k: v for k, v in self.__dict__.items() if k != "sources" or v}


def rl_path(out_dir: str | Path, name: str) -> Path:
    """Where build-data writes the RL problems of external source ``name``."""
    return Path(out_dir) / SOURCES_DIR / f"{name}_rl.jsonl"


def rl_problem(p: Problem, limits: SourceLimits) -> Problem | None:
    """``p`` as an RL problem within ``limits`` (tests over max_test_chars cut, the first max_tests kept), or None
    when it cannot be one: a tag exact-output tests cannot judge, a statement over the limit, too few tests left."""
    if UNJUDGEABLE_TAGS & set(p.tags) or len(p.prompt) > limits.max_prompt_chars:
        return None
    tests = [t for t in p.tests if len(t.input) + len(t.output or "") <= limits.max_test_chars][: limits.max_tests]
    p = p.model_copy(update={"tests": tests, "split": "rl"})
    return p if judgeable(p) and count_tests(p) >= limits.min_tests else None


def for_rl(task_id: str, fraction: float, seed: int) -> bool:
    """Whether an external source's problem is kept for GRPO: a hash of seed and task id, uniform in [0, 1), below
    ``fraction`` (stable: the same problem stays on its side whatever else the source holds)."""
    digest = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def sft_rows(p: Problem, provenance: str, naive_frac: float = 0.0, seed: int = 0) -> dict[str, dict]:
    """The SFT rows one problem contributes, by dataset name (a problem lacking a plan gives no planner/coder row).

    A problem with a ``naive_solution`` shows it instead of the reference for a ``naive_frac`` share of such problems
    (composite's efficiency family, ``data.composite.efficiency_sft_naive_frac``; picked by a hash of seed and task
    id), with ``:naive-solution`` on the rows' provenance.
    """
    from corecode.data.efficiency import naive_share

    code = p.reference_solution
    if p.naive_solution and naive_share(p.task_id, naive_frac, seed):
        code, provenance = p.naive_solution, f"{provenance}:naive-solution"
    meta = {"task_id": p.task_id, "source": p.source, "split": p.split, "provenance": provenance}
    out: dict[str, dict] = {}
    if p.plan:
        out["planner"] = {"prompt": planner_prompt(p), "completion": format_plan(p.plan), **meta}
    if code:
        if p.plan:
            out["coder"] = {"prompt": coder_prompt(p, p.plan), "completion": format_code(code), **meta}
        out["single"] = {"prompt": coder_prompt(p, None), "completion": format_code(code), **meta}
    return out


Item = tuple[str, Problem, str]  # (name in data.train_sources, problem, provenance)


def _training_problems(
    data: DataParams, composite: dict[str, list[Problem]], seed: int, summary: BuildSummary
) -> list[Item]:
    from corecode.data.benchmarks import load_source

    items: list[Item] = []
    for name in data.train_sources:
        if name == "composite":
            prov = f"composite:generated(seed={seed}):gold-plan"
            items += [(name, p, prov) for split in ("train", "val") for p in composite[split]]
        else:
            spec = data.sources[name]
            prov = f"{name}:{spec.loader}:{spec.path}" + (f":{spec.split}" if spec.split else "")
            problems = load_source(name, spec)
            summary.sources[name] = {
                "loaded": len(problems),
                "decontaminated": 0,
                "rl": 0,
                "rl_unusable": 0,
                "sft_problems": 0,
                "sft_rows_over_limits": 0,
            }
            # external sources have no val split of their own here: everything goes to train
            items += [(name, p.model_copy(update={"split": "train"}), prov) for p in problems]
    return items


def eval_problems(
    data: DataParams, seed: int | None = None, composite: dict[str, list[Problem]] | None = None
) -> list[Problem]:
    """Every evaluation problem training data is decontaminated against: the ``data.decontam.against`` benchmarks
    (composite splits only when ``composite`` is given) and every eval-role source of ``data.sources``."""
    from corecode.data.benchmarks import load_benchmark, load_source

    probs: list[Problem] = []
    for name in data.decontam.against:
        if name.startswith("composite"):
            if composite is not None:
                split = name.split("_", 1)[1] if "_" in name else "test"
                probs += composite[split]
        else:
            probs += load_benchmark(name, params=data, seed=seed)
    for name, spec in data.sources.items():
        if spec.role == "eval" and name not in data.decontam.against:
            probs += load_source(name, spec)
    return probs


def _split_sources(
    data: DataParams, items: list[Item], seed: int, summary: BuildSummary
) -> tuple[list[Item], dict[str, list[Problem]]]:
    """Composite items as they are; each external source's problems to its RL file or to the SFT side."""
    sft: list[Item] = []
    rl: dict[str, list[Problem]] = {name: [] for name in summary.sources}
    for name, p, prov in items:
        if name == "composite":
            sft.append((name, p, prov))
            continue
        stats = summary.sources[name]
        if for_rl(p.task_id, data.sources[name].rl_fraction, seed):
            q = rl_problem(p, data.validation.limits(p.source))
            if q is None:
                stats["rl_unusable"] += 1
            else:
                rl[name].append(q)
                stats["rl"] += 1
        else:
            sft.append((name, p, prov))
            stats["sft_problems"] += 1
    return sft, rl


def _fits(row: dict, limits: SourceLimits) -> bool:
    return len(row["prompt"]) <= limits.max_prompt_chars and len(row["completion"]) <= limits.max_completion_chars


def build_data(
    data: DataParams,
    seed: int = 0,
    out_dir: str | Path = PROCESSED,
    reports_dir: str | Path = REPORTS,
    progress: bool = True,
) -> BuildSummary:
    """Build every file listed in the module docstring; returns what was written and dropped."""
    from corecode.data.card import write_data_card
    from corecode.data.composite import generate_composite

    out_dir, reports_dir = Path(out_dir), Path(reports_dir)
    summary = BuildSummary()
    composite = generate_composite(data.composite, seed, progress=progress)
    _write_composite(composite, out_dir, summary)

    items = _training_problems(data, composite, seed, summary)
    summary.dropped = {p.source: 0 for _, p, _ in items}
    if data.decontam.enabled:
        items = _decontaminated(data, items, composite, seed, summary)
    items, rl = _split_sources(data, items, seed, summary)
    _write_rl(rl, out_dir, summary)
    if data.teacher.enabled:
        items = _teach(data, items, summary)
    rows = _sft_rows(data, items, seed, summary, progress)
    _write_sft_rows(rows, out_dir, summary)

    card = write_data_card(reports_dir / "data_card.md", composite, rows, summary)
    summary.files["data_card"] = str(card)
    summary_path = reports_dir / "build_summary.json"
    summary_path.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    summary.files["build_summary"] = str(summary_path)
    return summary


def _write_composite(composite: dict[str, list[Problem]], out_dir: Path, summary: BuildSummary) -> None:
    """One ``composite_<split>.jsonl`` a split."""
    from corecode.data.io import write_problems

    for split, probs in composite.items():
        path = out_dir / f"composite_{split}.jsonl"
        write_problems(path, probs)
        summary.files[f"composite_{split}"] = str(path)
        summary.rows[f"composite_{split}"] = {split: len(probs)}
    for split in ("dev", "rl"):  # the pipeline declares these files: an empty one means "no such split" (size 0)
        if split not in composite:
            write_problems(out_dir / f"composite_{split}.jsonl", [])


def _decontaminated(
    data: DataParams, items: list[Item], composite: dict[str, list[Problem]], seed: int, summary: BuildSummary
) -> list[Item]:
    """``items`` without the problems too close to an evaluation problem, each drop counted by source."""
    from corecode.data.decontam import decontaminate

    evals = eval_problems(data, seed, composite)
    report = decontaminate([p for _, p, _ in items], evals, data.decontam.n, data.decontam.threshold)
    dropped = {id(p) for p, _, _ in report.dropped}
    for name, p, _ in items:
        if id(p) in dropped:
            summary.dropped[p.source] += 1
            summary.dropped_ids.append(p.task_id)
            if name in summary.sources:
                summary.sources[name]["decontaminated"] += 1
    return [item for item in items if id(item[1]) not in dropped]


def _write_rl(rl: dict[str, list[Problem]], out_dir: Path, summary: BuildSummary) -> None:
    """Each source's rl problems in its own file under ``SOURCES_DIR``."""
    from corecode.data.io import write_problems

    (out_dir / SOURCES_DIR).mkdir(parents=True, exist_ok=True)  # a pipeline output even when empty
    for name, probs in rl.items():
        path = rl_path(out_dir, name)
        write_problems(path, probs)
        summary.files[f"{name}_rl"] = str(path)
        summary.rows[f"{name}_rl"] = {"rl": len(probs)}


def _sft_rows(
    data: DataParams, items: list[Item], seed: int, summary: BuildSummary, progress: bool
) -> dict[str, list[dict]]:
    """The SFT rows of every set, a real source's row dropped (and counted) where it exceeds its validation limits."""
    from rich.progress import track

    rows: dict[str, list[dict]] = {name: [] for name in SFT_SETS}
    for source, p, prov in track(items, description="SFT rows", disable=not progress or len(items) < 5000):
        limits = data.validation.limits(p.source) if source != "composite" else None
        for name, row in sft_rows(p, prov, data.composite.efficiency_sft_naive_frac, seed).items():
            if limits is None or _fits(row, limits):
                rows[name].append(row)
            else:
                summary.sources[source]["sft_rows_over_limits"] += 1
    return rows


def _write_sft_rows(rows: dict[str, list[dict]], out_dir: Path, summary: BuildSummary) -> None:
    """One ``<set>.jsonl`` an SFT set, its rows counted by split."""
    from corecode.data.io import write_jsonl

    for name in SFT_SETS:
        path = out_dir / f"{name}.jsonl"
        write_jsonl(path, rows[name])
        summary.files[name] = str(path)
        summary.rows[name] = dict(Counter(r["split"] for r in rows[name]))


def _teach(data: DataParams, items: list[Item], summary: BuildSummary) -> list[Item]:
    """Attach verified teacher plans to the configured sources' problems (see corecode/data/teacher.py); a problem
    without a reference solution gets the program that passed with its plan as one."""
    from corecode.data.teacher import CompletionCache, annotate_plans, teacher_generator
    from corecode.generation.base import SamplingParams
    from corecode.sandbox.sandbox import Sandbox

    cfg = data.teacher
    gen, model = teacher_generator(cfg)
    wanted = {data.sources[s].loader if s in data.sources else s for s in cfg.sources} | set(cfg.sources)
    targets = [
        p
        for name, p, _ in items
        if not p.plan
        and (name in wanted or p.source in wanted)
        and not UNJUDGEABLE_TAGS & set(p.tags)
        and len(p.prompt) <= data.validation.limits(p.source).max_prompt_chars
    ]
    sampling = SamplingParams(n=cfg.n_candidates, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens)
    try:
        with Sandbox() as sb:
            results = annotate_plans(
                targets, gen, gen, sb, CompletionCache(cfg.cache), model, model, teacher_sampling=sampling
            )
    finally:
        close = getattr(gen, "close", None)
        if close is not None:
            close()
    by_id = {r.task_id: r for r in results}
    out = []
    for name, p, prov in items:
        r = by_id.get(p.task_id) if not p.plan else None
        if r is not None:
            stats = summary.teacher.setdefault(p.source, {"problems": 0, "planned": 0, "pass_rate_sum": 0.0})
            stats["problems"] += 1
            stats["pass_rate_sum"] += r.pass_rate
            if r.plan:
                stats["planned"] += 1
                update = {"plan": r.plan}
                prov = f"{prov}:teacher-plan({model},pass_rate={r.pass_rate:.2f})"
                if not p.reference_solution and r.code:
                    update["reference_solution"] = r.code
                    prov += ":teacher-code"
                p = p.model_copy(update=update)
        out.append((name, p, prov))
    for stats in summary.teacher.values():
        stats["mean_pass_rate"] = round(stats.pop("pass_rate_sum") / max(1, stats["problems"]), 4)
    return out
