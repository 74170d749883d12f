"""`corecode eval-samples` refuses bad input before anything runs: exit non-zero, file:line named, no --out."""

import json

import pytest
import typer
from typer.testing import CliRunner

from corecode.evaluation.cli import register


@pytest.fixture(scope="module")
def app():
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # keeps `eval-samples` a subcommand, as in the real `corecode` app
        pass

    register(app)
    return app


GOOD = json.dumps({"task_id": "HumanEval/0", "completion": "    return False\n"})


@pytest.mark.parametrize(
    "bad_line,message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"completion": "    pass\n"}), "missing or non-string 'task_id'"),
        (json.dumps({"task_id": "HumanEval/9999", "completion": "    pass\n"}), "unknown task_id 'HumanEval/9999'"),
        (json.dumps({"task_id": "HumanEval/1", "program": "x"}), "needs a 'completion' or a 'solution'"),
        (json.dumps({"task_id": "HumanEval/1", "completion": 3}), "'completion' must be a string"),
        (json.dumps(["HumanEval/1"]), "expected a JSON object"),
    ],
)
def test_malformed_line_names_file_and_line_and_writes_nothing(app, tmp_path, bad_line, message):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join([GOOD, "", GOOD, bad_line, GOOD]) + "\n")  # blank line 2 skipped; bad one is line 4
    out = tmp_path / "out" / "results.jsonl"
    r = CliRunner().invoke(app, ["eval-samples", str(samples), "--out", str(out), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert f"{samples}:4:" in r.stderr and message in r.stderr
    assert r.stdout == ""
    assert not out.exists() and not out.parent.exists()
    assert not (tmp_path / "samples.jsonl_results.jsonl").exists()


def test_other_bad_arguments(app, tmp_path):
    samples = tmp_path / "s.jsonl"
    samples.write_text(GOOD + "\n")
    runner = CliRunner()
    r = runner.invoke(app, ["eval-samples", str(samples), "--benchmark", "nope", "--no-progress"])
    assert r.exit_code == 2 and "benchmark 'nope'" in r.stderr
    r = runner.invoke(app, ["eval-samples", str(samples), "--k", "1,x", "--no-progress"])
    assert r.exit_code == 2 and "--k" in r.stderr
    r = runner.invoke(app, ["eval-samples", str(tmp_path / "missing.jsonl"), "--no-progress"])
    assert r.exit_code == 2 and "missing.jsonl: sample file not found" in r.stderr
    (tmp_path / "empty.jsonl").write_text("\n")
    r = runner.invoke(app, ["eval-samples", str(tmp_path / "empty.jsonl"), "--no-progress"])
    assert r.exit_code == 2 and "no samples" in r.stderr
    assert not list(tmp_path.glob("*_results.jsonl"))


def test_sandbox_options_and_params_file(app, tmp_path):
    from corecode.evaluation.cli import _sandbox_params

    params = tmp_path / "params.yaml"
    params.write_text("sandbox:\n  workers: 3\n  time_limit_s: 7\n")
    sp = _sandbox_params(params, None, None)
    assert (sp.workers, sp.time_limit_s) == (3, 7.0)
    sp = _sandbox_params(params, 1, 0.5)  # command-line flags win over the file
    assert (sp.workers, sp.time_limit_s) == (1, 0.5)

    samples = tmp_path / "s.jsonl"
    samples.write_text(GOOD + "\n")
    params.write_text("sandbox:\n  workers: many\n")
    r = CliRunner().invoke(app, ["eval-samples", str(samples), "--params", str(params), "--no-progress"])
    assert r.exit_code == 2 and str(params) in r.stderr and "sandbox.workers" in r.stderr


def test_gzipped_sample_file_reads_like_plain(tmp_path):
    import gzip

    from corecode.data.loaders.humaneval import load_humaneval
    from corecode.evaluation.eval_samples import read_samples

    problems = load_humaneval()
    text = GOOD + "\n\n" + json.dumps({"task_id": "HumanEval/2", "solution": "def truncate_number(x): return x % 1"})
    plain, gz = tmp_path / "s.jsonl", tmp_path / "s.jsonl.gz"
    plain.write_text(text)
    with gzip.open(gz, "wt") as f:
        f.write(text)
    a, b = read_samples(plain, problems), read_samples(gz, problems)
    assert [(s.lineno, s.task_id, s.program) for s in a] == [(s.lineno, s.task_id, s.program) for s in b]
    assert [s.lineno for s in a] == [1, 3]
    assert a[0].program == problems[0].prompt + "    return False\n"  # completion is appended to the prompt
    assert a[1].program.startswith("def truncate_number")  # a solution is the whole program
