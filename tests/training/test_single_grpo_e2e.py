"""Single-agent GRPO baselines end to end: TRL's GRPOTrainer, a tiny SFT'd Qwen2, composite-like problems, the real
sandbox. The model is first SFT'd a little so its samples are a mix of right and wrong programs (a non-trivial
reward, hence a non-zero advantage and a real update)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_sft_fixtures import make_tiny_checkpoint, tiny_problems, write_problems, write_role_dataset

from corecode.config import Params
from corecode.data.io import read_problems
from corecode.sandbox import Sandbox, SandboxParams
from corecode.training.sft import train_sft
from corecode.training.sft_config import SFTParams
from corecode.training.single_grpo import build_dataset, pta_prompt

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny models on a CPU shared with other jobs: one thread measured ~4x faster than two spin-waiting ones."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Base -> SFT (single and pta roles) on the six problems; the problems as a Problem JSONL."""
    d = tmp_path_factory.mktemp("grpo")
    problems = tiny_problems()
    base = make_tiny_checkpoint(d / "base", problems, hidden=48)
    for role in ("planner", "coder", "single"):
        write_role_dataset(d / "processed" / f"{role}.jsonl", role, problems)
    # Short enough that sampling at temperature 1.2 still yields some broken programs, long enough for correct ones.
    sft = SFTParams(
        max_steps=160,
        batch_size=6,
        learning_rate=1e-2,
        logging_steps=20,
        eval_steps=160,
        completion_only_loss=True,
        max_eval_rows=256,
        work_dir=str(d / "work"),
    )
    for role, data in (("single", "single.jsonl"), ("pta", "planner.jsonl")):
        train_sft(
            role,
            sft,
            data_path=d / "processed" / data,
            base_checkpoint=base,
            output_dir=d / f"sft_{role}",
            log_path=d / f"sft_{role}.json",
        )
    return d, write_problems(d / "problems.jsonl", problems)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxParams(workers=2)) as sb:
        yield sb


def _params(d: Path, problems: Path, **single) -> Params:
    cfg = dict(
        model=str(d / "sft_single"),
        pta_model=str(d / "sft_pta"),
        train_problems=str(problems),
        work_dir=str(d / "work"),
        log_dir=str(d / "reports"),
        max_steps=2,
        num_generations=4,
        batch_size=8,
        max_completion_length=64,
        pta_max_completion_length=128,
        learning_rate=5e-3,
        temperature=1.2,
        loss_type="dapo",
        ptx_data=str(d / "processed" / "single.jsonl"),
    )
    return Params.model_validate({"seed": 0, "grpo": {"single": cfg | single}})


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def test_dataset_prompts_and_task_ids(tmp_path):
    problems = read_problems(write_problems(tmp_path / "p.jsonl", tiny_problems()))
    ds = build_dataset(problems, plan_then_code=False)
    assert ds.column_names == ["prompt", "task_id"] and ds[0]["task_id"] == "composite/0"
    assert ds[0]["prompt"].endswith("### Code\n") and "### Plan" not in ds[0]["prompt"]
    pta = build_dataset(problems, plan_then_code=True)
    assert pta[0]["prompt"] == pta_prompt(problems[0]) and pta[0]["prompt"].endswith("### Plan\n")


