"""Per-rank phase timings of team GRPO (corecode.training.timing) and its data-parallel plumbing
(corecode.training.data_parallel): one process, and two processes over gloo under accelerate (CPU)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_team_fixtures import PROBLEMS, build_team, launch_two_ranks, one_step_params, team_params  # noqa: E402

from corecode.config import Params  # noqa: E402
from corecode.sandbox import Sandbox, SandboxParams  # noqa: E402
from corecode.training.data_parallel import (  # noqa: E402
    deal,
    host_share,
    local_rank,
    own_cores,
    pin_to_own_cores,
    take_host_share,
)
from corecode.training.grpo_config import GRPOParams  # noqa: E402
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model  # noqa: E402
from corecode.training.timing import PhaseTimer, phase_names  # noqa: E402

ROLES = ("planner", "coder")


@pytest.fixture(scope="module")
def team_dir(tmp_path_factory):
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield build_team(tmp_path_factory.mktemp("team"))
    finally:
        torch.set_num_threads(old)


def _check_rank_times(row: dict, ranks: int) -> dict[int, dict[str, float]]:
    """Every rank reports every phase, none negative, and a step's phases sum to at most its step time."""
    out = {}
    for r in range(ranks):
        times = {n: row[f"time/rank{r}/{n}_s"] for n in [*phase_names(ROLES), "step"]}
        assert all(v >= 0.0 for v in times.values()), times
        inside = sum(v for n, v in times.items() if n not in ("step", "log_checkpoint"))
        assert inside <= times["step"] + 1e-6, times
        out[r] = times
    assert not any(k.startswith(f"time/rank{ranks}/") for k in row), "a rank that does not exist"
    return out


def test_phase_timer_counts_phases_of_a_step_only():
    timer = PhaseTimer()
    with timer.phase("outside"):
        time.sleep(0.01)

    def produce():
        for _ in range(2):
            time.sleep(0.05)
            yield 1

    timer.start()
    t = time.perf_counter()
    for _ in timer.timed("make", produce()):
        time.sleep(0.05)  # the consumer's work between items is not the producer's phase
    with timer.phase("make"):
        time.sleep(0.02)
    times = timer.finish()
    total = time.perf_counter() - t
    assert set(times) == {"make"}
    assert 0.12 <= times["make"] < total - 0.09
    with timer.phase("closed"):
        pass
    assert timer.finish() == {}


def test_phase_is_a_profiler_range_within_a_step():
    # benchmarks/step_profile.py finds a step's phases in the profiler's trace by these names
    timer = PhaseTimer()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        timer.start()
        with timer.phase("coder_backward"):
            torch.ones(4).sum()
        timer.finish()
    assert [e.name for e in prof.events() if e.name.startswith("phase/")] == ["phase/coder_backward"]


def test_one_process_step_logs_every_phase_per_rank(team_dir, tmp_path):
    import mlflow

    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, max_steps=2, eval_problems=0, frozen_roles=[])
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
        mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
        try:
            with mlflow.start_run() as run:
                trainer.train(progress=False)
        finally:
            trainer.close()
    log = json.loads(Path(p.log_path).read_text())
    first, second = (_check_rank_times(row, 1)[0] for row in log)
    for row, times in zip(log, (first, second)):
        assert times["planner_generation"] > 0 and times["coder_generation"] > 0 and times["scoring"] >= 0
        assert times["coder_optimizer"] > 0
        assert times["planner_allreduce"] == 0 and times["coder_allreduce"] == 0  # one process: nothing to reduce
        assert times["step"] == row["step_time_s"]
    assert first["log_checkpoint"] == 0 and second["log_checkpoint"] > 0  # step 1's log write, reported at step 2
    names = set(mlflow.MlflowClient().get_run(run.info.run_id).data.metrics)
    assert {"time_rank0_coder_generation_s", "time_rank0_scoring_s", "time_rank0_step_s"} <= names
    assert not any("@" in n for n in names)


