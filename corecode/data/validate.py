"""``corecode validate-data``: one great-expectations suite per dataset, a readable verdict, and the GX report.

Each dataset (``data/processed/<name>.jsonl``; an external source's RL problems ``<name>_rl``:
``data/processed/sources/<name>_rl.jsonl``) is loaded into a pandas frame; properties GX has no expectation for
(code parses, plan numbering, test count, overlap with evaluation problems) become derived columns that plain GX
expectations then check, so every failure is reported by GX with the column, expectation and offending rows (as
lines of the file). An SFT set gets one suite per source in it, with that source's limits
(``data.validation.per_source``; composite's rows keep the set's name, another source's are ``<set>.<source>``); an
RL file gets its source's limits. A line that is not a JSON object is a failure of its dataset (every such line
counted, the first named), and the suites run on the other lines, so one run reports every dataset's problems.
Results go to ``data/reports/gx/<name>.json`` (the GX validation result without its run times and random ids: the
same data give the same bytes, and init_model depends on this directory), ``data/reports/gx/summary.json`` and the GX
HTML data docs ``data/reports/gx_docs/index.html`` (stamped with run times, so kept apart).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from corecode import pysource
from corecode.data.config import DataParams, SourceLimits
from corecode.paths import PROCESSED, REPORTS

SFT_SETS = ("planner", "coder", "single")
PLAN_RE = r"\A<plan>\n(?:\d+\. [^\n]+\n)+</plan>\Z"
PLAN_BODY_RE = r"\A(?:\d+\. [^\n]+\n?)+\Z"
CODE_RE = r"\A```python\n[\s\S]+\n```\Z"
_FENCE = re.compile(r"\A```python\n([\s\S]*)\n```\Z")


@dataclass
class Failure:
    column: str | None
    expectation: str
    unexpected_count: int | None
    examples: list = field(default_factory=list)  # first offending (0-based row, value); printed as lines

    def __str__(self) -> str:
        where = f"column {self.column!r}" if self.column else "table"
        ex = "; ".join(f"line {r + 1}: {v!r:.80}" if r is not None else f"{v!s:.80}" for r, v in self.examples)
        n = f"{self.unexpected_count} unexpected" if self.unexpected_count is not None else "failed"
        return f"{where}: {self.expectation}: {n}" + (f" (first: {ex})" if ex else "")


@dataclass
class DatasetResult:
    name: str
    path: str
    success: bool
    rows: int
    failures: list[Failure] = field(default_factory=list)
    report: str | None = None


def code_parses(code: str | None) -> bool:
    if not isinstance(code, str):  # None, or the NaN pandas shows for a JSON null
        return False
    try:
        pysource.parse(code)
    except SyntaxError:
        return False
    return bool(code and code.strip())


def plan_numbering_ok(plan: str | None) -> bool:
    """Plan lines are numbered 1, 2, 3, ... (inside ``<plan>`` tags or bare)."""
    lines = [ln for ln in (plan or "").splitlines() if ln not in ("<plan>", "</plan>")]
    return bool(lines) and all(ln.startswith(f"{i}. ") for i, ln in enumerate(lines, 1))


def _frame(name: str, path: Path, eval_index, n: int, threshold: float = 0.5):
    """The dataset as a DataFrame plus derived columns (see the module docstring)."""
    import pandas as pd

    from corecode.data.build import UNJUDGEABLE_TAGS
    from corecode.data.decontam import ngrams
    from corecode.data.schema import Problem, count_tests, judgeable

    rows, _ = _scan(path)
    df = pd.DataFrame(rows)
    if df.empty:
        return df

    def overlaps(text) -> bool:
        grams = ngrams(str(text or ""), n)
        return bool(grams) and bool(eval_index) and len(grams & eval_index) / len(grams) >= threshold

    def problem(row: dict) -> Problem | None:  # the line as a Problem, for the judgeability checks; None if not one
        try:
            return Problem.model_validate(row)
        except ValueError:
            return None

    if name in SFT_SETS:
        for col in ("prompt", "completion", "task_id", "split"):
            if col not in df:
                df[col] = None
        df["task_split"] = df["task_id"].astype(str) + "|" + df["split"].astype(str)
        if name == "planner":
            df["plan_numbering_ok"] = df["completion"].map(plan_numbering_ok)
        else:
            df["code_parses"] = df["completion"].map(
                lambda c: bool(m := _FENCE.match(str(c or ""))) and code_parses(m.group(1))
            )
        df["eval_overlap"] = df["prompt"].map(overlaps)
    else:  # Problem JSONL
        for col in ("task_id", "prompt", "plan", "reference_solution", "tests"):
            if col not in df:
                df[col] = None
        problems = [problem(row) for row in rows]
        df["n_tests"] = [count_tests(p) if p else 0 for p in problems]
        df["longest_test"] = df["tests"].map(
            lambda ts: (
                max((len(t.get("input") or "") + len(t.get("output") or "") for t in ts), default=0)
                if isinstance(ts, list)
                else 0
            )
        )
        df["judgeable"] = [bool(p) and judgeable(p) and not UNJUDGEABLE_TAGS & set(p.tags) for p in problems]
        df["entry_ok"] = [bool(p) and (p.io_mode != "function" or bool(p.entry_point)) for p in problems]
        df["code_parses"] = df["reference_solution"].map(code_parses)
        df["reference_ok"] = df["reference_solution"].map(lambda c: not isinstance(c, str) or code_parses(c))
        df["plan_numbering_ok"] = df["plan"].map(plan_numbering_ok)
        df["eval_overlap"] = df["prompt"].map(overlaps)
        df = df.drop(columns=["tests", "tags"], errors="ignore")  # nested lists: not needed by any expectation
    return df


def rl_source(name: str, data: DataParams) -> str | None:
    """The external source whose RL file dataset ``name`` (``<source>_rl``) is, or None."""
    source = name.removesuffix("_rl")
    return source if name.endswith("_rl") and source in data.sources else None


def dataset_path(name: str, data: DataParams, processed_dir: str | Path = PROCESSED) -> Path:
    """The file of dataset ``name``: ``<processed_dir>/<name>.jsonl``, or ``sources/<name>.jsonl`` for an RL file."""
    from corecode.data.build import SOURCES_DIR

    folder = Path(processed_dir) / SOURCES_DIR if rl_source(name, data) else Path(processed_dir)
    return folder / f"{name}.jsonl"


def build_suite(name: str, data: DataParams, split: str | None = None, source: str | None = None):
    """The ``ExpectationSuite`` for dataset ``name``: an SFT set (the rows of ``source`` in it, when given), a
    ``composite_<split>`` Problem file, or an external source's RL file ``<source>_rl``."""
    import great_expectations as gx
    from great_expectations import expectations as E

    v = data.validation
    suite = gx.ExpectationSuite(name=f"corecode_{name}" + (f".{source}" if source else ""))
    add = suite.add_expectation
    add(E.ExpectTableRowCountToBeBetween(min_value=v.min_rows))
    if rl_source(name, data):
        _rl_expectations(add, v.limits(data.sources[rl_source(name, data)].loader))
    elif name in SFT_SETS:
        limits = v.limits(source or "composite")
        for col in ("prompt", "completion", "task_id", "source", "split", "provenance"):
            add(E.ExpectColumnValuesToNotBeNull(column=col))
        add(E.ExpectColumnValuesToBeUnique(column="task_split"))
        add(E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1, max_value=limits.max_prompt_chars))
        add(
            E.ExpectColumnValueLengthsToBeBetween(
                column="completion", min_value=1, max_value=limits.max_completion_chars
            )
        )
        add(E.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val"]))
        if name == "planner":
            add(E.ExpectColumnValuesToMatchRegex(column="completion", regex=PLAN_RE))
            add(E.ExpectColumnValuesToBeInSet(column="plan_numbering_ok", value_set=[True]))
        else:
            add(E.ExpectColumnValuesToMatchRegex(column="completion", regex=CODE_RE))
            add(E.ExpectColumnValuesToBeInSet(column="code_parses", value_set=[True]))
        add(E.ExpectColumnValuesToBeInSet(column="eval_overlap", value_set=[False]))
    else:
        split = split or name.split("_", 1)[1]
        for col in ("task_id", "prompt", "entry_point", "reference_solution", "plan"):
            add(E.ExpectColumnValuesToNotBeNull(column=col))
        add(E.ExpectColumnValuesToBeUnique(column="task_id"))
        add(E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1, max_value=v.max_prompt_chars))
        add(E.ExpectColumnValuesToMatchRegex(column="plan", regex=PLAN_BODY_RE))
        add(E.ExpectColumnValuesToBeInSet(column="plan_numbering_ok", value_set=[True]))
        add(E.ExpectColumnValuesToBeInSet(column="code_parses", value_set=[True]))
        add(E.ExpectColumnValuesToBeBetween(column="n_tests", min_value=1))
        add(E.ExpectColumnValuesToBeInSet(column="split", value_set=[split]))
        expected = {
            "train": data.composite.n_train,
            "val": data.composite.n_val,
            "test": data.composite.n_test,
            "dev": data.composite.n_dev,
            "rl": data.composite.n_rl,
        }
        add(E.ExpectTableRowCountToEqual(value=expected[split]))
        if split != "test":
            add(E.ExpectColumnValuesToBeInSet(column="eval_overlap", value_set=[False]))
    return suite