def test_bad_problem_file_names_the_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text(tiny_problems()[0].model_dump_json() + "\n" + json.dumps({"task_id": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"p.jsonl:2: invalid problem: source"):
        read_problems(f)


def test_batch_must_hold_whole_groups(tmp_path):
    from corecode.training.single_grpo import build_grpo_config

    cfg = _params(tmp_path, tmp_path / "p.jsonl", batch_size=6).grpo.single
    with pytest.raises(ValueError, match=r"batch_size \(6\) must be a multiple of grpo.single.num_generations \(4\)"):
        build_grpo_config(cfg, 0, tmp_path / "w", plan_then_code=False, report_to=[])
    args = build_grpo_config(
        _params(tmp_path, tmp_path / "p.jsonl", loss_type="dr_grpo", beta=0.04).grpo.single,
        3,
        tmp_path / "w",
        plan_then_code=True,
        report_to=[],
    )
    assert (args.loss_type, args.beta, args.num_generations, args.seed) == ("dr_grpo", 0.04, 4, 3)
    assert args.max_completion_length == 128  # the plan-then-code budget


@pytest.mark.slow
def test_grpo_single_updates_the_model_with_sandbox_rewards(setup, sandbox):
    from corecode.training.single_grpo import train_grpo_single

    d, problems = setup
    out = d / "grpo_single"
    res = train_grpo_single(_params(d, problems, output=str(out)), sandbox=sandbox)
    assert res.global_step == 2 and res.output_dir == out and res.log_path == d / "reports" / "grpo_single.json"
    hist = json.loads(res.log_path.read_text())
    rewards = [h["reward"] for h in hist if "reward" in h]
    stds = [h["reward_std"] for h in hist if "reward_std" in h]
    assert len(rewards) == 2 and all(0.0 <= r <= 1.0 for r in rewards)
    assert max(stds) > 0.0, hist  # completions got different rewards: a real learning signal
    assert max(rewards) > 0.1  # some sampled programs parse/run/pass in the sandbox
    ptx = [h["ptx_loss"] for h in hist if "ptx_loss" in h]  # the PPO-ptx term, the team Coder's, in every update
    assert len(ptx) == 2 and all(x > 0 for x in ptx), hist
    before, after = _weights(d / "sft_single"), _weights(out)
    assert any(not torch.equal(before[k], after[k]) for k in before)


@pytest.mark.slow
def test_rollouts_go_through_the_lean_decoder_on_cpu_and_trl_s_generate_when_off(setup, sandbox):
    """TRL warns when a rollout_func replaces its generation: on CPU by default, never with lean_decode false; both
    paths train."""
    import warnings

    from corecode.training.single_grpo import train_grpo_single

    d, problems = setup
    for lean in (None, False):
        out = d / f"grpo_single_lean_{lean}"
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            res = train_grpo_single(
                _params(d, problems, output=str(out), max_steps=1, lean_decode=lean, log_dir=str(out)), sandbox=sandbox
            )
        assert any("rollout_func" in str(w.message) for w in seen) == (lean is None)
        hist = json.loads(res.log_path.read_text())
        lengths = [h["completions/mean_length"] for h in hist if "completions/mean_length" in h]
        assert res.global_step == 1 and lengths and 0 < lengths[0] <= 64, hist


@pytest.mark.slow
def test_plan_then_code_adds_the_plan_format_term(setup, sandbox):
    from corecode.training.single_grpo import train_grpo_single

    d, problems = setup
    out = d / "pta"
    seen: list[float] = []

    def plan_probe(prompts, completions, **kw):  # records what the model wrote: plans first, then code
        seen.extend(float(c.lstrip().startswith("<plan>")) for c in completions)
        return [0.0] * len(completions)

    res = train_grpo_single(
        _params(d, problems, pta_output=str(out), max_steps=1),
        plan_then_code=True,
        sandbox=sandbox,
        extra_reward_funcs=[plan_probe],
    )
    assert res.log_path.name == "pta_grpo.json" and (out / "model.safetensors").exists()
    assert sum(seen) > 0  # the PTA-SFT'd model opens with a plan
    hist = json.loads(res.log_path.read_text())
    assert any(h.get("rewards/sandbox_code_reward/mean", 0) > 0 for h in hist), hist


@pytest.mark.slow
def test_cli_grpo_single(setup, tmp_path, monkeypatch):
    import typer
    import yaml
    from typer.testing import CliRunner

    from corecode.training.cli import register

    d, problems = setup
    app = typer.Typer()
    register(app)
    monkeypatch.chdir(tmp_path)
    single = _params(d, problems, output=str(tmp_path / "out"), max_steps=1, log_dir=str(tmp_path / "rep")).grpo.single
    (tmp_path / "params.yaml").write_text(
        yaml.safe_dump(
            {"tracking": {"enabled": False}, "sandbox": {"workers": 2}, "grpo": {"single": single.model_dump()}}
        )
    )
    r = CliRunner().invoke(app, ["grpo-single", "--set", "grpo.single.num_generations=2"])
    assert r.exit_code == 0, r.output
    assert "grpo_single: 1 steps" in r.output
    assert (tmp_path / "out" / "model.safetensors").exists() and (tmp_path / "rep" / "grpo_single.json").exists()


@pytest.mark.slow
def test_sample_check_scores_greedy_samples_in_the_sandbox(setup, sandbox):
    """The post-SFT check on the memorised training problems: most greedy programs parse and pass."""
    from corecode.training.sft import sample_check

    d, problems_path = setup
    problems = read_problems(problems_path)
    single = sample_check("single", d / "sft_single", problems, sandbox=sandbox, max_new_tokens=64)
    assert single["check_n"] == 6 and single["check_parses"] >= 0.5 and single["check_pass_rate"] >= 0.5, single
    assert single["check_pass_fraction"] >= single["check_pass_rate"]
    pta = sample_check("pta", d / "sft_pta", problems, sandbox=sandbox, max_new_tokens=128)
    assert pta["check_pass_rate"] >= 0.5, pta
    base = sample_check("single", d / "base", problems, sandbox=sandbox, max_new_tokens=32)
    assert base["check_pass_rate"] == 0.0  # an untrained model passes nothing: the check can fail
