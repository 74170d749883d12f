"""FSDP2 gradient accumulation with one reduce-scatter per update (corecode.training.data_parallel.FSDPAccumulation):
two processes over gloo on CPU, a small fully_shard model, an update of several micro-batches plus a ptx-like pass."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))

SCRIPT = """
import sys, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from corecode.training.data_parallel import FSDPAccumulation, agree_max

dist.init_process_group("gloo")
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (2,))


def model():
    torch.manual_seed(0)  # the same start on both ranks (fully_shard keeps each rank's shard of it)
    m = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.Tanh(), torch.nn.Linear(10, 3))  # 3 rows: uneven shards
    for layer in (m[0], m[2]):
        fully_shard(layer, mesh=mesh)
    return fully_shard(m, mesh=mesh)


torch.manual_seed(100 + rank)
batches = [torch.randn(4, 6) for _ in range(3 - rank)]  # rank 1 has one micro-batch fewer: padded, as in the trainer
extra = torch.randn(2, 6)  # the update's last pass (the trainer's ptx micro-batch)


def loss(m, x):
    return m(x).pow(2).mean()


def update(m, backward, expect=lambda n: n):
    runs = expect(agree_max(len(batches), torch.device("cpu")))
    for k in range(runs):
        if k < len(batches):
            backward(loss(m, batches[k]))
        else:  # a padding micro-batch: the collectives of a forward/backward, no gradient
            backward(loss(m, batches[0]) * 0.0)
    backward(loss(m, extra))


def grads(m):  # a reduced gradient is sharded (a DTensor); one never reduced is the unsharded local one
    return {
        n: None if w.grad is None else w.grad.full_tensor() if isinstance(w.grad, DTensor) else w.grad.detach().clone()
        for n, w in m.named_parameters()
    }


def sharded(m):
    return all(isinstance(w, DTensor) for w in m.parameters())


out = {}
m = model()  # the default schedule: a reduce-scatter in every backward
update(m, lambda value: value.backward())
out["reference"] = grads(m)

m = model()
between = []  # after each backward: are the weights sharded, and is any gradient a reduced (sharded) one


def plain(value):
    value.backward()
    between.append((sharded(m), any(isinstance(w.grad, DTensor) for w in m.parameters())))


with FSDPAccumulation(m, plain, passes=1) as schedule:
    update(m, schedule.backward, schedule.expect)
out["accumulated"] = grads(m)
out["between"] = between
out["sharded_after"] = sharded(m)


class NeverSync(FSDPAccumulation):  # sync never turned back on: the check below must see it
    def _sync(self, on):
        super()._sync(False)


m = model()
with NeverSync(m, lambda value: value.backward(), passes=1) as schedule:
    update(m, schedule.backward, schedule.expect)
out["never_synced"] = grads(m)
m.set_requires_gradient_sync(True)
m.set_reshard_after_backward(True)

m = model()  # an update of no backward pass leaves the model as it was: the next backward reduce-scatters
with FSDPAccumulation(m, lambda value: value.backward()) as schedule:
    schedule.expect(0)
loss(m, extra).backward()
out["after_empty"] = grads(m)
m = model()
loss(m, extra).backward()
out["one_pass"] = grads(m)

errors = []
for declared, run in ((2, 1), (1, 2)):  # fewer or more passes than declared
    m = model()
    try:
        with FSDPAccumulation(m, lambda value: value.backward(), passes=declared) as schedule:
            for _ in range(run):
                schedule.backward(loss(m, extra))
    except RuntimeError as e:
        errors.append(str(e))
    m.set_requires_gradient_sync(True)
    m.set_reshard_after_backward(True)
