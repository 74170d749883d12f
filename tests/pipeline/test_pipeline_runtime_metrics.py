"""metrics.json beside pass@1: each method's relative runtime and memory (runtime.json of its evaluate stage) and
their paired comparisons; a method scored on fewer problems and benchmarks (the agents) is compared on what both
scored."""

import json

import pytest

from corecode.config import load_params
from corecode.pipeline.metrics import collect_metrics


def _write_eval(root, method, passes: dict[str, list[int]], runtime: dict[str, float] | None = None):
    d = root / method
    d.mkdir(parents=True, exist_ok=True)
    benchmarks = {}
    for bench, cs in passes.items():
        rows = [{"task_id": f"t{i}", "n": 1, "c": c, "verdicts": []} for i, c in enumerate(cs)]
        (d / f"{bench}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        benchmarks[bench] = {"pass_at_1": sum(cs) / len(cs), "pass_at_k": {}}
    (d / "summary.json").write_text(json.dumps({"benchmarks": benchmarks}))
    if runtime is not None:
        rows = {
            t: {"family": True, "n_passed": 1, "runtime_ratio": r, "memory_ratio": r / 2} for t, r in runtime.items()
        }
        (d / "runtime.json").write_text(json.dumps({"composite_test": rows}))


def test_runtime_beside_pass_at_1_and_comparisons_on_shared_problems(tmp_path):
    root, out = tmp_path / "eval", tmp_path / "reports" / "metrics.json"
    _write_eval(
        root,
        "team",
        {"composite_test": [1] * 20 + [0] * 20, "humaneval": [0] * 5},
        {f"t{i}": 8.0 for i in range(20)},
    )
    # the agent: the first 30 problems only, no humaneval, faster on the problems both pass
    _write_eval(root, "agent", {"composite_test": [1] * 25 + [0] * 5}, {f"t{i}": 1.5 for i in range(25)})
    p = tmp_path / "params.yaml"
    p.write_text(json.dumps({"evaluate": {"benchmarks": ["composite_test", "humaneval"]}}))
    m = collect_metrics(load_params(p), [root], out, comparisons=[("agent", "team")])
    (row,) = m["comparisons"]  # no humaneval row: the agent has none
    assert row["benchmark"] == "composite_test" and row["n_problems"] == 30
    assert row["delta"] == pytest.approx(25 / 30 - 20 / 30)
    team = m["methods"]["team"]["composite_test"]["runtime"]
    assert team["efficiency"]["median_runtime_ratio"] == 8.0 and team["all"]["n_problems"] == 20
    assert "runtime" not in m["methods"]["team"]["humaneval"]
    (rt,) = m["runtime_comparisons"]
    speed = rt["runtime_ratio"]["efficiency"]
    assert (
        speed["n_problems"] == 20 and speed["delta_log2"] == pytest.approx(2.415, abs=1e-3) and speed["p_value"] < 0.05
    )
    assert speed["median_a"] == 1.5 and speed["median_b"] == 8.0
    assert rt["memory_ratio"]["all"]["median_b"] == 4.0
    assert json.loads(out.read_text())["runtime_comparisons"] == m["runtime_comparisons"]


@pytest.mark.slow
def test_agent_methods_evaluate_with_their_own_problems_and_collaboration_gain(tmp_path, monkeypatch):
    """The Retrieval and Debugging agents as pipeline methods: a real tiny checkpoint, the real sandbox; each scores
    the first problems of its benchmarks only (evaluate.per_method), with the Coder-alone arm of Collaboration Gain;
    runtime.json holds the passing programs' timings relative to the reference."""
    from corecode.agents.prompts import coder_prompt, format_code
    from corecode.data.composite import generate_composite
    from corecode.data.config import CompositeParams
    from corecode.data.io import write_problems
    from corecode.models.testing import make_tiny_checkpoint
    from corecode.pipeline.evaluate import evaluate_method

    suite = generate_composite(CompositeParams(n_train=30, n_val=0, n_test=6, n_dev=0, n_rl=0, efficiency_frac=0.5))
    bench, corpus = tmp_path / "bench.jsonl", tmp_path / "train.jsonl"
    write_problems(bench, suite["test"])
    write_problems(corpus, suite["train"])
    fam = suite["test"][3]  # an efficiency problem, memorised behind the plan-less prompt (the Coder-alone arm)
    ckpt = make_tiny_checkpoint(
        tmp_path / "m", [coder_prompt(fam, None) + format_code(fam.reference_solution)], train_steps=150
    )
    roles = {"planner": str(ckpt), "coder": str(ckpt)}
    p = tmp_path / "params.yaml"
    p.write_text(
        json.dumps(
            {
                "agents": {
                    "default_team": "team",
                    "teams": {
                        "team": {"type": "planner_coder", "roles": roles},
                        "team_retrieval": {"type": "retrieval", "roles": roles, "options": {"corpus": str(corpus)}},
                        "team_debug": {"type": "debugging", "options": {"inner": "team", "max_rounds": 1}},
                    },
                    "sampling": {r: {"max_new_tokens": 24} for r in ("planner", "coder", "repair")},
                },
                "evaluate": {
                    "benchmarks": [str(bench), "humaneval"],
                    "collaboration_gain_benchmarks": [str(bench)],
                    "per_method": {
                        "team_retrieval": {"benchmarks": [str(bench)], "max_problems": 4},
                        "team_debug": {"benchmarks": [str(bench)], "max_problems": 4},
                    },
                },
                "model": {"device": "cpu"},
                "sandbox": {"cache_dir": str(tmp_path / "cache")},
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    params = load_params(p)
    for method in ("team_retrieval", "team_debug"):
        s = evaluate_method(method, params, out_root=tmp_path / "eval")["benchmarks"]
        assert list(s) == [str(bench)]  # no humaneval for the agents
        assert s[str(bench)]["n_problems"] == 4
        assert s[str(bench)]["collaboration_gain"] == pytest.approx(
            s[str(bench)]["pass_at_1"] - s[str(bench)]["coder_alone_pass_at_1"]
        )
        runtime = json.loads((tmp_path / "eval" / method / "runtime.json").read_text())[str(bench)]
        assert all(r["runtime_ratio"] > 0 for r in runtime.values())
    rows = [json.loads(x) for x in (tmp_path / "eval" / "team_debug" / f"{bench}.jsonl").read_text().splitlines()]
    assert len(rows) == 4