def _rl_expectations(add, limits: SourceLimits) -> None:
    """An external source's RL problems: judgeable within its limits, decontaminated. Plans and reference solutions
    are optional (Codeforces has none); a reference that is there must parse."""
    from great_expectations import expectations as E

    for col in ("task_id", "prompt", "io_mode"):
        add(E.ExpectColumnValuesToNotBeNull(column=col))
    add(E.ExpectColumnValuesToBeUnique(column="task_id"))
    add(E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1, max_value=limits.max_prompt_chars))
    add(E.ExpectColumnValuesToBeInSet(column="split", value_set=["rl"]))
    add(E.ExpectColumnValuesToBeInSet(column="io_mode", value_set=["function", "stdio"]))
    add(E.ExpectColumnValuesToBeInSet(column="entry_ok", value_set=[True]))
    add(E.ExpectColumnValuesToBeInSet(column="judgeable", value_set=[True]))
    add(E.ExpectColumnValuesToBeBetween(column="n_tests", min_value=limits.min_tests, max_value=limits.max_tests))
    add(E.ExpectColumnValuesToBeBetween(column="longest_test", max_value=limits.max_test_chars))
    add(E.ExpectColumnValuesToBeInSet(column="reference_ok", value_set=[True]))
    add(E.ExpectColumnValuesToBeInSet(column="eval_overlap", value_set=[False]))


