"""`corecode report --readme README.md`: the README's results block is generated from metrics.json, and read back,
every number in it is metrics.json's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from corecode.tracking.cli import register
from corecode.tracking.report import README_BEGIN, README_END, load_metrics, readme_results

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
app = typer.Typer()
register(app)


def _result(p: float, lo: float, hi: float, n: int, gain: float | None = None, tokens: float = 80.0) -> dict:
    out = {
        "pass_at_1": p,
        "pass_at_1_ci": {"low": lo, "high": hi, "confidence": 0.95},
        "n_problems": n,
        "efficiency": {"tokens_per_sample": tokens},
    }
    if gain is not None:
        out["collaboration_gain"] = gain
    return out


def _metrics() -> dict:
    """metrics.json as corecode metrics writes it (the keys the block reads)."""
    methods = {
        "planner_coder_grpo": {
            "composite_test": _result(0.362, 0.332, 0.394, 1000, 0.192, 84.2),
            "humaneval": _result(0.0, 0.0, 0.0, 164),
        },
        "planner_coder_ptx": {
            "composite_test": _result(0.331, 0.302, 0.361, 1000, 0.171, 83.9),
            "humaneval": _result(0.0061, 0.0, 0.0183, 164),
        },
        "single_grpo": {
            "composite_test": _result(0.121, 0.101, 0.142, 1000, None, 50.0),
            "humaneval": _result(0.0, 0.0, 0.0, 164),
        },
    }
    comps = [
        {"a": "planner_coder_grpo", "b": "planner_coder_ptx", "benchmark": "composite_test", "delta": 0.031,
         "ci_low": 0.012, "ci_high": 0.05, "p_value": 0.0012, "alternative": "greater", "n_problems": 1000},
        {"a": "planner_coder_grpo", "b": "single_grpo", "benchmark": "humaneval", "delta": -0.0061,
         "ci_low": -0.0183, "ci_high": 0.0, "p_value": 1.0, "alternative": "greater", "n_problems": 164},
    ]  # fmt: skip
    return {"methods": methods, "comparisons": comps, "seed": 7}


def _rows(block: str, first_cell: str) -> list[list[str]]:
    """The table rows of ``block`` whose header starts with ``first_cell``."""
    tables, current = [], None
    for line in block.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if current is None:
                current = [cells]
                tables.append(current)
            elif not set("".join(cells)) <= {"-"}:
                current.append(cells)
        else:
            current = None
    return next(t[1:] for t in tables if t[0][0] == first_cell)


def _pct(x: float) -> float:
    return round(100 * x, 1)


def test_readme_block_is_generated_from_metrics_and_matches_it(tmp_path):
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps(_metrics()))
    readme = tmp_path / "README.md"
    before, after = "# project\n\nintro\n\n", "\n\nprose after the block\n"
    readme.write_text(f"{before}{README_BEGIN}\nhand-typed figures\n{README_END}{after}")

    r = runner.invoke(app, ["report", "--readme", str(readme), "--metrics", str(metrics)])
    assert r.exit_code == 0, r.output
    text = readme.read_text()
    assert text.startswith(before + README_BEGIN) and text.endswith(README_END + after)
    block = text[text.index(README_BEGIN) + len(README_BEGIN) : text.index(README_END)]
    assert "hand-typed" not in block and block.strip() == readme_results(load_metrics(metrics)).strip()
    assert "seed 7" in block and "95% bootstrap confidence interval" in block

    data = _metrics()
    rows = _rows(block, "method")
    assert [row[0] for row in rows] == list(data["methods"])
    for method, pass_test, ci_test, pass_he, ci_he, gain, tokens in rows:
        test, he = data["methods"][method]["composite_test"], data["methods"][method]["humaneval"]
        assert float(pass_test) == _pct(test["pass_at_1"]) and float(pass_he) == _pct(he["pass_at_1"])
        for cell, res in ((ci_test, test), (ci_he, he)):
            low, high = map(float, re.fullmatch(r"\[(.+), (.+)\]", cell).groups())
            assert (low, high) == (_pct(res["pass_at_1_ci"]["low"]), _pct(res["pass_at_1_ci"]["high"]))
        assert gain == ("-" if "collaboration_gain" not in test else f"{100 * test['collaboration_gain']:+.1f}")
        assert int(tokens) == round(test["efficiency"]["tokens_per_sample"])
    comps = _rows(block, "a")
    assert len(comps) == len(data["comparisons"])
    for (a, b, bench, n, delta, ci, p), c in zip(comps, data["comparisons"]):
        assert (a, b, bench, int(n)) == (c["a"], c["b"], c["benchmark"], c["n_problems"])
        assert float(delta) == _pct(c["delta"]) and float(p) == round(c["p_value"], 4)
        assert ci == f"[{100 * c['ci_low']:+.1f}, {100 * c['ci_high']:+.1f}]"

    # Regenerating changes nothing; a file without both markers is refused, naming it.
    assert runner.invoke(app, ["report", "--readme", str(readme), "--metrics", str(metrics)]).exit_code == 0
    assert readme.read_text() == text
    bad = tmp_path / "NOEND.md"
    bad.write_text(f"{README_BEGIN}\nx\n")
    r = runner.invoke(app, ["report", "--readme", str(bad), "--metrics", str(metrics)])
    assert r.exit_code == 2 and "NOEND.md: needs one" in r.output and bad.read_text() == f"{README_BEGIN}\nx\n"


def test_the_projects_readme_block_is_the_generated_one():
    text = (ROOT / "README.md").read_text()
    assert text.count(README_BEGIN) == 1 and text.count(README_END) == 1
    block = text[text.index(README_BEGIN) + len(README_BEGIN) : text.index(README_END)]
    assert block.lstrip().startswith("Generated by `corecode report --readme README.md`")


def test_rows_scored_on_fewer_problems_say_how_many(tmp_path):
    """An agent scored on the benchmark's first 200 problems beside methods scored on all 1000: a column of counts
    for that benchmark only, and its comparison names the 200 problems both sides were scored on."""
    data = _metrics()
    data["methods"]["planner_coder_grpo_debug"] = {"composite_test": _result(0.155, 0.11, 0.205, 200, 0.095, 88.0)}
    data["comparisons"].append(
        {"a": "planner_coder_grpo_debug", "b": "planner_coder_grpo", "benchmark": "composite_test", "delta": 0.0,
         "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0, "alternative": "greater", "n_problems": 200}
    )  # fmt: skip
    block = readme_results(data)
    header = next(line for line in block.splitlines() if line.startswith("| method"))
    assert [c.strip() for c in header.strip("|").split("|")][1:4] == ["composite_test pass@1", "95% CI", "problems"]
    assert "humaneval pass@1 | 95% CI | Collaboration" in header  # every method scored all 164 there
    counts = {row[0]: row[3] for row in _rows(block, "method")}
    assert counts == {"planner_coder_grpo": "1000", "planner_coder_ptx": "1000", "single_grpo": "1000",
                      "planner_coder_grpo_debug": "200"}  # fmt: skip
    assert _rows(block, "a")[-1][:4] == ["planner_coder_grpo_debug", "planner_coder_grpo", "composite_test", "200"]
    assert "`composite_test`: 200/1000 problems" in block