out["errors"] = errors
torch.save(out, sys.argv[1] + f"/rank{rank}.pt")
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The script's results on both ranks (torchrun starts them; gloo joins them)."""
    root = tmp_path_factory.mktemp("fsdp")
    script = root / "ranks.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(Path(__file__).parents[2]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script)]
    out = subprocess.run([*cmd, str(root)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return [torch.load(root / f"rank{r}.pt") for r in (0, 1)]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        x is not None and y is not None and torch.allclose(x, y, rtol=1e-5, atol=1e-7)
        for x, y in zip(a.values(), b.values())
    )


def test_one_reduce_scatter_gives_the_per_micro_batch_gradient(ranks):
    for out in ranks:
        assert all(g is not None and g.abs().sum() > 0 for g in out["reference"].values())
        assert _same(out["accumulated"], out["reference"])
        assert _same(out["accumulated"], ranks[0]["reference"])  # reduced: the same on both ranks
        # 3 agreed micro-batches, then the last pass: until it, the weights stay gathered and nothing is reduced
        assert out["between"] == [(False, False)] * 3 + [(True, True)]
        assert out["sharded_after"]


def test_an_update_never_synced_leaves_no_reduced_gradient(ranks):
    for out in ranks:
        assert not _same(out["never_synced"], out["reference"])


def test_an_update_of_no_pass_leaves_sync_on(ranks):
    for out in ranks:
        assert _same(out["after_empty"], out["one_pass"])


def test_a_pass_count_other_than_declared_is_an_error(ranks):
    for out in ranks:
        assert len(out["errors"]) == 2
        assert "1 backward passes of an update of 2" in out["errors"][0]
        assert "backward pass 2 of an update of 1" in out["errors"][1]


# ------------------------------------------------------------------------------ the team trainer under FSDP2 (CPU)
TRAINER_SCRIPT = """
import json, sys, torch
sys.path.insert(0, {tests!r})
from pathlib import Path
from accelerate import Accelerator, FullyShardedDataParallelPlugin, PartialState
from accelerate.utils import DistributedType
from torch.distributed.tensor import DTensor
from test_team_fixtures import PROBLEMS
from corecode.config import Params
from corecode.sandbox import Sandbox
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model
# accelerate runs FSDP on GPUs only; torch's FSDP2 runs on CPU over gloo, so the state is set to FSDP by hand (as
# tests/training/test_team_timing.py's FSDP test does)
plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="transformer_based_wrap",
    transformer_cls_names_to_wrap=["Qwen2DecoderLayer"], state_dict_type="FULL_STATE_DICT")
acc = Accelerator(mixed_precision="bf16", cpu=True)
PartialState._shared_state["distributed_type"] = acc.state.distributed_type = DistributedType.FSDP
plugin.set_mixed_precision("bf16")
acc.state.fsdp_plugin = plugin
params = Params.model_validate_json(Path(sys.argv[1]).read_text())
cfg = params.grpo.team
roles = [load_role_model(path) for path in (cfg.planner_model, cfg.coder_model)]
with Sandbox(params.sandbox) as sandbox:
    trainer = TeamGRPOTrainer(cfg, *roles, PROBLEMS, sandbox, seed=params.seed, accelerator=acc)

    def weights():
        return {{role: {{n: w.full_tensor().detach().clone() for n, w in acc.unwrap_model(r.model).named_parameters()}}
                for role, r in trainer.roles.items()}}

    try:
        start = weights()
        trainer.train(progress=False)
        out = {{"start": start, "end": weights(), "resharded": {{}}, "sampler_equal": {{}}}}
        for role, r in trainer.roles.items():
            master = acc.unwrap_model(r.model)
            out["resharded"][role] = all(isinstance(w, DTensor) for w in master.parameters())
            out["sampler_equal"][role] = all(torch.equal(w.full_tensor().detach().to(copy.dtype), copy)
                for w, copy in zip(master.parameters(), trainer.samplers[role].parameters(), strict=True))
        if acc.process_index == 0:
            torch.save(out, sys.argv[2] + "/weights.pt")
    finally:
        trainer.close()
"""


def _train(team_dir, root: Path, accumulate: bool, lora: bool) -> dict:
    """One FSDP2 step of the team trainer in two processes: rank 0's weights before and after, and its checks."""
    from test_team_fixtures import sft_texts, team_params

    from corecode.config import Params
    from corecode.sandbox import SandboxParams
    from corecode.training.grpo_config import GRPOParams

    root.mkdir()
    ptx = {}
    for role, pairs in zip(("planner", "coder"), sft_texts()):
        path = root / f"{role}_sft.jsonl"
        path.write_text("".join(json.dumps({"prompt": a, "completion": b}) + "\n" for a, b in pairs))
        ptx[role] = str(path)
    team = team_params(
        lora_r=4 if lora else None,
        planner_model=str(team_dir[0]),
        coder_model=str(team_dir[1]),
        checkpoint_dir=str(root / "state"),
        log_path=str(root / "log.json"),
        problems_per_step=1,
        num_plans=2,
        num_programs=2,
        max_plan_tokens=16,
        max_code_tokens=16,
        micro_batch_size=1,  # several micro-batches, a different number per rank where advantages are 0: padded
        max_steps=1,
        save_steps=100,
        eval_steps=0,
        eval_problems=0,
        learning_rate=1e-3,
        temperature=1.2,
        bf16=True,
        ptx_coef=0.5,  # the ptx micro-batch is each update's last backward pass
        ptx_batch_size=2,
        ptx_data=ptx,
        fsdp_accumulate=accumulate,
    )
    sandbox = SandboxParams(workers=1, cache_dir=None, time_limit_s=20, sample_time_limit_s=120)
    params = root / "params.json"
    params.write_text(Params(seed=3, grpo=GRPOParams(team=team), sandbox=sandbox).model_dump_json())
    script = root / "ranks.py"
    script.write_text(TRAINER_SCRIPT.format(tests=str(Path(__file__).parent)))
    env = dict(os.environ, OMP_NUM_THREADS="1", ACCELERATE_USE_CPU="true", PYTHONPATH=str(Path(__file__).parents[2]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script)]
    out = subprocess.run([*cmd, str(params), str(root)], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return torch.load(root / "weights.pt")


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory):
    from test_team_fixtures import build_team

    return build_team(tmp_path_factory.mktemp("team"))


@pytest.mark.slow
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_team_trainer_trains_with_fsdp_accumulate(team_dir, tmp_path, lora):
    """The trainer's wiring: policy micro-batches (padded where ranks differ) and the ptx pass counted, so the last
    backward reduce-scatters (else every gradient stays unreduced and AdamW leaves the weights where they were); the
    weights sharded again after the update and the sampling copies refreshed from them. The gradient itself against
    the default schedule: the tests above (the trainer's rollouts on CPU differ from one run to the next)."""
    out = _train(team_dir, tmp_path / "run", accumulate=True, lora=lora)
    for role in ("planner", "coder"):
        assert out["resharded"][role] and out["sampler_equal"][role], role
        # full: every weight; LoRA: every lora_B (lora_A's first gradient is 0: B starts at 0), nothing of the base
        trained = [n for n in out["start"][role] if not lora or "lora_B" in n]
        assert trained
        moved = [n for n, w in out["start"][role].items() if not torch.equal(w, out["end"][role][n])]
        if lora:
            assert set(trained) <= set(moved) and all("lora_" in n for n in moved), (role, moved)
        else:
            assert sorted(moved) == sorted(trained), (role, set(trained) - set(moved))
