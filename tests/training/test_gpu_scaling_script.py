"""benchmarks/gpu_scaling.sh's order of runs, on this CPU machine: `python3` and `nvidia-smi` in front of PATH stand in
for the GPU commands (each team_timing.py call writes a log in the real keys and exits), everything else is the real
script, and the summary is the real benchmarks/scaling_summary.py."""

import os
import stat
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"

# Records every call; a timing run writes `max_steps` one-second steps (20 unless --set on its command line) to the
# log path it is given; the corecode CLI and the stand-in checkpoint succeed without doing anything.
FAKE_PYTHON = r"""#!/bin/bash
echo "$*" >>"$CALLS"
case "$*" in
  *team_timing.py*)
    log=$(printf '%s\n' "$@" | sed -n 's/^grpo.team.log_path=//p')
    steps=$(printf '%s\n' "$@" | sed -n 's/^grpo.team.max_steps=//p')
    exec "$REAL_PYTHON" -c 'import json, sys
keys = ("coder_generation_s", "wait_s", "log_checkpoint_s", "step_s")
row = {"step_time_s": 1.0, **{f"time/rank0/{k}": 0.1 for k in keys}}
rows = [{"step": i, **row} for i in range(1, int(sys.argv[2]) + 1)]
json.dump(rows, open(sys.argv[1], "w"))' "$log" "${steps:-20}" ;;
  *"-m corecode.cli"*|*standin_checkpoint.py*) exit 0 ;;
  *) exec "$REAL_PYTHON" "$@" ;;
esac
"""
FAKE_NVIDIA_SMI = """#!/bin/bash
[ "$1" = -L ] && printf 'GPU 0: stand-in\\nGPU 1: stand-in\\n'
exit 0
"""


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _run(tmp_path: Path, **env: str) -> tuple[list[str], str, str]:
    """gpu_scaling.sh at full1.5b with DDP on 2 (stand-in) GPUs; returns the calls, runs.tsv and the summary."""
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    _script(bin_dir / "python3", FAKE_PYTHON)
    _script(bin_dir / "nvidia-smi", FAKE_NVIDIA_SMI)
    (work / "benchmarks").symlink_to(BENCHMARKS)
    calls = tmp_path / "calls.txt"
    run_env = os.environ | {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "REAL_PYTHON": sys.executable,
        "CALLS": str(calls),
        "R": str(tmp_path / "r"),
        "SHAPES": "full1.5b",
        "ARRANGEMENTS": "ddp",
        "NGPUS": "2",
        "RESUME": "0",
        **env,
    }
    subprocess.run(["bash", "benchmarks/gpu_scaling.sh"], cwd=work, env=run_env, check=True, timeout=120)
    timing = [c for c in calls.read_text().splitlines() if "team_timing.py" in c]
    return timing, (work / "data/scaling/runs.tsv").read_text(), (tmp_path / "r/scaling.md").read_text()


def test_warmup_runs_first_on_one_gpu_and_stays_out_of_the_table(tmp_path):
    timing, runs, table = _run(tmp_path)
    assert len(timing) == 3  # warm-up, 1 GPU, DDP on 2
    warmup, single, ddp = timing
    assert "grpo.team.max_steps=8" in warmup and "full1.5b_warmup.json" in warmup
    assert "accelerate" not in warmup and "full1.5b_single_1gpu.json" in single and "--num_processes 2" in ddp
    assert "warmup" not in runs and "warmup" not in table
    assert "| full1.5b | single | 1 | 16 | 20 |" in table and "| full1.5b | ddp | 2 | 32 | 20 |" in table


def test_warmup_zero_leaves_it_out(tmp_path):
    timing, _, _ = _run(tmp_path, WARMUP="0")
    assert len(timing) == 2 and "max_steps" not in timing[0]