def test_fixed_length_rollouts_fill_every_completion(team_dir, tmp_path):
    planner, coder = (load_role_model(str(d)) for d in team_dir)
    p = one_step_params(tmp_path, fixed_length=True, eval_problems=0)
    with Sandbox(SandboxParams(workers=2, cache_dir=None)) as sandbox:
        trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
        try:
            for lean in (True, False):  # corecode's eager decoder and transformers' generate
                trainer.cfg.lean_decode = lean
                chunks = list(trainer.sample("coder", ["def f(x):"] * 3, 2))
                lengths = {s.completion.num_tokens for chunk in chunks for group in chunk for s in group}
                assert lengths == {p.max_code_tokens}, lean
                assert {s.completion.finish_reason for chunk in chunks for group in chunk for s in group} == {"length"}
        finally:
            trainer.close()


def test_skip_zero_advantage_off_runs_every_sequence(team_dir, tmp_path):
    zero = torch.zeros(4)
    with Sandbox(SandboxParams(workers=1, cache_dir=None)) as sandbox:
        for skip, expected in ((True, []), (False, [4])):
            planner, coder = (load_role_model(str(d)) for d in team_dir)
            p = one_step_params(tmp_path, skip_zero_advantage=skip, micro_batch_size=8, eval_problems=0)
            trainer = TeamGRPOTrainer(p, planner, coder, PROBLEMS, sandbox, seed=0)
            try:
                samples = [group[0] for chunk in trainer.sample("coder", ["def f(x):"] * 4, 1) for group in chunk]
                rows = []  # the rows of every training forward pass of the Coder
                model = trainer.acc.unwrap_model(trainer.roles["coder"].model)
                hook = model.register_forward_hook(
                    lambda m, args, kw, out, rows=rows: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
                )
                try:
                    stats = trainer.update("coder", samples, zero)
                finally:
                    hook.remove()
                assert rows == expected, skip
                assert stats["grad_norm"] == 0.0  # all advantages 0: a zero gradient either way
            finally:
                trainer.close()


def test_deal_gives_every_rank_as_many_items_and_about_as_much_size():
    sizes = [90, 80, 70, 60, 12, 11, 10, 9]  # a step's prompts, long ones first: consecutive shares would be lopsided
    shares = [deal(sizes, 2, rank, size=lambda x: x) for rank in (0, 1)]
    assert sorted(shares[0] + shares[1]) == sorted(sizes) and len(shares[0]) == len(shares[1]) == 4
    assert shares == [[90, 60, 12, 9], [80, 70, 11, 10]]  # snake order: sums 171 and 171 (against 300 and 42)
    assert deal(sizes, 1, 0, size=lambda x: x) == sizes  # one process: the step's items, in their order
    four = [deal(sizes, 4, rank, size=lambda x: x) for rank in range(4)]
    assert [sum(x) for x in four] == [99, 90, 81, 72] and all(len(x) == 2 for x in four)


def test_host_share_divides_cores_among_local_processes():
    assert host_share(cores=32, local=2) == 16 and host_share(cores=3, local=4) == 1
    params = SandboxParams(workers=14, cache_dir=None)
    assert take_host_share(params, local=1, cores=32) is params
    old = torch.get_num_threads()
    try:
        assert take_host_share(params, local=2, cores=32).workers == 14  # 16 cores each: the 14 asked for fit
        assert take_host_share(params, local=4, cores=32).workers == 7  # 8 cores each, one for the rank itself
        assert torch.get_num_threads() <= 8
    finally:
        torch.set_num_threads(old)


# ------------------------------------------------------------------------------------------- two processes, gloo
REDUCE_SCRIPT = """
import sys, torch, torch.distributed as dist
from corecode.training.data_parallel import agree_max, all_reduce_gradients
dist.init_process_group("gloo")
rank = dist.get_rank()
a = torch.nn.Parameter(torch.zeros(3))
b = torch.nn.Parameter(torch.zeros(2, 2, dtype=torch.float64))
c = torch.nn.Parameter(torch.zeros(5))
a.grad = torch.full((3,), float(rank + 1))
b.grad = torch.full((2, 2), 10.0 * (rank + 1), dtype=torch.float64)
if rank == 0:
    c.grad = torch.arange(5.0)  # rank 1 has no gradient for c: it takes part with zeros
all_reduce_gradients([a, b, c], bucket_bytes=16)  # several buckets, two dtypes
assert torch.equal(a.grad, torch.full((3,), 1.5)), a.grad
assert torch.equal(b.grad, torch.full((2, 2), 15.0, dtype=torch.float64)), b.grad
assert torch.equal(c.grad, torch.arange(5.0) / 2), c.grad
assert agree_max(3 if rank == 0 else 7, torch.device("cpu")) == 7
open(sys.argv[1] + f"/ok{rank}", "w").close()  # a file per rank: the two processes share one stdout pipe
dist.destroy_process_group()
"""