def _failures(result: dict, df) -> list[Failure]:
    out = []
    for r in result["results"]:
        if r["success"]:
            continue
        cfg = r["expectation_config"]
        col = cfg["kwargs"].get("column")
        res = r.get("result") or {}
        idx = (res.get("unexpected_index_list") or [])[:3]
        examples = []
        for i in idx:
            row = i if isinstance(i, int) else None  # an index label of the frame: the file line - 1
            value = df[col].loc[row] if (row is not None and col in df) else i
            value = value.item() if hasattr(value, "item") else value  # numpy scalar -> plain Python
            if isinstance(value, float) and value != value:
                value = None  # NaN is how pandas shows a JSON null
            examples.append((row, value))
        if not examples and "observed_value" in res:
            examples = [(None, f"observed {res['observed_value']}")]
        out.append(Failure(col, cfg["type"], res.get("unexpected_count"), examples))
    return out


def default_datasets(data: DataParams) -> list[str]:
    """``data.validation.datasets`` plus the RL file of every external source in ``data.train_sources`` that keeps
    problems for GRPO (``rl_fraction`` > 0)."""
    rl = [f"{s}_rl" for s in data.train_sources if s != "composite" and data.sources[s].rl_fraction > 0]
    return list(data.validation.datasets) + [name for name in rl if name not in data.validation.datasets]


def validate_datasets(
    data: DataParams,
    names: list[str] | None = None,
    processed_dir: str | Path = PROCESSED,
    reports_dir: str | Path = REPORTS,
    eval_problems=None,
    html: bool = True,
) -> list[DatasetResult]:
    """Validate each named dataset (default: ``default_datasets``) and write the GX reports; an SFT set gives one
    result per source in it (see the module docstring).

    ``html``: also build GX data docs (``<reports_dir>/gx_docs/index.html``).
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    logging.getLogger("great_expectations").setLevel(logging.ERROR)

    names = names or default_datasets(data)
    processed_dir, gx_dir = Path(processed_dir), Path(reports_dir) / "gx"
    gx_dir.mkdir(parents=True, exist_ok=True)
    if eval_problems is None:
        from corecode.data.build import eval_problems as decontam_set

        eval_problems = decontam_set(data)  # what build-data decontaminated against, composite splits aside
    index = _decontam_index(eval_problems, data.decontam.n)
    ctx = _gx_context(Path(reports_dir), html)
    pandas = ctx.data_sources.add_pandas("corecode")
    results = []
    for name in names:
        if {"composite_rl": not data.composite.n_rl, "composite_dev": not data.composite.n_dev}.get(name):
            continue  # no such split configured: its file is empty by design
        results += _validate_dataset(name, data, processed_dir, gx_dir, index, ctx, pandas, html)
    _write_summary(results, gx_dir / "summary.json")
    return results


def _decontam_index(eval_problems, n: int) -> set:
    """The word n-grams of the evaluation problems' prompts and reference solutions."""
    from corecode.data.decontam import ngrams

    index: set = set()
    for p in eval_problems:
        for t in (p.prompt, p.reference_solution):
            index |= ngrams(t or "", n)
    return index


