"""The evaluate and metrics stages: a real tiny checkpoint, the real sandbox, real per-problem files."""

import json

import pytest

from corecode.config import load_params
from corecode.pipeline.evaluate import evaluate_method
from corecode.pipeline.metrics import collect_metrics, per_problem_scores


def _composite(**kw):
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split)."""
    from corecode.data.config import CompositeParams

    return CompositeParams(
        **{**dict(n_test=300, n_rl=0, test_longer_frac=0.5, test_unseen_chain_frac=0.0, phrasing_variety=3), **kw}
    )


def _write_eval(root, method, bench, passes):
    d = root / method
    d.mkdir(parents=True, exist_ok=True)
    rows = [{"task_id": f"t{i}", "n": 2, "c": c, "verdicts": []} for i, c in enumerate(passes)]
    (d / f"{bench}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = {"benchmarks": {bench: {"pass_at_1": sum(passes) / (2 * len(passes)), "pass_at_k": {}}}}
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "efficiency.json").write_text(json.dumps({bench: {"overall": {"median_wall_time_s": 0.01}}}))


def _params(tmp_path, benchmarks=("composite_test",), **report):
    p = tmp_path / "params.yaml"
    p.write_text(json.dumps({"evaluate": {"benchmarks": list(benchmarks)}, "report": report}))
    return load_params(p)


def test_metrics_compare_methods_with_a_paired_bootstrap_and_write_plot_tables(tmp_path):
    root, out = tmp_path / "eval", tmp_path / "reports" / "metrics.json"
    _write_eval(root, "good", "composite_test", [2] * 30 + [1] * 10)
    _write_eval(root, "bad", "composite_test", [0] * 30 + [1] * 10)
    _write_eval(root, "same", "composite_test", [0] * 30 + [1] * 10)
    params = _params(tmp_path, comparisons=[["good", "bad"], ["same", "bad"]], n_resamples=2000)
    m = collect_metrics(params, [root], out)
    written = json.loads(out.read_text())
    assert written == {k: v for k, v in m.items() if k != "efficiency"}  # timings stay out of metrics.json
    assert json.loads((out.parent / "efficiency.json").read_text()) == m["efficiency"]
    assert collect_metrics(params, [root], out) == m and json.loads(out.read_text()) == written  # reproducible
    assert set(m["methods"]) == {"good", "bad", "same"}  # every method evaluated under root
    better, tie = m["comparisons"]
    assert (better["a"], better["b"], better["benchmark"]) == ("good", "bad", "composite_test")
    assert better["delta"] == pytest.approx(0.75) and better["p_value"] < 0.01
    assert tie["delta"] == 0 and tie["p_value"] > 0.5
    table = json.loads((out.parent / "plots" / "pass_at_k_composite_test.json").read_text())
    assert [r["method"] for r in table] == ["bad", "good", "same"]
    assert m["efficiency"]["good"]["composite_test"]["overall"]["median_wall_time_s"] == 0.01


def test_bad_per_problem_row_names_file_and_line(tmp_path):
    _write_eval(tmp_path, "m", "humaneval", [1, 2])
    path = tmp_path / "m" / "humaneval.jsonl"
    path.write_text(path.read_text() + '{"task_id": "x"}\n')
    with pytest.raises(ValueError, match=r"humaneval\.jsonl:3"):
        per_problem_scores("m", "humaneval", tmp_path)
    with pytest.raises(FileNotFoundError, match="run the evaluate stage"):
        per_problem_scores("other", "humaneval", tmp_path)


def test_missing_evaluations_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no evaluated method"):
        collect_metrics(_params(tmp_path, comparisons=[]), [tmp_path / "eval"], tmp_path / "m.json")
    _write_eval(tmp_path / "eval", "good", "composite_test", [1, 2])
    with pytest.raises(FileNotFoundError, match="'nowhere'"):
        collect_metrics(_params(tmp_path, comparisons=[["good", "nowhere"]]), [tmp_path / "eval"], tmp_path / "m.json")


def test_metrics_join_evaluation_directories(tmp_path):
    """The optional baselines' evaluations live apart from the pipeline's; one report can compare across both."""
    _write_eval(tmp_path / "eval", "good", "composite_test", [2] * 10)
    _write_eval(tmp_path / "baselines", "pta", "composite_test", [0] * 10)
    m = collect_metrics(
        _params(tmp_path),
        [tmp_path / "eval", tmp_path / "baselines"],
        tmp_path / "m.json",
        comparisons=[("good", "pta")],
    )
    assert set(m["methods"]) == {"good", "pta"} and m["comparisons"][0]["delta"] == pytest.approx(1.0)


@pytest.mark.slow
def test_evaluate_method_scores_a_real_checkpoint_in_the_sandbox(tmp_path, monkeypatch):
    from corecode.data.composite import generate_composite
    from corecode.data.io import write_problems
    from corecode.models.testing import make_tiny_checkpoint

    probs = generate_composite(_composite(n_train=4, n_val=0, n_test=4), seed=0)["test"]
    bench = tmp_path / "bench.jsonl"
    write_problems(bench, probs)
    # A tiny model that has memorised the first problem's gold code behind the single-team prompt.
    from corecode.agents.prompts import coder_prompt, format_code

    ckpt = make_tiny_checkpoint(
        tmp_path / "coder", [coder_prompt(probs[0], None) + format_code(probs[0].reference_solution)], train_steps=150
    )
    params = load_params(
        _write_params(tmp_path, ckpt, bench),
    )
    monkeypatch.chdir(tmp_path)
    summary = evaluate_method("mini", params, out_root=tmp_path / "eval")
    s = summary["benchmarks"][str(bench)]
    assert s["n_problems"] == 4 and s["pass_at_1"] == pytest.approx(0.25)  # the memorised one passes, others fail
    rows = [json.loads(x) for x in (tmp_path / "eval" / "mini" / f"{bench}.jsonl").read_text().splitlines()]
    assert [r["c"] for r in rows] == [2, 0, 0, 0]
    # summary.json holds the deterministic generation cost; timings live in efficiency.json
    cost = s["efficiency"]
    assert cost["n_samples"] == 8 and cost["model_calls_per_sample"] == 1.0
    assert 0 < cost["tokens_per_sample"] <= 96 and set(cost["tokens_per_sample_by_role"]) == {"coder"}
    assert cost["tokens_per_solved_problem"] == pytest.approx(cost["tokens_per_sample"] / 0.25)
    assert "median_wall_time_s" not in json.dumps(s)
    timing = json.loads((tmp_path / "eval" / "mini" / "efficiency.json").read_text())
    assert "median_wall_time_s" in timing[str(bench)]["overall"]
    again = evaluate_method("mini", params, out_root=tmp_path / "eval2")
    assert again == summary  # same seed, same numbers, cost included


@pytest.mark.slow
def test_collaboration_gain_arm_takes_its_own_sample_count(tmp_path, monkeypatch):
    from corecode.data.composite import generate_composite
    from corecode.data.io import write_problems
    from corecode.models.testing import make_tiny_checkpoint

    probs = generate_composite(_composite(n_train=4, n_val=0, n_test=3), seed=0)["test"]
    bench = tmp_path / "bench.jsonl"
    write_problems(bench, probs)
    ckpt = make_tiny_checkpoint(tmp_path / "m", ["def solve(nums):\n    return nums\n"], train_steps=20)
    p = tmp_path / "params.yaml"
    p.write_text(
        json.dumps(
            {
                "agents": {
                    "default_team": "duo",
                    "teams": {"duo": {"type": "planner_coder", "roles": {"planner": str(ckpt), "coder": str(ckpt)}}},
                    "sampling": {"planner": {"max_new_tokens": 16}, "coder": {"max_new_tokens": 16}},
                },
                "evaluate": {
                    "benchmarks": [str(bench)],
                    "n_samples": 3,
                    "ks": [1, 3],
                    "collaboration_gain_benchmarks": [str(bench)],
                    "collaboration_gain_n_samples": 1,
                },
                "model": {"device": "cpu"},
                "sandbox": {"cache_dir": str(tmp_path / "cache")},
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    s = evaluate_method("duo", load_params(p), out_root=tmp_path / "eval")["benchmarks"][str(bench)]
    assert s["coder_alone_n_samples"] == 1 and s["efficiency"]["n_samples"] == 9
    assert s["collaboration_gain"] == pytest.approx(s["pass_at_1"] - s["coder_alone_pass_at_1"])


def _write_params(tmp_path, ckpt, bench):
    p = tmp_path / "params.yaml"
    p.write_text(
        json.dumps(
            {
                "agents": {
                    "default_team": "mini",
                    "teams": {"mini": {"type": "single", "roles": {"coder": str(ckpt)}}},
                    "sampling": {"coder": {"temperature": 0.0, "max_new_tokens": 96}},
                },
                "evaluate": {"benchmarks": [str(bench)], "n_samples": 2, "ks": [1, 2]},
                "report": {"comparisons": []},
                "model": {"device": "cpu"},
                "sandbox": {"cache_dir": str(tmp_path / "cache")},
            }
        )
    )
    return p


def test_evaluate_and_metrics_take_overrides_and_name_a_bad_key(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from corecode.cli import app

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("seed: 0\n")
    runner = CliRunner()
    for cmd in (["evaluate", "--method", "single_sft"], ["metrics"]):
        res = runner.invoke(app, [*cmd, "--set", "evaluate.no_such_key=1"])
        assert res.exit_code == 2 and "no_such_key" in res.output, res.output
    # a valid override reaches the stage: metrics then fails on the (named) missing evaluation, not on the params
    res = runner.invoke(app, ["metrics", "--set", "report.comparisons=[[only_this, that]]"])
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "no evaluated method" in res.stderr
