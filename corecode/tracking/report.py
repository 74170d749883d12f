"""``corecode report``: data/reports/metrics.json + training logs -> report.md and PNG plots.

Input shape (written by the evaluate stage)::

    {"methods": {METHOD: {BENCHMARK: {"pass_at_1": float, "pass_at_k": {"pass_at_5": float, ...},
                                      "failures": {verdict: count or fraction}, "efficiency": {name: number}}}},
     "comparisons": [{"a": METHOD, "b": METHOD, "benchmark": BENCHMARK, "delta": float, "p_value": float}]}

``failure_breakdown`` is accepted for ``failures``. Training logs are data/reports/train/*.json (a list of records
with ``step``, or ``{"log_history": [...]}`` as in ``Trainer.state``) or *.csv with a ``step`` column.
"""

from __future__ import annotations

import base64
import csv
import json
import math
import re
from pathlib import Path
from typing import Any

FAILURE_KEYS = ("failures", "failure_breakdown")


class ReportError(ValueError):
    """metrics.json or a training log is malformed; the message names the file and key."""


def load_metrics(path: str | Path) -> dict[str, Any]:
    """Read and check metrics.json: ``methods`` -> method -> benchmark -> dict with ``pass_at_1``."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"{path}: metrics file not found (written by the evaluate stage)")
    try:
        data = json.loads(path.read_text())
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON: {e}") from None
    methods = data.get("methods") if isinstance(data, dict) else None
    if not isinstance(methods, dict) or not methods:
        raise ReportError(f"{path}: expected a non-empty 'methods' mapping at the top level")
    for m, benches in methods.items():
        if not isinstance(benches, dict):
            raise ReportError(f"{path}: methods.{m}: expected a mapping benchmark -> metrics")
        for b, res in benches.items():
            if not isinstance(res, dict) or not isinstance(res.get("pass_at_1"), int | float):
                raise ReportError(f"{path}: methods.{m}.{b}.pass_at_1: missing or not a number")
    for i, c in enumerate(data.get("comparisons") or []):
        missing = {"a", "b", "benchmark", "delta", "p_value"} - set(c)
        if missing:
            raise ReportError(f"{path}: comparisons[{i}]: missing {sorted(missing)}")
    return data


def load_train_log(path: str | Path) -> list[dict[str, float]] | None:
    """Numeric records with a ``step`` from a training log (.json list / log_history, or .csv).

    None for a JSON object that holds no history (e.g. the ``sft_<role>_summary.json`` beside the logs)."""
    path = Path(path)
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            rows: list[dict] = list(csv.DictReader(f))
    else:
        try:
            data = json.loads(path.read_text())
        except ValueError as e:
            raise ReportError(f"{path}: not valid JSON: {e}") from None
        if isinstance(data, dict):
            data = next((data[k] for k in ("log_history", "history") if isinstance(data.get(k), list)), None)
            if data is None:
                return None
        if not isinstance(data, list):
            raise ReportError(f"{path}: expected a list of records or a dict with 'log_history'")
        rows = data
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "step" not in row:
            raise ReportError(f"{path}: record {i}: expected an object with a 'step'")
        rec = {}
        for k, v in row.items():
            try:
                x = float(v)
            except (TypeError, ValueError):
                continue
            if math.isfinite(x):
                rec[k] = x
        out.append(rec)
    return out


def _methods_for(data: dict, bench: str) -> list[str]:
    return [m for m, benches in data["methods"].items() if bench in benches]


def benchmarks(data: dict) -> list[str]:
    seen: dict[str, None] = {}
    for benches in data["methods"].values():
        seen.update(dict.fromkeys(benches))
    return list(seen)


def _failures(res: dict) -> dict[str, float]:
    """Verdict -> fraction of samples (``{"counts", "fractions"}`` as corecode.evaluation writes, or a flat map)."""
    for k in FAILURE_KEYS:
        f = res.get(k)
        if isinstance(f, dict):
            f = f.get("fractions") or f.get("counts") or f
            return {v: float(x) for v, x in f.items() if isinstance(x, int | float) and not isinstance(x, bool)}
    return {}


def _efficiency(data: dict, method: str, bench: str) -> dict[str, float]:
    """Generation cost (the benchmark result's ``efficiency``: tokens, model calls) merged with the runtime and peak
    memory of passing code (top-level ``efficiency.<method>.<bench>``, from efficiency.json)."""

    def flat(eff: Any) -> dict[str, float]:
        if isinstance(eff, dict) and isinstance(eff.get("overall"), dict):  # the evaluate stage's per-group layout
            eff = eff["overall"]
        return _numeric(eff if isinstance(eff, dict) else {})

    own = flat(data["methods"][method][bench].get("efficiency"))
    timing = flat(((data.get("efficiency") or {}).get(method) or {}).get(bench))
    return {**own, **timing}


def _numeric(d: Any) -> dict[str, float]:
    return {k: float(v) for k, v in (d or {}).items() if isinstance(v, int | float) and not isinstance(v, bool)}


# -------------------------------------------------------------------------------------------------------- plots


def _bar_groups(ax, groups: list[str], series: dict[str, list[float]], ylabel: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width, label=label)
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def make_plots(data: dict, train_logs: dict[str, list[dict]], out_dir: Path) -> list[Path]:
    """Write PNGs (pass@k, failures, efficiency per benchmark; one figure per training log); return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fig, name in _figures(plt, data, train_logs):
        if fig is None:
            continue
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=100)
        plt.close(fig)  # one figure open at a time, however many benchmarks and logs
        written.append(out_dir / name)
    return written