def _ptx_data(root: Path) -> dict[str, str]:
    from test_team_fixtures import sft_texts

    out = {}
    for role, pairs in zip(ROLES, sft_texts()):
        path = root / f"{role}_sft.jsonl"
        path.write_text("".join(json.dumps({"prompt": a, "completion": b}) + "\n" for a, b in pairs))
        out[role] = str(path)
    return out


def _sandbox(workers: int) -> SandboxParams:
    return SandboxParams(workers=workers, cache_dir=None, time_limit_s=20, sample_time_limit_s=120)


def _run_two_ranks(script_text: str, params: Params, tmp_path: Path) -> None:
    """``script_text`` (a template over ``tests``) in two processes, given ``params`` as a JSON file and ``tmp_path``
    for what the ranks leave behind."""
    path = tmp_path / "params.json"
    path.write_text(params.model_dump_json())
    script = tmp_path / "ranks.py"
    script.write_text(script_text.format(tests=str(Path(__file__).parent)))
    out = launch_two_ranks(script, str(path), str(tmp_path))
    assert out.returncode == 0, out.stderr[-4000:]


@pytest.mark.slow
def test_all_reduce_gradients_averages_over_processes(tmp_path):
    script = tmp_path / "reduce.py"
    script.write_text(REDUCE_SCRIPT)
    out = launch_two_ranks(script, str(tmp_path), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "ok0").exists() and (tmp_path / "ok1").exists(), out.stdout