def _gx_context(reports_dir: Path, html: bool):
    """An ephemeral GX context without progress bars; with ``html``, a data docs site under
    ``<reports_dir>/gx_docs``."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    if html:
        ctx.add_data_docs_site(
            site_name="corecode",
            site_config={
                "class_name": "SiteBuilder",
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": str((reports_dir / "gx_docs").resolve()),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            },
        )
    return ctx


def _validate_dataset(
    name: str, data: DataParams, processed_dir: Path, gx_dir: Path, index: set, ctx, pandas, html: bool
) -> list[DatasetResult]:
    """One dataset's results (one per source of an SFT set), each suite's GX result written to ``gx_dir``; lines
    that are not JSON objects are added to the first result's failures."""
    path = dataset_path(name, data, processed_dir)
    if not path.exists():
        return [
            DatasetResult(
                name, str(path), False, 0, [Failure(None, "file_exists", None, [(None, f"{path} not found")])]
            )
        ]
    _, bad = _scan(path)
    df = _frame(name, path, index, data.decontam.n, data.decontam.threshold)
    if df.empty:
        results = [
            DatasetResult(name, str(path), False, 0, [Failure(None, "expect_table_row_count_to_be_between", 0, [])])
        ]
        _add_bad_lines(results[0], bad)
        return results
    if name in SFT_SETS and "source" in df:  # one suite per source, each with its limits
        parts = [(src, df[df["source"] == src]) for src in dict.fromkeys(df["source"].fillna("composite"))]
    else:
        parts = [(None, df)]
    results = []
    for src, part in parts:
        label = name if src in (None, "composite") else f"{name}.{src}"
        suite = build_suite(name, data, source=src if src != "composite" else None)
        res, result = _run_suite(ctx, pandas, label, suite, part, html)
        report = gx_dir / f"{label}.json"
        report.write_text(json.dumps(_stable(result), indent=1, default=str) + "\n")
        results.append(
            DatasetResult(label, str(path), bool(res.success), len(part), _failures(result, part), str(report))
        )
    _add_bad_lines(results[0], bad)
    return results


def _write_summary(results: list[DatasetResult], path: Path) -> None:
    summary = [
        {
            "dataset": r.name,
            "path": r.path,
            "success": r.success,
            "rows": r.rows,
            "report": r.report,
            "failures": [str(f) for f in r.failures],
        }
        for r in results
    ]
    path.write_text(json.dumps(summary, indent=2) + "\n")


def _scan(path: Path) -> tuple[list[dict], list[tuple[int, str]]]:
    """The JSON-object lines of a JSONL file, and ``(0-based line, why)`` of every other non-blank line (read on past
    them, unlike corecode.data.io.read_jsonl, so that validation reports them all)."""
    rows, bad = [], []
    with Path(path).open(errors="replace") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                bad.append((i, f"not valid JSON: {e.msg}"))
                continue
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad.append((i, f"a JSON {type(row).__name__}, not an object"))
    return rows, bad


def _add_bad_lines(result: DatasetResult, bad: list[tuple[int, str]]) -> None:
    """Lines of the file that are not JSON objects (:func:`_scan`) fail its (first) result."""
    if bad:
        result.failures.insert(0, Failure(None, "lines_are_json_objects", len(bad), bad[:3]))
        result.success = False


# What differs between two GX runs on the same data: run times and random ids.
_VOLATILE_META = ("run_id", "validation_time", "validation_id", "checkpoint_id")


def _stable(result: dict) -> dict:
    """A GX validation result (``to_json_dict``) without its run times and random ids."""
    meta = {k: v for k, v in (result.get("meta") or {}).items() if k not in _VOLATILE_META}
    if isinstance(meta.get("batch_markers"), dict):
        meta["batch_markers"] = {k: v for k, v in meta["batch_markers"].items() if k != "ge_load_time"}
    results = [
        {**r, "expectation_config": {k: v for k, v in r.get("expectation_config", {}).items() if k != "id"}}
        for r in result.get("results", [])
    ]
    return {**{k: v for k, v in result.items() if k != "id"}, "meta": meta, "results": results}


def _run_suite(ctx, pandas, label: str, suite, df, html: bool):
    """Run one suite on a frame through a GX checkpoint (data docs updated when ``html``)."""
    import great_expectations as gx

    batch_def = pandas.add_dataframe_asset(label).add_batch_definition_whole_dataframe("all")
    suite = ctx.suites.add(suite)
    vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=label, data=batch_def, suite=suite))
    actions = [gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=["corecode"])] if html else []
    checkpoint = ctx.checkpoints.add(
        gx.Checkpoint(
            name=f"corecode_{label}",
            validation_definitions=[vd],
            actions=actions,
            result_format={"result_format": "COMPLETE"},
        )
    )
    res = next(iter(checkpoint.run(batch_parameters={"dataframe": df}).run_results.values()))
    return res, res.to_json_dict()
