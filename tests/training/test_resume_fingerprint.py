"""A restarted GRPO run resumes only its own checkpoints: changed params, seed or start models start fresh."""

from corecode.training.checkpointing import claim_checkpoint_dir, list_checkpoints, run_fingerprint


def _fake_checkpoint(root, step):
    d = root / f"step-{step}"
    d.mkdir(parents=True)
    (d / "state.bin").write_bytes(b"x")


def test_same_run_resumes_and_a_different_run_starts_fresh(tmp_path):
    start = tmp_path / "sft_coder"
    start.mkdir()
    (start / "model.safetensors").write_bytes(b"weights")
    root = tmp_path / "state"
    fp = run_fingerprint({"learning_rate": 1e-4, "max_steps": 30, "save_steps": 10}, 0, [start])

    assert claim_checkpoint_dir(root, fp) is False  # nothing to resume yet
    _fake_checkpoint(root, 10)
    assert claim_checkpoint_dir(root, fp) is True  # a restart of the same run resumes
    assert [s for s, _ in list_checkpoints(root)] == [10]

    # save_steps does not shape the run: still the same run
    assert run_fingerprint({"learning_rate": 1e-4, "max_steps": 30, "save_steps": 5}, 0, [start]) == fp

    other_lr = run_fingerprint({"learning_rate": 2e-4, "max_steps": 30, "save_steps": 10}, 0, [start])
    assert claim_checkpoint_dir(root, other_lr) is False
    assert list_checkpoints(root) == []  # the other run's checkpoints are not resumed

    _fake_checkpoint(root, 10)
    other_seed = run_fingerprint({"learning_rate": 2e-4, "max_steps": 30, "save_steps": 10}, 1, [start])
    assert claim_checkpoint_dir(root, other_seed) is False and list_checkpoints(root) == []

    _fake_checkpoint(root, 10)
    (start / "model.safetensors").write_bytes(b"re-trained weights!")  # the SFT stage was re-run
    new_start = run_fingerprint({"learning_rate": 2e-4, "max_steps": 30, "save_steps": 10}, 1, [start])
    assert new_start != other_seed
    assert claim_checkpoint_dir(root, new_start) is False and list_checkpoints(root) == []