DDP_SCRIPT = """
import json, sys, torch
sys.path.insert(0, {tests!r})
from pathlib import Path
from torch._dynamo.utils import counters
from test_team_fixtures import PROBLEMS
from corecode.config import Params
from corecode.sandbox import Sandbox
from corecode.training.data_parallel import take_host_share
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model
params = Params.model_validate_json(Path(sys.argv[1]).read_text())
cfg = params.grpo.team
roles = [load_role_model(path) for path in (cfg.planner_model, cfg.coder_model)]
with Sandbox(take_host_share(params.sandbox)) as sandbox:
    trainer = TeamGRPOTrainer(cfg, *roles, PROBLEMS, sandbox, seed=params.seed)
    def sums():  # per role: its model's weights, or on a shared base its adapter's
        return {{name: sum(float(w.double().sum()) for n, w in trainer.acc.unwrap_model(r.model).named_parameters()
                          if trainer.shared is None or f".{{name}}." in n)
                for name, r in trainer.roles.items()}}
    try:
        start = sums()
        trainer.train(progress=False)
        rank = trainer.acc.process_index
        Path(sys.argv[2], f"rank{{rank}}.json").write_text(json.dumps({{"start": start, "end": sums(),
            "ddp": trainer.ddp, "workers": sandbox.params.workers, "threads": torch.get_num_threads(),
            "graphs": counters["stats"]["unique_graphs"]}}))
    finally:
        trainer.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "shared, overlap, compiled, redraw",
    [
        (False, False, False, 0),
        (False, True, False, 0),
        (True, True, False, 0),
        (False, False, True, 0),
        (False, False, False, 4),
    ],
    ids=["two-models", "two-models-overlap", "shared-base", "two-models-compiled", "distinct-plans"],
)
def test_two_process_ddp_logs_both_ranks_and_keeps_replicas_equal(
    team_dir, tmp_path, shared, overlap, compiled, redraw
):
    """Separate role models (the all-reduce after the backward, or with overlap_allreduce inside its last pass), or one
    base with a LoRA adapter per role (one DDP wrapper for both adapters: after the backward, whatever
    overlap_allreduce says); separate models whose training forward is compiled (compile_model: the module inside
    the DDP wrapper); and distinct_plan_tries with a near-greedy Planner, whose repeated plans each rank draws again
    on its own (sampling has no collective: the ranks must still agree on the update)."""
    team = team_params(
        distinct_plan_tries=redraw,
        roles={"planner": {"temperature": 0.05}} if redraw else {},  # near-greedy plans repeat: some to draw again
        overlap_allreduce=overlap,
        compile_model=compiled,
        lora_r=4 if shared else None,
        shared_base=shared,
        planner_model=str(team_dir[1] if shared else team_dir[0]),
        coder_model=str(team_dir[1]),
        checkpoint_dir=str(tmp_path / "state"),
        log_path=str(tmp_path / "log.json"),
        problems_per_step=1,
        num_plans=2,
        num_programs=2,
        max_plan_tokens=24,
        max_code_tokens=32,
        micro_batch_size=1,  # several micro-batches per update, a different number per rank where advantages are 0
        max_steps=2,
        save_steps=100,
        eval_steps=0,
        eval_problems=0,
        learning_rate=1e-3,
        temperature=1.2,
        # a ptx batch per rank (its rows depend on the rank): a gradient every update, different on each rank
        ptx_coef=0.5,
        ptx_batch_size=2,
        ptx_data=_ptx_data(tmp_path),
    )
    _run_two_ranks(DDP_SCRIPT, Params(seed=5, grpo=GRPOParams(team=team), sandbox=_sandbox(workers=2)), tmp_path)

    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["ddp"] and ranks[1]["ddp"]
    assert all(bool(r["graphs"]) == compiled for r in ranks)  # compile_model: the training forward went through Dynamo
    for role in ROLES:  # the weights moved, by the same averaged gradient on both ranks
        assert ranks[0]["end"][role] != ranks[0]["start"][role], role
        assert ranks[0]["end"][role] == ranks[1]["end"][role], role
    share = host_share(local=2)  # each rank keeps to half the cores: threads and sandbox workers
    assert all(r["threads"] <= share and r["workers"] == min(2, max(1, share - 1)) for r in ranks)
    log = json.loads(Path(team.log_path).read_text())
    assert [row["step"] for row in log] == [1, 2]
    if redraw:
        assert sum(row["planner/redrawn_plans"] for row in log) > 0
    for row in log:
        times = _check_rank_times(row, 2)
        for r in (0, 1):
            if overlap and not shared:  # reduced inside <role>_backward: no phase of its own
                assert times[r]["coder_allreduce"] == 0 and times[r]["planner_allreduce"] == 0
            else:
                assert times[r]["coder_allreduce"] > 0 and times[r]["planner_allreduce"] > 0
            assert times[r]["coder_generation"] > 0 and times[r]["coder_backward"] > 0


FSDP_SCRIPT = """
import json, sys, torch
sys.path.insert(0, {tests!r})
from pathlib import Path
from accelerate import Accelerator, FullyShardedDataParallelPlugin, PartialState
from accelerate.utils import DistributedType
from test_team_fixtures import PROBLEMS
from corecode.config import Params
from corecode.sandbox import Sandbox
from corecode.training.team_grpo import TeamGRPOTrainer, load_role_model
# accelerate runs FSDP on GPUs only; torch's FSDP2 runs on CPU over gloo, so the state is set to FSDP by hand (in
# PartialState too: every later AcceleratorState() copies the distributed type from there)
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
    def trained():  # every trained weight, gathered
        return {{role: {{n: w.full_tensor().detach().clone()
                        for n, w in acc.unwrap_model(r.model).named_parameters() if w.requires_grad}}
                for role, r in trainer.roles.items()}}

    try:
        assert acc.is_fsdp2 and trainer.fsdp and set(trainer.samplers) == {{"planner", "coder"}}
        start = trained()
        trainer.train(progress=False)
        end = trained()
        for role in start:  # the reduce-scatter happened (an unreduced gradient moves nothing): every weight moved,
            # with LoRA every lora_B (lora_A's first gradient is 0, as B starts at 0)
            expect = {{n for n in start[role] if not cfg.lora.enabled or "lora_B" in n}}
            moved = {{n for n, w in start[role].items() if not torch.equal(w, end[role][n])}}
            assert expect and expect <= moved, (role, sorted(expect - moved)[:4])
        for role in ("planner", "coder"):  # each sampling copy holds the trained weights, gathered from the shards
            master = acc.unwrap_model(trainer.roles[role].model)
            for (name, w), copy in zip(master.named_parameters(), trainer.samplers[role].parameters(), strict=True):
                if w.requires_grad:
                    assert torch.equal(w.full_tensor().detach().to(copy.dtype), copy), name
        if cfg.lora.enabled:  # LoRA under FSDP saves the merged model from the unsharded sampling copy
            trainer.save_models({{"planner": sys.argv[2] + "/planner", "coder": sys.argv[2] + "/coder"}})
    finally:
        trainer.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("accumulate", [False, True], ids=["per-micro-batch", "fsdp_accumulate"])
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_fsdp2_trains_from_an_unsharded_sampling_copy(team_dir, tmp_path, lora, accumulate):
    """Both reduce-scatter schedules (grpo.team.fsdp_accumulate: once per update, its gradient against the default's in
    tests/training/test_fsdp_accumulation.py): policy micro-batches padded where ranks differ and a ptx pass, every
    trained weight moved, the sampling copies refreshed from the shards."""
    from transformers import AutoModelForCausalLM

    team = team_params(
        lora_r=4 if lora else None,
        planner_model=str(team_dir[0]),
        coder_model=str(team_dir[1]),
        checkpoint_dir=str(tmp_path / "state"),
        log_path=str(tmp_path / "log.json"),
        problems_per_step=1,
        num_plans=2,
        num_programs=2,
        max_plan_tokens=16,
        max_code_tokens=16,
        micro_batch_size=1,  # zero-advantage skips leave ranks with different counts: padded to the largest
        max_steps=2,
        save_steps=100,
        eval_steps=0,
        eval_problems=0,
        learning_rate=1e-3,
        temperature=1.2,
        bf16=True,
        ptx_coef=0.5,  # a gradient every update; the ptx micro-batch is the update's last backward pass
        ptx_batch_size=2,
        ptx_data=_ptx_data(tmp_path),
        fsdp_accumulate=accumulate,
    )
    _run_two_ranks(FSDP_SCRIPT, Params(seed=3, grpo=GRPOParams(team=team), sandbox=_sandbox(workers=1)), tmp_path)
    for row in json.loads(Path(team.log_path).read_text()):
        times = _check_rank_times(row, 2)
        for r in (0, 1):  # FSDP reduce-scatters inside backward: no separate all-reduce
            assert times[r]["coder_allreduce"] == 0 and times[r]["coder_backward"] > 0
            assert times[r]["coder_sampler_sync"] > 0
    if lora:
        merged = AutoModelForCausalLM.from_pretrained(tmp_path / "coder")
        assert not any("lora_" in name for name in merged.state_dict())


