"""FSDP2 gradient accumulation with one reduce-scatter per update (corecode.training.data_parallel.FSDPAccumulation):
two processes over gloo on CPU, a small fully_shard model, an update of several micro-batches plus a ptx-like pass."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import same_gradients, two_rank_results  # noqa: E402

SCRIPT = """
import sys, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from corecode.training.data_parallel import FSDPAccumulation, agree_max, gather_into

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

m = model()  # the sampling copy's gather: uneven shards (3 rows), a 1-row weight (rank 1's shard empty), a plain
one = fully_shard(torch.nn.Linear(4, 1), mesh=mesh)  # tensor; buckets of 100 bytes: several all-gathers, some of
sources = [*m.parameters(), *one.parameters(), torch.arange(3.0)]  # two parameters, cut alike on both ranks
targets = [torch.full(tuple(w.shape), -1.0, dtype=torch.bfloat16) for w in sources]
gather_into(sources, targets, bucket_bytes=100)
out["gathered"] = targets
out["full"] = [w.full_tensor().to(torch.bfloat16) if isinstance(w, DTensor) else w.to(torch.bfloat16) for w in sources]
torch.save(out, sys.argv[1] + f"/rank{rank}.pt")
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The script's results on both ranks (torchrun starts them; gloo joins them)."""
    return two_rank_results(tmp_path_factory.mktemp("fsdp"), SCRIPT)


def test_one_reduce_scatter_gives_the_per_micro_batch_gradient(ranks):
    for out in ranks:
        assert all(g is not None and g.abs().sum() > 0 for g in out["reference"].values())
        assert same_gradients(out["accumulated"], out["reference"])
        assert same_gradients(out["accumulated"], ranks[0]["reference"])  # reduced: the same on both ranks
        # 3 agreed micro-batches, then the last pass: until it, the weights stay gathered and nothing is reduced
        assert out["between"] == [(False, False)] * 3 + [(True, True)]
        assert out["sharded_after"]


def test_an_update_never_synced_leaves_no_reduced_gradient(ranks):
    for out in ranks:
        assert not same_gradients(out["never_synced"], out["reference"])


def test_an_update_of_no_pass_leaves_sync_on(ranks):
    for out in ranks:
        assert same_gradients(out["after_empty"], out["one_pass"])


def test_a_pass_count_other_than_declared_is_an_error(ranks):
    for out in ranks:
        assert len(out["errors"]) == 2
        assert "1 backward passes of an update of 2" in out["errors"][0]
        assert "backward pass 2 of an update of 1" in out["errors"][1]


def test_the_sampling_copy_gathers_every_shard_whole(ranks):
    """data_parallel.gather_into, bucketed: every rank ends with each whole tensor, in bf16, equal to full_tensor()."""
    for out in ranks:
        assert len(out["gathered"]) == 7
        for got, want, again in zip(out["gathered"], out["full"], ranks[0]["gathered"]):
            assert got.dtype == torch.bfloat16 and torch.equal(got, want) and torch.equal(got, again)
