"""DDP gradient accumulation with the all-reduce inside the update's last backward
(corecode.training.data_parallel.DDPAccumulation): two processes over gloo on CPU, a small DDP model, an update of
several micro-batches (a different number on each rank, padded as the trainer does) plus a ptx-like pass. A comm hook
counts the reducer's bucket all-reduces in each pass."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import same_gradients, two_rank_results  # noqa: E402

SCRIPT = """
import sys, torch, torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel
from corecode.training.data_parallel import DDPAccumulation, agree_max, all_reduce_gradients

dist.init_process_group("gloo")
rank = dist.get_rank()
reduced = []  # one entry per bucket the reducer all-reduces


def counting_hook(state, bucket):
    reduced.append(bucket.index())
    return allreduce_hook(state, bucket)


def model():
    torch.manual_seed(0)  # the same start on both ranks (DDP also broadcasts rank 0's weights)
    m = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.Tanh(), torch.nn.Linear(10, 3))
    ddp = DistributedDataParallel(m, broadcast_buffers=False)
    ddp.register_comm_hook(None, counting_hook)
    return ddp


torch.manual_seed(100 + rank)
batches = [torch.randn(4, 6) for _ in range(3 - rank)]  # rank 1 has one micro-batch fewer
extra = torch.randn(2, 6)  # the update's last pass (the trainer's ptx micro-batch)


def loss(m, x):
    return m(x).pow(2).mean()


def update(m, backward, expect=lambda n: n, after=lambda: None):
    runs = expect(agree_max(len(batches), torch.device("cpu")))
    for k in range(runs):
        if k < len(batches):
            backward(loss(m, batches[k]))
        else:  # a padding micro-batch: a forward/backward with no gradient
            backward(loss(m, batches[0]) * 0.0)
        after()
    backward(loss(m, extra))
    after()


def grads(m):
    return {n: None if w.grad is None else w.grad.detach().clone() for n, w in m.module.named_parameters()}


out = {}
m = model()  # the trainer's other path: every pass under no_sync, one all-reduce after the backward
with m.no_sync():
    update(m, lambda value: value.backward())
out["local"] = grads(m)
all_reduce_gradients(list(m.parameters()))
out["reference"] = grads(m)
out["reference_hooks"] = len(reduced)

m = model()
reduced.clear()
per_pass = []  # after each backward: how many bucket all-reduces the reducer has run so far
with DDPAccumulation(m, lambda value: value.backward(), passes=1) as schedule:
    update(m, schedule.backward, schedule.expect, after=lambda: per_pass.append(len(reduced)))
out["accumulated"] = grads(m)
out["per_pass"] = per_pass
out["sync_after"] = m.require_backward_grad_sync


class NeverSync(DDPAccumulation):  # sync never turned on: the checks below must see it
    def _sync(self, on):
        super()._sync(False)


m = model()
reduced.clear()
with NeverSync(m, lambda value: value.backward(), passes=1) as schedule:
    update(m, schedule.backward, schedule.expect)
out["never_synced"] = grads(m)
out["never_synced_hooks"] = len(reduced)

m = model()  # an update of no backward pass leaves sync on: the next backward all-reduces
with DDPAccumulation(m, lambda value: value.backward()) as schedule:
    schedule.expect(0)
reduced.clear()
loss(m, extra).backward()
out["after_empty_hooks"] = len(reduced)
torch.save(out, sys.argv[1] + f"/rank{rank}.pt")
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The script's results on both ranks (torchrun starts them; gloo joins them)."""
    return two_rank_results(tmp_path_factory.mktemp("ddp"), SCRIPT)


def test_the_reducer_in_the_last_pass_gives_the_all_reduced_gradient(ranks):
    for out in ranks:
        assert all(g is not None and g.abs().sum() > 0 for g in out["reference"].values())
        assert out["reference_hooks"] == 0  # the reference never used the reducer
        assert not same_gradients(out["local"], out["reference"])  # the ranks' local gradients differ: reducing matters
        assert same_gradients(out["accumulated"], out["reference"])
        assert same_gradients(out["accumulated"], ranks[0]["reference"])  # reduced: the same on both ranks
        assert out["sync_after"]


def test_only_the_last_pass_all_reduces(ranks):
    for out in ranks:
        # 3 agreed micro-batches (rank 1 pads one), then the ptx pass: reduced in the last only
        assert out["per_pass"][:3] == [0, 0, 0] and out["per_pass"][3] > 0, out["per_pass"]
        assert len(out["per_pass"]) == 4


def test_an_update_never_synced_leaves_local_gradients(ranks):
    for out in ranks:
        assert out["never_synced_hooks"] == 0
        assert same_gradients(out["never_synced"], out["local"])
        assert not same_gradients(out["never_synced"], out["reference"])


def test_an_update_of_no_pass_leaves_sync_on(ranks):
    for out in ranks:
        assert out["after_empty_hooks"] > 0
