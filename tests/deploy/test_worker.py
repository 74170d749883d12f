"""corecode.deploy.worker pieces on real git/DVC repositories with a local DVC remote (fast; the services end to
end: test_share_nothing.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corecode.deploy import worker
from corecode.training.checkpointing import run_fingerprint


def _repo(path: Path, remote: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "-q"], cwd=path, check=True)
    subprocess.run([*dvc, "remote", "add", "-q", "-d", "r", str(remote)], cwd=path, check=True)
    return path


def test_a_service_that_does_not_answer_is_named(free_port):
    port = free_port()  # closed once picked: nothing listens there
    env = {"CORECODE_DVC_REMOTE_URL": f"ssh://u@127.0.0.1:{port}/srv/remote", "MLFLOW_TRACKING_URI": "sqlite:///x.db"}
    endpoints = worker.service_endpoints(env)
    assert endpoints == [("DVC remote (SSH server)", env["CORECODE_DVC_REMOTE_URL"])]  # sqlite is no service
    with pytest.raises(worker.ServiceUnavailable, match=rf"DVC remote \(SSH server\) at 127.0.0.1:{port} is unreach"):
        worker.check_services(endpoints, timeout=2)


def test_checkpoints_go_to_the_remote_and_come_back_in_another_checkout(tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    first = _repo(tmp_path / "worker1", remote)
    ckpt = first / "data/run_state/grpo_team"
    for step in (1, 2):
        (ckpt / f"step-{step}").mkdir(parents=True)
        (ckpt / f"step-{step}" / "model.bin").write_bytes(bytes([step]) * 10)
    (ckpt / "fingerprint.txt").write_text("abc\n")
    monkeypatch.chdir(first)
    monkeypatch.setenv(worker.SYNC_ENV, "run1/grpo")
    log = tmp_path / "pushes.jsonl"
    monkeypatch.setenv(worker.PUSH_LOG_ENV, str(log))
    worker.push_checkpoint(ckpt, ckpt / "step-1")
    worker.push_checkpoint(ckpt, ckpt / "step-2")
    pushes = [json.loads(line) for line in log.read_text().splitlines()]  # what run_stage reports apart from "run"
    assert [(p["step"], p["bytes"]) for p in pushes] == [("step-1", 10), ("step-2", 10)]
    assert all(p["seconds"] >= 0 for p in pushes)
    base = remote / worker.RUN_STATE_PREFIX / "run1/grpo/data/run_state/grpo_team"
    assert sorted(p.name for p in base.iterdir()) == ["fingerprint.txt", "step-1", "step-2"]
    (base / ".partial-step-3").mkdir()  # a copy cut short by a lost worker is never restored
    (base / ".partial-step-3" / "model.bin").write_bytes(b"half")

    second = _repo(tmp_path / "worker2", remote)
    assert worker.restore_run_state(second, "run1/grpo") == [
        "data/run_state/grpo_team/step-1",
        "data/run_state/grpo_team/step-2",
    ]
    got = second / "data/run_state/grpo_team"
    assert (got / "step-2" / "model.bin").read_bytes() == bytes([2]) * 10
    assert (got / "fingerprint.txt").read_text() == "abc\n"
    assert not (got / ".partial-step-3").exists()
    assert worker.restore_run_state(second, "run2/grpo") == []  # another run's key: nothing


def test_inputs_are_the_lock_outputs_a_stage_reads(tmp_path):
    root = _repo(tmp_path / "w", tmp_path / "remote")
    (root / "dvc.yaml").write_text(
        "stages:\n"
        "  params:\n    cmd: a\n    outs: [{data/params: {cache: false}}]\n"
        "  train:\n    cmd: b\n    deps: [data/params/seed.json, data/ds]\n    outs: [data/model]\n"
        "  prep:\n    cmd: c\n    deps: [data/params/data.json]\n    outs: [data/ds, {data/card.md: {cache: false}}]\n"
    )
    lock = {
        "params": {"cmd": "a", "outs": [{"path": "data/params", "md5": "p.dir"}]},
        "prep": {"cmd": "c", "outs": [{"path": "data/ds", "md5": "d"}, {"path": "data/card.md", "md5": "c"}]},
    }
    got = worker.inputs_of("train", root, lock)
    assert got == [
        {"path": "data/params", "md5": "p.dir", "cached": False, "stage": "params"},
        {"path": "data/ds", "md5": "d", "cached": True, "stage": "prep"},
    ]
    assert worker.start_models_id(got) == worker.start_models_id(list(reversed(got)))


def test_fingerprint_takes_the_start_models_content_id_over_file_times(tmp_path, monkeypatch):
    start = tmp_path / "sft"
    start.mkdir()
    (start / "model.safetensors").write_bytes(b"w")
    monkeypatch.setenv(worker.START_ID_ENV, "md5s-of-the-inputs")
    before = run_fingerprint({"lr": 1}, 0, [start])
    os.utime(start / "model.safetensors", (1, 1))  # pulled on another host: other times, same content
    assert run_fingerprint({"lr": 1}, 0, [start]) == before
    assert run_fingerprint({"lr": 2}, 0, [start]) != before
    monkeypatch.setenv(worker.START_ID_ENV, "other-inputs")
    assert run_fingerprint({"lr": 1}, 0, [start]) != before
