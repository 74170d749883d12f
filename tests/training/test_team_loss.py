"""The GRPO loss variants (grpo / dapo / dr_grpo) as TRL aggregates them, and micro-batching that does not change
the gradient."""

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from corecode.generation.base import Completion
from corecode.training.rollout import LossConfig, Sample, policy_loss_backward


def _model():
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        pad_token_id=0,
        eos_token_id=1,
    )
    return Qwen2ForCausalLM(cfg)


# completions of 3 and 1 tokens (different lengths so the variants differ)
SAMPLES = [Sample([5, 6, 7], Completion("", 3, [8, 9, 1])), Sample([5, 6], Completion("", 1, [1]))]
ADV = torch.tensor([1.0, -3.0])


@pytest.mark.parametrize(
    "loss_type,expected",
    [("grpo", -(1 - 3) / 2), ("dapo", -(1 * 3 - 3 * 1) / 4), ("dr_grpo", -(1 * 3 - 3 * 1) / (2 * 10))],
)
def test_loss_value_per_variant(loss_type, expected):
    # One gradient step per rollout: importance ratio is exactly 1, so per-token loss = -advantage.
    stats = policy_loss_backward(_model(), SAMPLES, ADV, LossConfig(loss_type, max_completion_length=10), 0, 8)
    assert stats["loss"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo"])
def test_micro_batches_accumulate_to_the_full_batch_gradient(loss_type):
    grads = []
    for mb in (2, 1):
        m = _model()
        policy_loss_backward(m, SAMPLES, ADV, LossConfig(loss_type, max_completion_length=10), 0, mb)
        grads.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_kl_term_is_zero_against_itself_and_positive_after_a_change():
    m, ref = _model(), _model()
    s = policy_loss_backward(m, SAMPLES, ADV, LossConfig("grpo", beta=0.1, max_completion_length=10), 0, 8, ref)
    assert s["kl"] == pytest.approx(0.0, abs=1e-7)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.05 * torch.randn_like(p))
    s = policy_loss_backward(m, SAMPLES, ADV, LossConfig("grpo", beta=0.1, max_completion_length=10), 0, 8, ref)
    assert s["kl"] > 1e-4


def test_unknown_loss_type():
    with pytest.raises(ValueError, match="loss_type"):
        policy_loss_backward(_model(), SAMPLES, ADV, LossConfig("ppo"), 0, 8)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "dr_grpo"])
def test_skipping_zero_advantage_sequences_keeps_the_gradient(loss_type):
    samples = SAMPLES + [Sample([5, 7], Completion("", 2, [9, 1])), Sample([6], Completion("", 3, [7, 8, 1]))]
    adv = torch.tensor([1.0, 0.0, -2.0, 0.0])
    grads, stats = [], []
    for skip in (False, True):
        m = _model()
        stats.append(
            policy_loss_backward(
                m, samples, adv, LossConfig(loss_type, max_completion_length=10), 0, 1, skip_zero_advantage=skip
            )
        )
        grads.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6)
    assert stats[0]["loss"] == pytest.approx(stats[1]["loss"], abs=1e-6)


def test_all_zero_advantages_skip_every_pass_and_leave_zero_gradients():
    calls = []
    m = _model()
    policy_loss_backward(
        m, SAMPLES, torch.zeros(2), LossConfig("grpo"), 0, 8, backward=calls.append, skip_zero_advantage=True
    )
    assert calls == []  # no forward/backward ran
    assert all(p.grad is not None and not p.grad.any() for p in m.parameters())


def test_later_iterations_clip_against_the_sampling_policy():
    # num_iterations > 1: the first pass keeps each sample's log-probs (the sampling policy); after the policy moved,
    # the ratio is taken against them, so a sample pushed far past 1 + epsilon in its advantage's direction is
    # clipped (no gradient), where a fresh ratio of 1 would still pull on it.
    import copy

    from corecode.training.rollout import collate, per_token_logps

    m = _model()
    samples = copy.deepcopy(SAMPLES)
    cfg = LossConfig("grpo", max_completion_length=10)
    first = policy_loss_backward(m, samples, ADV, cfg, 0, 8, record_old=True)
    with torch.no_grad():
        ref, _ = per_token_logps(m, collate(samples, 0, "cpu"))
    assert [len(s.old_logps) for s in samples] == [3, 1]
    torch.testing.assert_close(samples[0].old_logps, ref[0, :3])
    torch.testing.assert_close(samples[1].old_logps, ref[1, :1])
    # move the policy: plain gradient ascent on the advantage-weighted objective until the ratios leave [0.8, 1.2]
    opt = torch.optim.SGD(m.parameters(), lr=0.2)
    for _ in range(200):
        opt.step()
        opt.zero_grad()
        policy_loss_backward(m, copy.deepcopy(SAMPLES), ADV, cfg, 0, 8)
        with torch.no_grad():
            now, _ = per_token_logps(m, collate(samples, 0, "cpu"))
        if (now - ref)[0, :3].min() > 0.3 and (now - ref)[1, 0] < -0.3:
            break
    ratio = (now - ref).exp()
    assert ratio[0, :3].min() > 1.2 and ratio[1, 0] < 0.8  # both samples moved past the clip range their way
    m.zero_grad()
    later = policy_loss_backward(m, samples, ADV, cfg, 0, 8)
    assert all(p.grad is None or not p.grad.any() for p in m.parameters())  # everything clipped
    assert later["loss"] != pytest.approx(first["loss"])
    m.zero_grad()
    policy_loss_backward(m, copy.deepcopy(SAMPLES), ADV, cfg, 0, 8)  # without old log-probs: ratio 1, full gradient
    assert any(p.grad is not None and p.grad.any() for p in m.parameters())


def test_mean_token_entropy_is_the_token_mean_of_the_full_softmax_entropy():
    from corecode.training.rollout import mean_token_entropy

    m = _model()
    got = mean_token_entropy(m, SAMPLES, 0, micro_batch_size=1, temperature=0.7)
    # by hand: the next-token distributions that predicted [8, 9, 1] after [5, 6, 7] and [1] after [5, 6]
    with torch.no_grad():
        a = torch.log_softmax(m(torch.tensor([[5, 6, 7, 8, 9]])).logits[0, 2:5] / 0.7, -1)
        b = torch.log_softmax(m(torch.tensor([[5, 6]])).logits[0, 1:2] / 0.7, -1)
    by_hand = float(-(torch.cat([a, b]).exp() * torch.cat([a, b])).sum(-1).mean())
    assert got == pytest.approx(by_hand, rel=1e-5)
    # a hotter distribution has more entropy; an empty completion counts no token
    assert mean_token_entropy(m, SAMPLES, 0, 8, temperature=2.0) > got
    assert mean_token_entropy(m, [Sample([5], Completion("", 0, []))], 0, 8) == 0.0
    assert m.training  # left as it was found
