"""One SFT step with TRL's fused LM-head loss against the loss from the model's full logits, same process.

Both sides are corecode's SFT trainer as `corecode sft --role R` builds it (params.yaml, the role's data, the base
checkpoint), differing only in ``sft.fused_lm_head``: True is TRL 1.x's own ``SFTTrainer`` loss (chunked fused LM
head, ``trl.kernels.chunked_logprob``), False is ``LogitsLossSFTTrainer`` (corecode.training.sft_trainer). Same seed,
so both see the same batches in the same order; the script prints each side's median step time over steps
``--skip``..N, their ratio (logits / fused), and the largest difference between the two runs' logged losses, which
shows that both optimise the same quantity.

    python benchmarks/sft_step.py --role coder --steps 80      # after `dvc repro init_model` (needs data/ and base)
    python benchmarks/sft_step.py --tiny                       # CPU smoke run on a tiny random model
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _tiny_inputs(tmp: Path) -> tuple[Path, Path]:
    """A tiny Qwen2 checkpoint and a prompt/completion file in corecode's SFT schema."""
    import json

    from corecode.models.testing import make_tiny_checkpoint

    rows = [
        {
            "prompt": f"Return {i} plus one.\n",
            "completion": f"def solve():\n    return {i + 1}\n",
            "split": "train" if i % 8 else "val",
        }
        for i in range(64)
    ]
    ckpt = make_tiny_checkpoint(tmp / "ckpt", [r["prompt"] + r["completion"] for r in rows])
    data = tmp / "coder.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ckpt, data


def run(fused: bool, cfg, data: Path, base: Path, work: Path) -> tuple[list[float], list[float]]:
    """Step wall times and logged losses of one short training run."""
    from transformers import TrainerCallback

    from corecode.training.sft import build_sft_trainer

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    c = cfg.model_copy(update={"fused_lm_head": fused, "work_dir": str(work)})
    trainer = build_sft_trainer(c, data, base)
    trainer.add_callback(Clock())
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return times, losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", default="coder", choices=["planner", "coder", "single"])
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--skip", type=int, default=5, help="Warm-up steps left out of the median.")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--tiny", action="store_true", help="Tiny random model and data (smoke run).")
    args = ap.parse_args()

    from corecode.config import load_params

    p = load_params(args.params)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if args.tiny:
            base, data = _tiny_inputs(tmp)
            args.steps, args.skip = min(args.steps, 6), 1
        else:
            base, data = Path(p.sft.base_checkpoint), ROOT / "data" / "processed" / f"{args.role}.jsonl"
        cfg = p.sft.for_role(args.role, default_seed=p.seed).model_copy(
            update={
                "max_steps": args.steps,
                "eval_steps": 10**6,
                "logging_steps": 1,
                "save_steps": None,
                "max_eval_rows": 1,
            }
        )
        results = {}
        for fused in (True, False):
            times, losses = run(fused, cfg, data, base, tmp / f"work_{fused}")
            results[fused] = (statistics.median(times[args.skip :]), losses)
    (t_fused, l_fused), (t_logits, l_logits) = results[True], results[False]
    diff = max(abs(a - b) for a, b in zip(l_fused, l_logits))
    print(f"role {args.role}, {args.steps} steps, batch {cfg.batch_size}, max_length {cfg.max_length}")
    print(f"TRL fused LM head : {t_fused * 1e3:.1f} ms/step (median of steps {args.skip + 1}..{args.steps})")
    print(f"logits loss       : {t_logits * 1e3:.1f} ms/step")
    print(f"ratio logits/fused: {t_logits / t_fused:.3f}")
    print(f"max |loss difference| over {len(l_fused)} logged steps: {diff:.2e}")


if __name__ == "__main__":
    main()
