"""``corecode validate-data``: one great-expectations suite per dataset, a readable verdict, and the GX report.

Each dataset (``data/processed/<name>.jsonl``) is loaded into a pandas frame; properties GX has no expectation for
(code parses, plan numbering, test count, overlap with evaluation problems) become derived columns that plain GX
expectations then check, so every failure is reported by GX with the column, expectation and offending rows. Results
go to ``data/reports/gx/<name>.json`` (the GX validation result), ``data/reports/gx/summary.json`` and the GX HTML
data docs ``data/reports/gx/data_docs/index.html``.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from corecode.data.config import DataParams
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
    try:
        ast.parse(code or "")
    except SyntaxError:
        return False
    return bool(code and code.strip())


def plan_numbering_ok(plan: str | None) -> bool:
    """Plan lines are numbered 1, 2, 3, ... (inside ``<plan>`` tags or bare)."""
    lines = [ln for ln in (plan or "").splitlines() if ln not in ("<plan>", "</plan>")]
    return bool(lines) and all(ln.startswith(f"{i}. ") for i, ln in enumerate(lines, 1))


def _frame(name: str, path: Path, eval_index, n: int):
    """The dataset as a DataFrame plus derived columns (see the module docstring)."""
    import pandas as pd

    from corecode.data.decontam import ngrams
    from corecode.data.io import read_jsonl

    df = pd.DataFrame(read_jsonl(path))
    if df.empty:
        return df

    def overlaps(text) -> bool:
        grams = ngrams(str(text or ""), n)
        return bool(grams) and bool(eval_index) and len(grams & eval_index) / len(grams) >= 0.5

    if name in SFT_SETS:
        for col in ("prompt", "completion", "task_id", "split"):
            if col not in df:
                df[col] = None
        df["task_split"] = df["task_id"].astype(str) + "|" + df["split"].astype(str)
        if name == "planner":
            df["plan_numbering_ok"] = df["completion"].map(plan_numbering_ok)
        else:
            df["code_parses"] = df["completion"].map(
                lambda c: bool(m := _FENCE.match(str(c or ""))) and code_parses(m.group(1)))
        df["eval_overlap"] = df["prompt"].map(overlaps)
    else:  # Problem JSONL
        for col in ("task_id", "prompt", "plan", "reference_solution", "tests"):
            if col not in df:
                df[col] = None
        df["n_tests"] = df["tests"].map(lambda t: len(t) if isinstance(t, list) else 0)
        df["code_parses"] = df["reference_solution"].map(code_parses)
        df["plan_numbering_ok"] = df["plan"].map(plan_numbering_ok)
        df["eval_overlap"] = df["prompt"].map(overlaps)
        df = df.drop(columns=["tests"])  # nested lists: not needed by any expectation
    return df


def build_suite(name: str, data: DataParams, split: str | None = None):
    """The ``ExpectationSuite`` for dataset ``name`` (an SFT set or a ``composite_<split>`` Problem file)."""
    import great_expectations as gx
    from great_expectations import expectations as E

    v = data.validation
    suite = gx.ExpectationSuite(name=f"corecode_{name}")
    add = suite.add_expectation
    add(E.ExpectTableRowCountToBeBetween(min_value=v.min_rows))
    if name in SFT_SETS:
        for col in ("prompt", "completion", "task_id", "source", "split", "provenance"):
            add(E.ExpectColumnValuesToNotBeNull(column=col))
        add(E.ExpectColumnValuesToBeUnique(column="task_split"))
        add(E.ExpectColumnValueLengthsToBeBetween(column="prompt", min_value=1, max_value=v.max_prompt_chars))
        add(E.ExpectColumnValueLengthsToBeBetween(column="completion", min_value=1, max_value=v.max_completion_chars))
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
        expected = {"train": data.composite.n_train, "val": data.composite.n_val, "test": data.composite.n_test,
                    "rl": data.composite.n_rl}
        add(E.ExpectTableRowCountToEqual(value=expected[split]))
        if split != "test":
            add(E.ExpectColumnValuesToBeInSet(column="eval_overlap", value_set=[False]))
    return suite


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
            row = i if isinstance(i, int) else None
            value = df[col].iloc[row] if (row is not None and col in df) else i
            value = value.item() if hasattr(value, "item") else value  # numpy scalar -> plain Python
            if isinstance(value, float) and value != value:
                value = None  # NaN is how pandas shows a JSON null
            examples.append((row, value))
        if not examples and "observed_value" in res:
            examples = [(None, f"observed {res['observed_value']}")]
        out.append(Failure(col, cfg["type"], res.get("unexpected_count"), examples))
    return out


def validate_datasets(data: DataParams, names: list[str] | None = None, processed_dir: str | Path = PROCESSED,
                      reports_dir: str | Path = REPORTS, eval_problems=None, html: bool = True
                      ) -> list[DatasetResult]:
    """Validate each named dataset (default: ``data.validation.datasets``) and write the GX reports.

    ``html``: also build GX data docs (``<reports_dir>/gx/data_docs/index.html``).
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    from corecode.data.decontam import ngrams

    names = names or list(data.validation.datasets)
    processed_dir, gx_dir = Path(processed_dir), Path(reports_dir) / "gx"
    gx_dir.mkdir(parents=True, exist_ok=True)
    if eval_problems is None:
        from corecode.data.benchmarks import load_benchmark

        eval_problems = [p for b in data.decontam.against if not b.startswith("composite")
                         for p in load_benchmark(b, params=data)]
    n = data.decontam.n
    index: set = set()
    for p in eval_problems:
        for t in (p.prompt, p.reference_solution):
            index |= ngrams(t or "", n)

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    if html:  # HTML data docs under <reports>/gx/data_docs/index.html
        ctx.add_data_docs_site(site_name="corecode", site_config={
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                              "base_directory": str((gx_dir / "data_docs").resolve())},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
    source = ctx.data_sources.add_pandas("corecode")
    results = []
    for name in names:
        if name == "composite_rl" and not data.composite.n_rl:
            continue  # no rl split configured: its file is empty by design
        path = processed_dir / f"{name}.jsonl"
        if not path.exists():
            results.append(DatasetResult(name, str(path), False, 0,
                                         [Failure(None, "file_exists", None, [(None, f"{path} not found")])]))
            continue
        df = _frame(name, path, index, n)
        if df.empty:
            results.append(DatasetResult(name, str(path), False, 0,
                                         [Failure(None, "expect_table_row_count_to_be_between", 0, [])]))
            continue
        batch_def = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("all")
        suite = ctx.suites.add(build_suite(name, data))
        vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch_def, suite=suite))
        actions = [gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=["corecode"])] if html else []
        checkpoint = ctx.checkpoints.add(gx.Checkpoint(
            name=f"corecode_{name}", validation_definitions=[vd], actions=actions,
            result_format={"result_format": "COMPLETE"}))
        res = next(iter(checkpoint.run(batch_parameters={"dataframe": df}).run_results.values()))
        result = res.to_json_dict()
        report = gx_dir / f"{name}.json"
        report.write_text(json.dumps(result, indent=1, default=str) + "\n")
        results.append(DatasetResult(name, str(path), bool(res.success), len(df), _failures(result, df), str(report)))
    summary = [{"dataset": r.name, "path": r.path, "success": r.success, "rows": r.rows, "report": r.report,
                "failures": [str(f) for f in r.failures]} for r in results]
    (gx_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return results
