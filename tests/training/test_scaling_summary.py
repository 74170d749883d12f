"""benchmarks/scaling_summary.py: the table of benchmarks/gpu_scaling.sh from team-GRPO logs (their real keys)."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "scaling_summary.py"


def _log(path: Path, ranks: int, step_times: list[float]) -> str:
    rows = []
    for i, t in enumerate(step_times, 1):
        row = {"step": i, "step_time_s": t}
        for r in range(ranks):
            row |= {f"time/rank{r}/coder_generation_s": t / 2, f"time/rank{r}/wait_s": 0.1 * r}
            row |= {f"time/rank{r}/log_checkpoint_s": 0.01, f"time/rank{r}/step_s": t}
        rows.append(row)
    path.write_text(json.dumps(rows))
    return str(path)


def _summarise(tmp_path: Path, runs_tsv: str) -> tuple[str, list[dict]]:
    """The script's printed tables and its JSON runs for ``runs_tsv``."""
    (tmp_path / "runs.tsv").write_text(runs_tsv)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "runs.tsv"), "--json", str(tmp_path / "s.json")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out, json.loads((tmp_path / "s.json").read_text())


def test_table_medians_ratios_and_phases(tmp_path):
    single = _log(tmp_path / "one.json", 1, [30.0, 5.0, 1.0, 1.2, 1.1, 3.0, 1.0])  # steps 1-2 (compile) left out
    ddp = _log(tmp_path / "ddp.json", 2, [20.0, 3.0, 1.0, 1.1, 1.0])
    split = _log(tmp_path / "split.json", 1, [20.0, 3.0, 2.0, 2.0, 2.0])
    out, runs = _summarise(
        tmp_path,
        f"s\tsingle\t1\t10\t{single}\t0\t60\n"
        f"s\tddp\t2\t20\t{ddp}\t0\t50\n"
        f"s\tsplit\t2\t20\t{split}\t0\t70\n"
        f"s\tfsdp\t2\t20\t{tmp_path / 'missing.json'}\t1\t9\n",
    )
    got = {(r["arrangement"], r["gpus"]): r for r in runs}
    one, two, sp = got["single", 1], got["ddp", 2], got["split", 2]
    assert one["median_s"] == 1.1 and one["measured"] == 5 and one["min_s"] == 1.0 and one["max_s"] == 3.0
    assert one["slow_steps"] == [6] and two["slow_steps"] == []  # 3.0 s is over twice the median
    assert "| 9.1 | 1.00x | 6 | 30.0 | 60 |" in out and "| 20.0 | 2.20x | - | 20.0 | 50 |" in out
    assert two["median_s"] == 1.0 and two["vs_1gpu"] == (20 / 1.0) / (10 / 1.1)
    assert sp["vs_ddp"] == 0.5 and sp["vs_1gpu"] == (20 / 2.0) / (10 / 1.1)
    assert two["phases"]["1"]["wait"] == 0.1 and two["phases"]["0"]["other"] == 0.5  # step - generation - wait
    assert "failed (exit 1)" in out and "| s | ddp | 2 | 20 | 5 | 1.000 |" in out
    assert "| s | ddp | 2 | 1 | 0.500 | 0.100 | 0.400 | 1.000 | 0.010 |" in out  # rank 1's phases


def test_rounds_pair_each_run_with_its_own_rounds_single_gpu_run(tmp_path):
    """REPEATS: round 2's DDP run is set against round 2's 1-GPU run, and the second table gives the ratios' median
    and range over the rounds."""
    logs = {
        name: _log(tmp_path / f"{name}.json", ranks, [9.0, 9.0, t, t, t])
        for name, ranks, t in [("one1", 1, 1.0), ("ddp1", 2, 1.25), ("one2", 1, 2.0), ("ddp2", 2, 2.0)]
    }
    out, runs = _summarise(
        tmp_path,
        f"s\tsingle\t1\t10\t{logs['one1']}\t0\t60\t1\n"
        f"s\tddp\t2\t20\t{logs['ddp1']}\t0\t60\t1\n"
        f"s\tsingle\t1\t10\t{logs['one2']}\t0\t60\t2\n"
        f"s\tddp\t2\t20\t{logs['ddp2']}\t0\t60\t2\n",
    )
    ddp = {r["round"]: r for r in runs if r["arrangement"] == "ddp"}
    assert ddp[1]["vs_1gpu"] == 1.6 and ddp[2]["vs_1gpu"] == 2.0  # not 1.0: round 1's 1-GPU run
    assert "| s | ddp (round 2) | 2 | 20 | 5 | 2.000 |" in out
    assert "| s | ddp | 2 | 2 | 1.80x | 1.60x - 2.00x |" in out


def test_pair_counts_both_gpus_and_lists_gpu1_as_rank_1(tmp_path):
    """A pair run's throughput is both processes' (GPU 1's log beside GPU 0's), and GPU 1's phases show as rank 1, so
    a slower second GPU shows without any collective in the way."""
    single = _log(tmp_path / "one.json", 1, [9.0, 9.0, 1.0, 1.0, 1.0])
    pair = _log(tmp_path / "pair.json", 1, [9.0, 9.0, 1.0, 1.0, 1.0])
    _log(tmp_path / "pair.gpu1.json", 1, [9.0, 9.0, 1.25, 1.25, 1.25])
    out, runs = _summarise(tmp_path, f"s\tsingle\t1\t10\t{single}\t0\t60\ns\tpair\t2\t20\t{pair}\t0\t60\n")
    got = {r["arrangement"]: r for r in runs}["pair"]
    assert got["gpu1_median_s"] == 1.25 and got["vs_1gpu"] == 1.8  # 10 / 1.0 + 10 / 1.25 programs/s against 10
    assert got["phases"]["1"]["coder_generation"] == 0.625
    assert "| 1.000 (GPU 1: 1.250) |" in out and "| s | pair | 2 | 1 | 0.625 |" in out
