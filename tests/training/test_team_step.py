"""Team GRPO and MAGRPO steps on tiny SFT'd role models with the real sandbox."""

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, build_shared_base, build_team, magrpo_params, one_step_params, weights  # noqa: E402

from corecode.agents.prompts import coder_prompt, format_code  # noqa: E402
from corecode.generation.render import completion_end_id, prompt_ids, tokenize_rendered  # noqa: E402
from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.advantages import group_advantages  # noqa: E402
from corecode.training.grpo_config import TeamGRPOParams  # noqa: E402
from corecode.training.rewards import planner_reward  # noqa: E402
from corecode.training.rewards_config import PlannerRewardWeights  # noqa: E402
from corecode.training.rollout import completion_logprob_means  # noqa: E402
from corecode.training.team_grpo import MAGRPOTrainer, TeamGRPOTrainer, load_role_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def seeded():
    """Each test samples from the same RNG state whatever ran before it."""
    from transformers import set_seed

    set_seed(0)


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory, one_thread):
    return build_team(tmp_path_factory.mktemp("team"))


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sb:
        yield sb


def _changed(before, model):
    return any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_team_step_updates_both_roles_logs_and_measures_collaboration_gain(team_dir, sandbox, tmp_path):
    import mlflow

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    before = weights(planner[0]), weights(coder[0])
    p = one_step_params(tmp_path, beta=0.04)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0, val_problems=PROBLEMS)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        with mlflow.start_run() as run:
            final = trainer.train(progress=False)
    finally:
        trainer.close()
    assert _changed(before[0], planner[0]), "planner weights did not move"
    assert _changed(before[1], coder[0]), "coder weights did not move"

    log = json.loads(Path(p.log_path).read_text())
    step = log[0]
    for key in (
        "reward/planner",
        "reward/coder",
        "pass_rate/coder",
        "planner/adv_std",
        "coder/zero_std_frac",
        "planner/kl",
        "coder/entropy",
        "coder/completion_len_mean",
        "step_time_s",
        "tokens_per_s",
        "sandbox_time_share",
    ):
        assert key in step, key
    assert 0.0 <= step["sandbox_time_share"] <= 1.0
    assert step["planner/zero_std_frac"] < 1.0 or step["coder/zero_std_frac"] < 1.0
    # the Planner's view: plan accuracy is the mean over plans of their programs' pass share (equal groups: the
    # Coder's pass rate); plans with a pass and uniform plans are shares; sampled plans at temperature 1.2 have entropy
    assert step["planner/plan_accuracy"] == pytest.approx(step["pass_rate/coder"])
    assert step["planner/plan_accuracy"] <= step["planner/plan_any_pass"] <= 1.0
    assert 0.0 <= step["planner/uniform_plan_frac"] <= 1.0
    assert step["planner/sample_entropy"] > 0.0

    g = final["eval/collaboration_gain"]
    assert g == pytest.approx(final["eval/pass_rate_with_plan"] - final["eval/pass_rate_without_plan"])
    assert -1.0 <= g <= 1.0 and log[-1]["eval/collaboration_gain"] == g

    history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "reward_coder")
    assert [m.step for m in history] == [1] and history[0].value == pytest.approx(step["reward/coder"])


