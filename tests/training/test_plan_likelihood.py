"""The Planner's ``coder_likelihood`` reward: the Coder's mean per-token log-probability of the reference program given
a plan, on tiny SFT'd role models with the real sandbox."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, build_team, one_step_params  # noqa: E402

from corecode.agents.prompts import coder_prompt, format_code  # noqa: E402
from corecode.generation.render import completion_end_id, prompt_ids, tokenize_rendered  # noqa: E402
from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.advantages import group_advantages  # noqa: E402
from corecode.training.rewards import planner_reward  # noqa: E402
from corecode.training.rewards_config import PlannerRewardWeights  # noqa: E402
from corecode.training.rollout import completion_logprob_means  # noqa: E402
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory, one_thread):
    return build_team(tmp_path_factory.mktemp("team"))


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sb:
        yield sb


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
