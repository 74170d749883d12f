"""One line per team-GRPO training log: steps, first step, median / min / max step time of steps 2.. (step 1
compiles), rollout tokens/s (new tokens of both roles over the generation time). Peak GPU memory is not in these logs
(benchmarks/gpu_common.sh reports it).

    python benchmarks/grpo_log_summary.py data/reports/train/grpo_team.json [more logs...]
"""

from __future__ import annotations

import argparse
import json
import statistics


def summary(path: str) -> str:
    rows = [r for r in json.load(open(path)) if "step_time_s" in r]
    if not rows:
        return f"{path}\tno steps logged"
    later = rows[1:] or rows
    times = [r["step_time_s"] for r in later]
    gen_tps = [r["tokens_per_s"] * r["step_time_s"] / r["generation_s"] for r in later if r.get("generation_s")]
    rollout = f"; rollout {statistics.median(gen_tps):,.0f} tok/s" if gen_tps else ""
    return (
        f"{path}\t{len(rows)} steps\tfirst {rows[0]['step_time_s']:.1f} s\t"
        f"median {statistics.median(times):.2f} s/step (min {min(times):.2f}, max {max(times):.2f}){rollout}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", help="team-GRPO per-step logs (data/reports/train/grpo_team.json)")
    for p in parser.parse_args().logs:
        print(summary(p))