def _figures(plt, data: dict, train_logs: dict[str, list[dict]]):
    """Yield (figure, or None where there is nothing to plot; its file name), one figure drawn at a time."""
    for bench in benchmarks(data):
        methods = _methods_for(data, bench)
        yield _pass_at_k_figure(plt, data, bench, methods), f"pass_at_k_{bench}.png"
        yield _failures_figure(plt, data, bench, methods), f"failures_{bench}.png"
        yield _efficiency_figure(plt, data, bench, methods), f"efficiency_{bench}.png"
    for name, records in train_logs.items():
        yield _training_figure(plt, name, records), f"train_{name}.png"


def _pass_at_k_figure(plt, data: dict, bench: str, methods: list[str]):
    """Grouped bars: each method's pass@1 and every other pass@k it has, k ascending."""
    results = [data["methods"][m][bench] for m in methods]
    ks = ["pass_at_1"] + sorted(
        {k for r in results for k in _numeric(r.get("pass_at_k"))} - {"pass_at_1"},
        key=lambda k: int(k.rsplit("_", 1)[-1]) if k.rsplit("_", 1)[-1].isdigit() else 0,
    )
    series = {
        k: [r["pass_at_1"] if k == "pass_at_1" else _numeric(r.get("pass_at_k")).get(k, 0.0) for r in results]
        for k in ks
    }
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(methods)), 4))
    _bar_groups(ax, methods, series, "pass rate")
    ax.set_title(f"pass@k on {bench}")
    return fig


def _failures_figure(plt, data: dict, bench: str, methods: list[str]):
    """Stacked bars of each method's share of programs by failure verdict; None when no method has a failure."""
    fails = [_failures(data["methods"][m][bench]) for m in methods]
    verdicts = sorted({v for f in fails for v in f})
    if not verdicts:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(methods)), 4))
    bottom = [0.0] * len(methods)
    for v in verdicts:
        vals = [f.get(v, 0.0) for f in fails]
        ax.bar(methods, vals, bottom=bottom, label=v)
        bottom = [b + x for b, x in zip(bottom, vals)]
    ax.set_title(f"failure breakdown on {bench}")
    ax.tick_params(axis="x", rotation=20)
    ax.legend(fontsize=8)
    return fig


