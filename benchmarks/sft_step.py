"""One SFT step of corecode's trainer two ways, side by side in one process (``--compare``).

Both sides are corecode's SFT trainer as `corecode sft --role R` builds it (params.yaml, the role's data, the base
checkpoint), with the same seed, so both see the same batches in the same order. The script prints each side's median
step time over steps ``--skip``..N and their ratio.

- ``--compare loss`` (default): ``sft.fused_lm_head`` True is TRL 1.x's own ``SFTTrainer`` loss (chunked fused LM
  head, ``trl.kernels.chunked_logprob``), False is ``LogitsLossSFTTrainer`` (corecode.training.sft_trainer); also the
  largest difference between the two runs' logged losses, which shows that both optimise the same quantity.
- ``--compare metrics``: ``LogitsLossSFTTrainer`` computing the entropy and token accuracy on every step (TRL's way)
  against only on the steps it logs (corecode's), both logging every ``--logging-steps``; also whether the two runs'
  final weights are identical (the metrics never touch the gradient).

    python benchmarks/sft_step.py --role coder --steps 80      # after `dvc repro init_model` (needs data/ and base)
    python benchmarks/sft_step.py --role planner --steps 300 --compare metrics --root /path/to/make-run
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


def run(cfg, data: Path, base: Path, work: Path, every_step_metrics: bool = False):
    """Step wall times, logged losses and final weights of one short training run."""
    from transformers import TrainerCallback

    from corecode.training.sft import build_sft_trainer

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    trainer = build_sft_trainer(cfg.model_copy(update={"work_dir": str(work)}), data, base)
    if every_step_metrics:
        trainer._logs_this_step = lambda: True
    trainer.add_callback(Clock())
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    weights = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    return times, losses, weights


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", default="coder", choices=["planner", "coder", "single"])
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--skip", type=int, default=5, help="Warm-up steps left out of the median.")
    ap.add_argument("--root", type=Path, default=ROOT, help="Where data/ and params.yaml are (a finished make run).")
    ap.add_argument("--tiny", action="store_true", help="Tiny random model and data (smoke run).")
    ap.add_argument("--compare", choices=["loss", "metrics"], default="loss")
    ap.add_argument("--logging-steps", type=int, default=25, help="--compare metrics: log every N steps.")
    args = ap.parse_args()

    import torch

    from corecode.config import load_params

    root = args.root.resolve()
    p = load_params(root / "params.yaml")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if args.tiny:
            base, data = _tiny_inputs(tmp)
            args.steps, args.skip, args.logging_steps = min(args.steps, 6), 1, 3
        else:
            base, data = root / p.sft.base_checkpoint, root / "data" / "processed" / f"{args.role}.jsonl"
        cfg = p.sft.for_role(args.role, default_seed=p.seed).model_copy(
            update={
                "max_steps": args.steps,
                "eval_steps": 10**6,
                "logging_steps": 1 if args.compare == "loss" else args.logging_steps,
                "save_steps": None,
                "max_eval_rows": 1,
            }
        )
        # name -> (sft.fused_lm_head, entropy and accuracy on every step)
        if args.compare == "loss":
            sides = {"TRL fused LM head": (True, False), "logits loss": (False, False)}
        else:
            sides = {"metrics every step": (False, True), "metrics when logged": (False, False)}
        results = {}
        for i, (name, (fused, every)) in enumerate(sides.items()):
            c = cfg.model_copy(update={"fused_lm_head": fused})
            times, losses, weights = run(c, data, base, tmp / f"work_{i}", every)
            results[name] = (statistics.median(times[args.skip :]), losses, weights)
    (a, (t_a, l_a, w_a)), (b, (t_b, l_b, w_b)) = results.items()
    print(f"role {args.role}, {args.steps} steps, batch {cfg.batch_size}, max_length {cfg.max_length}")
    for name, (t, _, _) in results.items():
        print(f"{name:20s}: {t * 1e3:.1f} ms/step (median of steps {args.skip + 1}..{args.steps})")
    if args.compare == "loss":
        print(f"ratio logits/fused: {t_b / t_a:.3f}")
        print(f"max |loss difference| over {len(l_a)} logged steps: {max(abs(x - y) for x, y in zip(l_a, l_b)):.2e}")
    else:
        print(f"ratio every/logged: {t_a / t_b:.3f}")
        same = w_a.keys() == w_b.keys() and all(torch.equal(w_a[k], w_b[k]) for k in w_a)
        print(f"final weights identical: {same}; logged losses identical: {l_a == l_b}")


if __name__ == "__main__":
    main()