def test_alternate_schedule_freezes_the_other_role(team_dir, sandbox, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    before = weights(planner[0]), weights(coder[0])
    trainer = TeamGRPOTrainer(
        one_step_params(tmp_path, schedule="alternate", alternate_every=1, eval_problems=0),
        planner,
        coder,
        PROBLEMS,
        sandbox,
    )
    try:
        assert trainer.updating(0) == ["planner"] and trainer.updating(1) == ["coder"]
        metrics = trainer.train_step()
    finally:
        trainer.close()
    assert "planner/loss" in metrics and "coder/loss" not in metrics
    assert _changed(before[0], planner[0])
    assert not _changed(before[1], coder[0])


def test_frozen_role_is_sampled_but_never_updated(team_dir, sandbox, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    before = weights(planner[0]), weights(coder[0])
    trainer = TeamGRPOTrainer(
        one_step_params(tmp_path, frozen_roles=["planner"], eval_problems=0), planner, coder, PROBLEMS, sandbox
    )
    try:
        assert trainer.updating(0) == ["coder"] and trainer.updating(1) == ["coder"]
        metrics = trainer.train_step()
    finally:
        trainer.close()
    assert "coder/loss" in metrics and "planner/loss" not in metrics and "reward/planner" in metrics
    assert not _changed(before[0], planner[0])
    assert _changed(before[1], coder[0])
    with pytest.raises(ValueError, match="frozen_roles"):
        TeamGRPOParams(frozen_roles=["planer"])


def test_magrpo_step_updates_helper_and_main(sandbox, tmp_path):
    helper, main = (load_role_model(str(d)) for d in build_team(tmp_path / "sft", magrpo=True))
    before = weights(helper[0]), weights(main[0])
    p = magrpo_params(
        num_generations=4,
        max_helper_tokens=48,
        max_main_tokens=48,
        max_steps=1,
        eval_steps=0,
        eval_problems=4,
        learning_rate=1e-3,
        temperature=1.2,
        loss_type="dapo",
        checkpoint_dir=str(tmp_path / "ckpt"),
        log_path=str(tmp_path / "log.json"),
    )
    trainer = MAGRPOTrainer(p, helper, main, PROBLEMS, sandbox, val_problems=PROBLEMS[:2])
    try:
        final = trainer.train(progress=False)
    finally:
        trainer.close()
    log = json.loads(Path(p.log_path).read_text())
    assert {"reward/joint", "pass_rate/joint", "joint/zero_std_frac"} <= set(log[0])
    assert 0.0 <= final["eval/pass_rate_joint"] <= 1.0
    assert log[0]["joint/zero_std_frac"] < 1.0
    assert _changed(before[0], helper[0]) and _changed(before[1], main[0])


def test_data_order_is_a_function_of_the_step(team_dir, sandbox, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    trainer = TeamGRPOTrainer(one_step_params(tmp_path, eval_problems=0), planner, coder, PROBLEMS, sandbox, seed=3)
    try:
        seen = [x.task_id for s in range(2) for x in trainer.batch_problems(s)]
        assert sorted(seen) == sorted(p.task_id for p in PROBLEMS)  # one epoch = every problem once
        assert [x.task_id for x in trainer.batch_problems(1)] == seen[2:]
    finally:
        trainer.close()


def test_lora_roles_train_adapters_only_and_save_merged_models(team_dir, sandbox, tmp_path):
    from transformers import AutoModelForCausalLM

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    sft = weights(planner[0]), weights(coder[0])
    p = one_step_params(tmp_path, lora_r=4, beta=0.04, learning_rate=1e-2, eval_problems=0)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
    try:
        metrics = trainer.train_step()
        assert metrics["planner/kl"] >= 0.0
        for role in ("planner", "coder"):
            model = trainer.roles[role].model
            trainable = {n for n, q in model.named_parameters() if q.requires_grad}
            assert trainable and all("lora_" in n for n in trainable)
        trainer.save_models({"planner": str(tmp_path / "out_p"), "coder": str(tmp_path / "out_c")})
    finally:
        trainer.close()
    for out, before in ((tmp_path / "out_p", sft[0]), (tmp_path / "out_c", sft[1])):
        merged = AutoModelForCausalLM.from_pretrained(out)
        assert set(merged.state_dict()) == set(before)  # a plain checkpoint, adapters merged in
        assert _changed(before, merged)


def test_shared_base_with_one_adapter_per_role(sandbox, tmp_path):
    from transformers import AutoModelForCausalLM, set_seed

    base = load_role_model(str(build_shared_base(tmp_path / "sft")))  # one model SFT'd on both roles' rows
    sft = weights(base[0])
    set_seed(0)
    p = one_step_params(
        tmp_path,
        shared_base=True,
        lora_r=4,
        beta=0.04,
        learning_rate=1e-2,
        eval_problems=0,
        problems_per_step=4,
        num_programs=4,
    )
    trainer = TeamGRPOTrainer(p, base, base, PROBLEMS, sandbox)
    try:
        assert trainer.roles["planner"].model is trainer.roles["coder"].model
        lora = {n: q.detach().clone() for n, q in trainer.shared.named_parameters() if "lora_B" in n}
        trainer.train_step()
        moved = {n for n, q in trainer.shared.named_parameters() if n in lora and not torch.equal(lora[n], q)}
        assert any(".planner." in n for n in moved) and any(".coder." in n for n in moved)
        trainer.save_models({"planner": str(tmp_path / "p"), "coder": str(tmp_path / "c")})
    finally:
        trainer.close()
    merged = [AutoModelForCausalLM.from_pretrained(tmp_path / d).state_dict() for d in ("p", "c")]
    assert set(merged[0]) == set(sft)
    assert any(not torch.equal(merged[0][k], merged[1][k]) for k in sft)  # two different role policies
    assert all(_changed(sft, AutoModelForCausalLM.from_pretrained(tmp_path / d)) for d in ("p", "c"))


def test_shared_base_needs_lora(team_dir, sandbox, tmp_path):
    base = load_role_model(str(team_dir[1]))
    with pytest.raises(ValueError, match="lora.enabled"):
        TeamGRPOTrainer(
            one_step_params(tmp_path).model_copy(update={"shared_base": True}), base, base, PROBLEMS, sandbox
        )
    with pytest.raises(ValueError, match="lora.enabled"):
        one_step_params(tmp_path, shared_base=True)


def _with_modules_to_save(params: TeamGRPOParams, modules: list[str]) -> TeamGRPOParams:
    return params.model_copy(update={"lora": params.lora.model_copy(update={"modules_to_save": modules})})


def test_shared_base_saves_each_roles_own_modules_to_save(team_dir, sandbox, tmp_path):
    """A module trained in full beside each role's adapter (lora.modules_to_save) is saved with that role: peft unloads
    the active adapter's copy, so the trainer activates the role it saves."""
    from transformers import AutoModelForCausalLM

    model, tok = load_role_model(str(team_dir[1]))
    head = model.lm_head.weight.detach().clone()
    p = _with_modules_to_save(one_step_params(tmp_path, shared_base=True, lora_r=4, eval_problems=0), ["lm_head"])
    trainer = TeamGRPOTrainer(p, (model, tok), (model, tok), PROBLEMS, sandbox)
    try:
        with torch.no_grad():
            for shift, role in enumerate(("planner", "coder"), 1):
                trainer.shared.base_model.model.lm_head.modules_to_save[role].weight.add_(shift)
        trainer.save_models({"planner": str(tmp_path / "p"), "coder": str(tmp_path / "c")})
    finally:
        trainer.close()
    for shift, out in enumerate(("p", "c"), 1):
        assert torch.equal(AutoModelForCausalLM.from_pretrained(tmp_path / out).lm_head.weight, head + shift), out


def test_shared_base_refuses_modules_to_save_on_tied_embeddings(team_dir, sandbox, tmp_path):
    """peft ties only one adapter's embedding copy to a tied LM head: the trainer stops, naming the keys."""
    from transformers import AutoModelForCausalLM

    _, tok = load_role_model(str(team_dir[1]))
    model = AutoModelForCausalLM.from_pretrained(team_dir[1], tie_word_embeddings=True)
    p = _with_modules_to_save(one_step_params(tmp_path, shared_base=True, lora_r=4), ["embed_tokens"])
    with pytest.raises(ValueError, match="modules_to_save .* tied to its embedding.* shared_base: false"):
        TeamGRPOTrainer(p, (model, tok), (model, tok), PROBLEMS, sandbox)


def _write_sft_rows(path: Path, pairs) -> str:
    path.write_text("".join(json.dumps({"prompt": a, "completion": b}) + "\n" for a, b in pairs))
    return str(path)


def _nll(model, tokenizer, pairs) -> float:
    with torch.no_grad():
        return sum(
            float(model(**(enc := tokenizer(a + b, return_tensors="pt")), labels=enc["input_ids"]).loss)
            for a, b in pairs
        ) / len(pairs)


def test_ptx_term_trains_on_the_roles_sft_data(team_dir, sandbox, tmp_path):
    """One program per plan: every advantage is 0, so the GRPO loss has no gradient and whatever moves the Coder is
    the ptx term; it must lower the Coder's loss on its SFT rows. A frozen role gets no ptx term."""
    from test_team_fixtures import sft_texts

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    before = weights(planner[0]), weights(coder[0])
    _, coder_rows = sft_texts()
    data = {"coder": _write_sft_rows(tmp_path / "coder.jsonl", coder_rows)}
    nll_before = _nll(coder[0], coder[1], coder_rows)
    p = one_step_params(
        tmp_path,
        frozen_roles=["planner"],
        num_plans=1,
        num_programs=1,
        eval_problems=0,
        max_steps=3,
        ptx_coef=1.0,
        ptx_data=data,
        ptx_batch_size=4,
        learning_rate=3e-3,
    )
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
    try:
        metrics = [trainer.train_step() for _ in range(3)]
    finally:
        trainer.close()
    assert all(m["coder/adv_std"] == 0.0 for m in metrics)  # no policy-gradient signal at all
    assert all("coder/ptx_loss" in m and "planner/ptx_loss" not in m for m in metrics)
    assert not _changed(before[0], planner[0]) and _changed(before[1], coder[0])
    assert _nll(coder[0], coder[1], coder_rows) < nll_before


def test_ptx_data_errors_name_the_file_and_line(team_dir, sandbox, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    bad = tmp_path / "coder.jsonl"
    bad.write_text('{"prompt": "a", "completion": "b"}\n{"prompt": "a"}\n')
    p = one_step_params(tmp_path, frozen_roles=["planner"], ptx_coef=1.0, ptx_data={"coder": str(bad)})
    with pytest.raises(ValueError, match=r"coder\.jsonl:2: .*completion"):
        TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)
    p = one_step_params(
        tmp_path, frozen_roles=["planner"], ptx_coef=1.0, ptx_data={"coder": str(tmp_path / "missing.jsonl")}
    )
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox)


def test_per_role_settings_and_pooled_plan_credit(team_dir, sandbox, tmp_path):
    from corecode.training.grpo_config import RoleModelParams

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    roles = {"planner": RoleModelParams(learning_rate=1e-5, temperature=0.01, beta=0.05)}
    p = one_step_params(tmp_path, num_plans=3, pool_identical_plans=True, roles=roles)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
    try:
        assert trainer.roles["planner"].optimizer.param_groups[0]["lr"] == 1e-5
        assert trainer.roles["coder"].optimizer.param_groups[0]["lr"] == p.learning_rate
        assert trainer.roles["planner"].ref_model is not None and trainer.roles["coder"].ref_model is None
        per_role, metrics = trainer.rollout(trainer.batch_problems(0), {})
        plans, planner_adv = per_role["planner"]
        # the Planner samples at its own temperature (0.01: the same plan three times a problem), the Coder at the
        # section's 1.2; pooled, the copies of a plan share one reward, so the Planner gets no advantage from the
        # Coder's noise, while the Coder's groups still differ
        for start in range(0, len(plans), 3):
            assert len({s.completion.text for s in plans[start : start + 3]}) == 1
        assert planner_adv.abs().max() == 0.0 and metrics["planner/zero_std_frac"] == 1.0
        assert per_role["coder"][1].abs().max() > 0.0
        stats = trainer.update("planner", plans, torch.ones(len(plans)))
        assert stats["lr"] == 1e-5 and "kl" in stats
    finally:
        trainer.close()


def test_in_training_evaluation_reads_a_seeded_sample_of_the_split(team_dir, sandbox, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, eval_problems=2)
    picked = []
    for seed in (0, 0, 1):
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=seed, val_problems=PROBLEMS)
        trainer.close()
        picked.append([x.task_id for x in trainer.val_problems])
    # not the split's head (tiny/0, tiny/1): a split written in blocks would show one kind of problem only
    assert picked[0] == picked[1] == ["tiny/2", "tiny/1"] and picked[2] == ["tiny/1", "tiny/3"]


def test_a_planner_update_raises_the_plans_its_advantage_favours(team_dir, sandbox, tmp_path):
    """Credit reaches the plan it is for: one Planner update on the rollout's own plans, advantage +1 for the first
    plan of each problem and -1 for the second, raises the first plans' log-probability and lowers the second's."""
    from corecode.training.rollout import collate, per_token_logps

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, problems_per_step=4, ptx_coef=0.0)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
    try:
        plans = trainer.rollout(trainer.batch_problems(0), {})[0]["planner"][0]
        distinct = [k for k in range(0, len(plans), 2) if plans[k].completion.text != plans[k + 1].completion.text]
        assert len(distinct) >= 2, "the test needs problems whose two plans differ"
        model = trainer.acc.unwrap_model(trainer.roles["planner"].model)

        @torch.no_grad()
        def logps():  # each plan's log-probability under the Planner, at the temperature it was sampled and trained at
            batch = collate(plans, trainer.roles["planner"].tokenizer.pad_token_id, next(model.parameters()).device)
            return (per_token_logps(model, batch, p.temperature)[0] * batch["completion_mask"]).sum(-1)

        before = logps()
        trainer.update("planner", plans, torch.tensor([1.0, -1.0] * (len(plans) // 2)))
        change = logps() - before
        favoured, disfavoured = change[distinct], change[[k + 1 for k in distinct]]
        assert favoured.mean() > 0 > disfavoured.mean(), (favoured, disfavoured)
    finally:
        trainer.close()


def test_efficiency_term_shares_count_the_groups_a_term_changes(team_dir, sandbox, tmp_path):
    """coder/<term>_term_groups_frac: hand-made results, three groups of two programs: both pass, one twice the
    reference's CPU time (the time term turns a tie into a difference); both pass, one 20x the reference's memory (the
    memory term does); one passes (the tests already decide: a term only widens the difference). Then a rollout logs
    the shares only for the terms that are on."""
    from corecode.sandbox.types import SampleResult, Verdict
    from corecode.training.rewards import coder_reward
    from corecode.training.rewards_config import CoderRewardWeights

    weights_on = CoderRewardWeights(time=0.5, memory=0.5)
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, num_programs=2, coder_reward=weights_on)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
    try:
        prob = PROBLEMS[0]

        def run(passed: bool, cpu: float, mem: float) -> SampleResult:
            verdict = Verdict.passed if passed else Verdict.wrong_answer
            return SampleResult(
                task_id=prob.task_id,
                verdict=verdict,
                passed=passed,
                pass_fraction=float(passed),
                cpu_time_s=cpu,
                peak_memory_mb=mem,
            )

        refs = {prob.task_id: run(True, 1.0, 2.0)}
        results = [run(True, 1.0, 2.0), run(True, 2.0, 2.0)]  # time
        results += [run(True, 1.0, 2.0), run(True, 1.0, 40.0)]  # memory
        results += [run(True, 2.0, 40.0), run(False, 1.0, 2.0)]  # the tests
        rewards = torch.tensor([coder_reward(r, weights_on, refs[prob.task_id]) for r in results])
        shares = trainer.efficiency_term_shares([prob] * 6, results, refs, [0.0] * 6, rewards)
        assert shares == {
            "coder/time_term_groups_frac": pytest.approx(1 / 3),
            "coder/memory_term_groups_frac": pytest.approx(1 / 3),
        }
        _, metrics = trainer.rollout(trainer.batch_problems(0), {})
        assert 0.0 <= metrics["coder/time_term_groups_frac"] <= 1.0
        assert 0.0 <= metrics["coder/memory_term_groups_frac"] <= 1.0
        trainer.cfg.coder_reward = CoderRewardWeights(time=0.5)
        assert set(trainer.efficiency_term_shares([prob] * 6, results, refs, [0.0] * 6, rewards)) == {
            "coder/time_term_groups_frac"
        }
    finally:
        trainer.close()


@pytest.mark.slow
def test_compiled_training_forward_gives_the_eager_update(team_dir, sandbox, tmp_path):
    # compile_model: the loss's passes run each decoder layer through torch.compile (the rollouts' stay eager) and
    # gives the eager run's losses and gradient norms, up to the float rounding of fused kernels (the weights are not
    # compared: AdamW's first step turns any rounding of a near-zero gradient into a full step of either sign).
    from torch._dynamo.utils import counters
    from transformers import set_seed

    logs = []
    for compiled in (False, True):
        set_seed(0)
        torch._dynamo.reset()
        counters.clear()
        planner, coder = (load_role_model(str(d)) for d in team_dir)
        p = one_step_params(tmp_path / str(compiled), compile_model=compiled, skip_zero_advantage=False)
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
        try:
            trainer.train(progress=False)
        finally:
            trainer.close()
        assert bool(counters["stats"]["unique_graphs"]) == compiled
        logs.append(json.loads(Path(p.log_path).read_text())[0])
    eager, compiled = logs
    assert eager["reward/coder"] == compiled["reward/coder"]  # the same rollouts: generation is not compiled
    for key in ("planner/loss", "coder/loss", "planner/grad_norm", "coder/grad_norm"):
        assert compiled[key] == pytest.approx(eager[key], rel=1e-4, abs=1e-6), key
    assert eager["coder/grad_norm"] > 0 and eager["planner/grad_norm"] > 0


def _sample(text: str):
    from corecode.generation.base import Completion
    from corecode.training.rollout import Sample

    return Sample([1], Completion(text, 1, [1], "stop"))


def test_resample_duplicates_redraws_repeated_plans_until_distinct_or_out_of_tries():
    from corecode.training.team_grpo import duplicate_positions, resample_duplicates

    assert duplicate_positions(["a", "b", "a", "a", "b", "c"]) == [2, 3, 4]
    queue = iter(["x", "y", "b ", "z", "w"])  # "b " repeats "b" once stripped: redrawn again in round 2
    asked = []

    def resample(idx):
        asked.append(list(idx))
        return [_sample(next(queue)) for _ in idx]

    groups = [[_sample(t) for t in g] for g in (["a", "a", "a"], ["b", "c", "b"], ["d", "e", "f"])]
    assert resample_duplicates(groups, resample, tries=4) == 4
    assert asked == [[0, 0, 1], [1]]  # one sample per duplicate, by group; round 2 only the one still repeated
    assert [[s.completion.text for s in g] for g in groups] == [["a", "x", "y"], ["b", "c", "z"], ["d", "e", "f"]]
    # out of tries: what is left is kept; 0 tries: nothing drawn
    stuck = [[_sample("p"), _sample("p"), _sample("p")]]
    assert resample_duplicates(stuck, lambda idx: [_sample("p") for _ in idx], tries=2) == 4
    assert [s.completion.text for s in stuck[0]] == ["p", "p", "p"]
    assert resample_duplicates(stuck, lambda idx: 1 / 0, tries=0) == 0


@pytest.mark.parametrize("tries", [0, 3])
def test_distinct_plan_tries_gives_each_problem_distinct_plans(team_dir, sandbox, tmp_path, tries):
    """The Planner's first draw is forced to repeat (each problem's plans are copies of its first one); with
    ``distinct_plan_tries`` the copies are sampled again (one plan each, at the Planner's temperature) and every
    problem ends with distinct plans; off, the rollout keeps the copies and draws nothing more."""
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, num_plans=3, problems_per_step=4, distinct_plan_tries=tries)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
    real, calls = trainer.sample, []

    def sample(role, prompts, n, greedy=False):
        if role != "planner":
            return real(role, prompts, n, greedy)
        calls.append((len(prompts), n))
        chunks = list(real(role, prompts, n, greedy))
        if len(calls) == 1:  # the first draw: every plan of a problem is the same text
            chunks = [[[g[0]] * n for g in chunk] for chunk in chunks]
        return iter(chunks)

    trainer.sample = sample
    try:
        per_role, metrics = trainer.rollout(trainer.batch_problems(0), {})
    finally:
        trainer.close()
    plans = [s.completion.text.strip() for s in per_role["planner"][0]]
    groups = [plans[k : k + 3] for k in range(0, len(plans), 3)]
    assert len(groups) == 4 and len(per_role["coder"][0]) == 4 * 3 * 3
    if tries:
        assert calls[0] == (4, 3) and calls[1] == (8, 1)  # 2 copies a problem redrawn in round 1
        assert all(len(set(g)) == 3 for g in groups), groups
        assert metrics["planner/distinct_plan_frac"] == 1.0 and metrics["planner/redrawn_plans"] >= 2.0
    else:
        assert calls == [(4, 3)]
        assert all(len(set(g)) == 1 for g in groups)
        assert metrics["planner/distinct_plan_frac"] == 0.0 and metrics["planner/redrawn_plans"] == 0.0


def test_gold_plans_take_the_last_places_of_each_group_and_train_the_planner(team_dir, sandbox, tmp_path):
    """``gold_plans: 1`` of 3: where a problem has a gold plan that fits max_plan_tokens, the last plan of its group
    is that plan, tokenized as its SFT row (prompt ids as sampled, then the plan and the end token); the Coder writes
    its programs from it; a problem without one, or with one too long, keeps three sampled plans. The step updates
    the Planner, and the Planner's sampling metrics leave the gold plans out."""
    from corecode.agents.prompts import format_plan, planner_prompt
    from corecode.generation.render import sft_example

    problems = [
        PROBLEMS[0],
        PROBLEMS[1].model_copy(update={"plan": None}),
        PROBLEMS[2].model_copy(update={"plan": "\n".join(f"{k}. Keep going once more." for k in range(1, 30))}),
        PROBLEMS[3],
    ]
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    before = weights(planner[0])
    p = one_step_params(tmp_path, num_plans=3, problems_per_step=4, gold_plans=1, ptx_coef=0.0, eval_problems=0)
    trainer = TeamGRPOTrainer(p, planner, coder, problems, sandbox, seed=0)
    tok = trainer.roles["planner"].tokenizer
    try:
        batch = trainer.batch_problems(0)
        per_role, metrics = trainer.rollout(batch, {})
        trainer.update("planner", *per_role["planner"])
    finally:
        trainer.close()
    plans, programs = per_role["planner"][0], per_role["coder"][0]
    assert len(plans) == 12 and len(programs) == 12 * 3
    for k, problem in enumerate(batch):
        last = plans[3 * k + 2]
        if problem.task_id in ("tiny/0", "tiny/3"):
            row = sft_example(tok, planner_prompt(problem), format_plan(problem.plan), trainer.chat["planner"])
            assert last.prompt_ids + last.completion.token_ids == row["input_ids"]
            assert last.completion.text.strip() == format_plan(problem.plan)
            coder_prompts = {tok.decode(s.prompt_ids) for s in programs[3 * (3 * k + 2) : 3 * (3 * k + 3)]}
            assert len(coder_prompts) == 1 and format_plan(problem.plan) in coder_prompts.pop()
        else:
            assert last.completion.text.strip() != format_plan(problem.plan or "")
    assert metrics["planner/gold_guided_frac"] == 0.5
    assert _changed(before, planner[0])


def test_gold_plans_must_leave_a_sampled_plan_in_each_group(tmp_path):
    with pytest.raises(ValueError, match=r"gold_plans \(2\) must be less than num_plans \(2\)"):
        one_step_params(tmp_path, num_plans=2, gold_plans=2)


# -- the Planner's coder_likelihood reward: the Coder's mean per-token log-probability of the reference given a plan


@torch.no_grad()
def one_row_mean_logprob(model, tokenizer, prompt: str, completion: str) -> float:
    """The same quantity for one row, unpadded, from the model's log-softmax: the reference the batched one must
    equal (left-padded prompts, right-padded completions, rows of different lengths in one micro-batch)."""
    head = prompt_ids(tokenizer, prompt, False)
    tail = tokenize_rendered(tokenizer, [completion])[0] + [completion_end_id(tokenizer, False)]
    logits = model(input_ids=torch.tensor([head + tail])).logits[0]
    logps = torch.log_softmax(logits[len(head) - 1 : -1].float(), -1)
    return float(logps.gather(1, torch.tensor(tail)[:, None]).mean())


def test_batched_mean_logprob_equals_each_row_alone(team_dir):
    coder, tokenizer = load_role_model(str(team_dir[1]))
    rows = [(coder_prompt(p, plan), format_code(p.reference_solution)) for p in PROBLEMS for plan in (p.plan, None)]
    assert len({len(prompt) for prompt, _ in rows}) > 1
    coder.train()  # a trainer's model: scored in eval mode (no dropout), then handed back in training mode
    batched = completion_logprob_means(coder, tokenizer, rows, False, micro_batch_size=3)
    assert coder.training, "the model's mode is restored"
    alone = [one_row_mean_logprob(coder.eval(), tokenizer, *row) for row in rows]
    assert batched.tolist() == pytest.approx(alone, abs=1e-4)


def test_a_plan_reward_adds_the_weighted_log_probability():
    weights = PlannerRewardWeights(coder=0.0, plan_format=0.0, coder_likelihood=2.0)
    assert planner_reward("<plan>1. x</plan>", [1.0], [None], weights, None, -0.25) == pytest.approx(-0.5)
    assert planner_reward("<plan>1. x</plan>", [1.0], [None], weights, None, None) == 0.0


def test_rollout_rewards_each_plan_by_the_coders_log_probability_of_the_reference(team_dir, sandbox, tmp_path):
    """With only the likelihood term on, the Planner's advantages are the group-normalised log-probabilities of each
    problem's reference program under the Coder, given each sampled plan as the Coder is handed it; logged as
    ``planner/reference_logprob``. The SFT'd Coder finds the reference likelier with the gold plan than with none."""
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    weights = PlannerRewardWeights(coder=0.0, plan_format=0.0, coder_likelihood=1.0)
    p = one_step_params(tmp_path, num_plans=3, planner_reward=weights)
    trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
    try:
        problems = trainer.batch_problems(0)
        per_role, metrics = trainer.rollout(problems, {})
        plans, advantages = per_role["planner"]
        expected = torch.tensor(
            [
                one_row_mean_logprob(
                    coder[0],
                    coder[1],
                    coder_prompt(prob, trainer.plan_for_coder(s.completion.text)),
                    format_code(prob.reference_solution),
                )
                for prob, s in zip([x for x in problems for _ in range(3)], plans, strict=True)
            ]
        )
        assert len(set(expected.tolist())) > 1, "the test needs plans the Coder scores differently"
        assert metrics["planner/reference_logprob"] == pytest.approx(float(expected.mean()), abs=1e-4)
        assert advantages == pytest.approx(group_advantages(expected, 3, p.scale_rewards)[0], abs=1e-3)
        gold, none = (
            completion_logprob_means(
                coder[0],
                coder[1],
                [(coder_prompt(x, plan(x)), format_code(x.reference_solution)) for x in PROBLEMS],
                False,
                8,
            )
            for plan in (lambda x: x.plan, lambda x: None)
        )
        assert float(gold.mean()) > float(none.mean())
    finally:
        trainer.close()