def _efficiency_figure(plt, data: dict, bench: str, methods: list[str]):
    """One panel per efficiency figure, a bar per method; None when no method has one."""
    effs = [_efficiency(data, m, bench) for m in methods]
    names = sorted({k for e in effs for k in e})
    if not names:
        return None
    fig, axes = plt.subplots(1, len(names), figsize=(3.5 * len(names), 3.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        ax.bar(methods, [e.get(name, 0.0) for e in effs])
        ax.set_title(name, fontsize=9)
        ax.tick_params(axis="x", rotation=45, labelsize=7)
    fig.suptitle(f"efficiency on {bench}")
    return fig


def _training_figure(plt, name: str, records: list[dict]):
    """One panel per logged value against the step, three a row; None when the log has only steps."""
    keys = sorted({k for r in records for k in r} - {"step", "epoch"})
    if not keys:
        return None
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in records if key in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 50 else None)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step")
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.suptitle(f"training: {name}")
    return fig


# ------------------------------------------------------------------------------------------------------ markdown


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.3e}"
    return str(x)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines + [""]


def render_markdown(data: dict, plots: list[Path], report_dir: Path) -> str:
    """The report: per-benchmark pass@k, failures and efficiency tables, comparisons, and the plots."""
    lines = ["# corecode evaluation report", ""]
    rel = {p.name: p.relative_to(report_dir).as_posix() if p.is_relative_to(report_dir) else str(p) for p in plots}
    for bench in benchmarks(data):
        methods = _methods_for(data, bench)
        results = {m: data["methods"][m][bench] for m in methods}
        ks = sorted({k for r in results.values() for k in _numeric(r.get("pass_at_k"))} - {"pass_at_1"})
        lines += [f"## {bench}", ""]
        lines += _table(
            ["method", "problems", "pass_at_1", *ks],
            [
                [m, r.get("n_problems", ""), r["pass_at_1"], *(_numeric(r.get("pass_at_k")).get(k, "") for k in ks)]
                for m, r in results.items()
            ],
        )
        verdicts = sorted({v for r in results.values() for v in _failures(r)})
        if verdicts:
            lines += ["Failure breakdown (fraction of samples):", ""]
            lines += _table(
                ["method", *verdicts], [[m, *(_failures(r).get(v, "") for v in verdicts)] for m, r in results.items()]
            )
        eff = {m: _efficiency(data, m, bench) for m in methods}
        names = sorted({k for e in eff.values() for k in e})
        if names:
            lines += ["Efficiency (generation cost per sample; runtime and peak memory of passing code):", ""]
            lines += _table(["method", *names], [[m, *(e.get(k, "") for k in names)] for m, e in eff.items()])
        for prefix in ("pass_at_k", "failures", "efficiency"):
            name = f"{prefix}_{bench}.png"
            if name in rel:
                lines += [f"![{prefix} on {bench}]({rel[name]})", ""]
    comps = data.get("comparisons") or []
    if comps:
        lines += ["## Paired comparisons", "", "Paired bootstrap over problems; delta = pass@1(a) - pass@1(b).", ""]
        lines += _table(
            ["a", "b", "benchmark", "problems", "delta", "p_value"],
            [
                [c["a"], c["b"], c["benchmark"], c.get("n_problems", ""), float(c["delta"]), float(c["p_value"])]
                for c in comps
            ],
        )
    train = [n for n in rel if n.startswith("train_")]
    if train:
        lines += ["## Training curves", ""]
        lines += [f"![{n[6:-4]}]({rel[n]})\n" for n in sorted(train)]
    return "\n".join(lines).rstrip() + "\n"


_IMAGE_LINK = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)")


def embed_images(markdown: str, base_dir: str | Path) -> str:
    """The report with each ``![alt](plots/x.png)`` as a ``data:image/png;base64`` URI, for viewers that cannot
    resolve a path beside the file: the Prefect artifact (its markdown renderer allows ``data:image/`` sources)
    and :func:`render_html`. A link whose file is missing stays as it is."""

    def inline(m: re.Match) -> str:
        path = Path(base_dir) / m.group(2)
        if not path.is_file():
            return m.group(0)
        return f"![{m.group(1)}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})"

    return _IMAGE_LINK.sub(inline, markdown)


_HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>corecode evaluation report</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1em; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }}
img {{ max-width: 100%; }}
</style></head>
<body>
{body}</body></html>
"""


def render_html(markdown: str, base_dir: str | Path) -> str:
    """The report as one self-contained HTML page, plots inside it: what MLflow's artifact preview shows with
    pictures (its markdown view drops images, whether ``data:`` URIs or paths). markdown-it-py (which rich
    depends on) renders it, tables included."""
    from markdown_it import MarkdownIt

    return _HTML_PAGE.format(body=MarkdownIt("commonmark").enable("table").render(embed_images(markdown, base_dir)))


README_BEGIN = "<!-- RESULTS:BEGIN -->"
README_END = "<!-- RESULTS:END -->"


def _pct(x: Any) -> str:
    return "-" if not isinstance(x, int | float) else f"{100 * x:.1f}"


def _signed(x: Any) -> str:
    return "-" if not isinstance(x, int | float) else f"{100 * x:+.1f}"


def _ci(low: Any, high: Any, signed: bool = False) -> str:
    fmt = _signed if signed else _pct
    return "-" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}]"


def readme_results(data: dict) -> str:
    """The README's results block, from metrics.json alone: per method and benchmark pass@1 with its bootstrap
    confidence interval (``pass_at_1_ci``), the seed(s), Collaboration Gain and tokens per sample on the first
    benchmark, and the number of problems where methods were scored on different numbers; then every paired
    comparison (the problems both sides were scored on, delta, its interval, one-sided or two-sided p)."""
    benches = benchmarks(data)
    first = benches[0] if benches else None
    methods = list(data["methods"])
    cis = [r["pass_at_1_ci"] for m in methods for r in data["methods"][m].values() if "pass_at_1_ci" in r]
    conf = cis[0].get("confidence") if cis else None
    seed = data.get("seed", "not recorded")
    level = f"{100 * conf:g}" if conf else "?"
    lines = [
        "Generated by `corecode report --readme README.md` from `data/reports/metrics.json`; do not edit by hand.",
        "",
        f"pass@1 in percent with its {level}% bootstrap confidence interval over problems; "
        f"seed {seed}: one training run per method, so the intervals cover the choice of problems, not of seeds. "
        + ", ".join(f"`{b}`: {_n_problems(data, b)} problems" for b in benches)
        + ".",
        "",
    ]
    # A benchmark some methods score on fewer problems (`evaluate.per_method.*.max_problems`) gets a column of
    # counts, so that rows scored on different problems are not read as comparable.
    mixed = {b for b in benches if len(_problem_counts(data, b)) > 1}
    header = ["method"]
    for b in benches:
        header += [f"{b} pass@1", "95% CI" if conf == 0.95 else "CI"] + (["problems"] if b in mixed else [])
    header += ["Collaboration Gain", "tokens / sample"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in methods:
        res = data["methods"][m]
        row = [m]
        for b in benches:
            r = res.get(b, {})
            ci = r.get("pass_at_1_ci") or {}
            row += [_pct(r.get("pass_at_1")), _ci(ci.get("low"), ci.get("high"))]
            if b in mixed:
                row.append(_count(r.get("n_problems")))
        head = res.get(first, {}) if first else {}
        tokens = (head.get("efficiency") or {}).get("tokens_per_sample")
        row += [_signed(head.get("collaboration_gain")), "-" if tokens is None else f"{tokens:.0f}"]
        lines.append("| " + " | ".join(row) + " |")
    comps = data.get("comparisons") or []
    if comps:
        sides = {c.get("alternative", "greater") for c in comps}
        kind = "one-sided, a better than b" if sides == {"greater"} else ", ".join(sorted(sides))
        lines += [
            "",
            f"Paired bootstrap over problems ({kind}); delta and its interval in points:",
            "",
            "| a | b | benchmark | problems | delta | CI | p-value |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in comps:
            ci = _ci(c.get("ci_low"), c.get("ci_high"), signed=True)
            lines.append(
                f"| {c['a']} | {c['b']} | {c['benchmark']} | {_count(c.get('n_problems'))} | {_signed(c['delta'])} "
                f"| {ci} | {float(c['p_value']):.4f} |"
            )
    return "\n".join(lines) + "\n"


def _count(n: Any) -> str:
    return str(int(n)) if isinstance(n, int | float) else "-"


def _problem_counts(data: dict, bench: str) -> set[int]:
    """The numbers of problems the methods were scored on for ``bench``."""
    return {
        int(r["n_problems"])
        for res in data["methods"].values()
        if isinstance((r := res.get(bench)), dict) and isinstance(r.get("n_problems"), int | float)
    }


def _n_problems(data: dict, bench: str) -> str:
    return "/".join(map(str, sorted(_problem_counts(data, bench)))) or "?"


def update_readme(readme: str | Path, metrics_path: str | Path) -> Path:
    """Replace what lies between README_BEGIN and README_END in ``readme`` with :func:`readme_results` of
    ``metrics_path``; the rest of the file is kept byte for byte. Both markers must be there, once each."""
    readme = Path(readme)
    text = readme.read_text() if readme.is_file() else None
    if text is None:
        raise ReportError(f"{readme}: file not found")
    if (
        text.count(README_BEGIN) != 1
        or text.count(README_END) != 1
        or text.index(README_BEGIN) > text.index(README_END)
    ):
        raise ReportError(f"{readme}: needs one {README_BEGIN} line followed by one {README_END} line")
    head, rest = text.split(README_BEGIN)
    _, tail = rest.split(README_END)
    readme.write_text(f"{head}{README_BEGIN}\n{readme_results(load_metrics(metrics_path))}{README_END}{tail}")
    return readme


def headline_metrics(data: dict) -> dict[str, float]:
    """What the pipeline's parent run shows: pass@1 per method and benchmark, and each paired comparison's delta and
    p-value (``delta.A_vs_B.BENCHMARK``)."""
    out = {
        f"{m}.{b}.pass_at_1": float(r["pass_at_1"])
        for m, benches in data["methods"].items()
        for b, r in benches.items()
    }
    for c in data.get("comparisons") or []:
        name = f"{c['a']}_vs_{c['b']}.{c['benchmark']}"
        out[f"delta.{name}"] = float(c["delta"])
        out[f"p_value.{name}"] = float(c["p_value"])
    return out


def flat_metrics(data: dict) -> dict[str, float]:
    """``{METHOD.BENCHMARK.pass_at_1: x, ...}`` for MLflow (names never contain '@')."""
    out = {}
    for m, benches in data["methods"].items():
        for b, r in benches.items():
            out[f"{m}.{b}.pass_at_1"] = float(r["pass_at_1"])
            for k, v in _numeric(r.get("pass_at_k")).items():
                out[f"{m}.{b}.{k}"] = v
    return out


def build_report(metrics_path: str | Path, train_dir: str | Path, out_dir: str | Path) -> tuple[Path, list[Path]]:
    """Write ``out_dir/report.md`` and ``out_dir/plots/*.png``; return (report path, plot paths)."""
    data = load_metrics(metrics_path)
    # Timings are kept beside metrics.json (they differ run to run; metrics.json is reproducible bit for bit).
    eff_path = Path(metrics_path).with_name("efficiency.json")
    if "efficiency" not in data and eff_path.exists():
        data["efficiency"] = json.loads(eff_path.read_text())
    train_dir, out_dir = Path(train_dir), Path(out_dir)
    logs = {}
    if train_dir.is_dir():
        for p in sorted([*train_dir.glob("*.json"), *train_dir.glob("*.csv")]):
            records = load_train_log(p)
            if records is not None:
                logs[p.stem] = records
    plots = make_plots(data, logs, out_dir / "plots")
    report = out_dir / "report.md"
    report.write_text(render_markdown(data, plots, out_dir))
    return report, plots