def test_each_rank_gets_its_own_run_of_cores():
    allowed = [7, 0, 1, 2, 3, 4, 5, 6]
    assert [own_cores(allowed, 2, r) for r in (0, 1)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert own_cores(allowed, 3, 2) == [4, 5]  # 2 cores each; the eighth is nobody's
    assert own_cores([0, 1], 4, 3) == [0, 1]  # fewer cores than processes: every core


def test_pinning_moves_every_thread_and_later_children():
    """In a child process (pinning changes the process it runs in), with a second thread already running: every thread
    and a process started afterwards run on the rank's own cores only."""
    code = """
import json, os, subprocess, sys, threading
from corecode.training.data_parallel import pin_to_own_cores
stop = threading.Event(); thread = threading.Thread(target=stop.wait); thread.start()
cores = pin_to_own_cores(local=2, rank=1)
threads = {tid: sorted(os.sched_getaffinity(int(tid))) for tid in os.listdir("/proc/self/task")}
child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                       capture_output=True, text=True, check=True).stdout
stop.set(); thread.join()
print(json.dumps({"cores": cores, "threads": threads, "child": json.loads(child)}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    mine = own_cores(list(os.sched_getaffinity(0)), 2, 1)
    assert got["cores"] == mine and len(got["threads"]) >= 2
    assert all(cores == mine for cores in got["threads"].values()) and got["child"] == mine
    assert pin_to_own_cores(local=1) is None  # one process: nothing pinned


def test_local_rank_without_a_launcher(monkeypatch):
    """benchmarks/team_timing_pair.sh starts its processes without a launcher: LOCAL_RANK there would make accelerate
    wait for a process group, so its processes name their slot in CORECODE_LOCAL_RANK."""
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.setenv("CORECODE_LOCAL_RANK", "1")
    assert local_rank() == 1
    monkeypatch.setenv("LOCAL_RANK", "0")  # a launcher's own variable wins
    assert local_rank() == 0
