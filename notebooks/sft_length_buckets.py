"""SFT of one role with its rows in length buckets whose batches come in random order, or in random order, from a
finished `make run`'s data and base checkpoint (notebooks/2026-12-01-01-length-grouped-sft.md).

    python notebooks/sft_length_buckets.py --root /tmp/fr2 --role coder --order buckets --seed 1 --out /tmp/sb1_coder
    corecode evaluate -m planner_coder_sft --out-dir /tmp/dev --set "evaluate.benchmarks=[composite_dev]" \
        --set agents.teams.planner_coder_sft.roles.coder=/tmp/sb1_coder/ckpt

``buckets``: every epoch the rows are shuffled, cut into groups of ``--group-batches`` batches, each group sorted by
length and cut into batches; the full batches are then shuffled over the whole epoch (transformers'
``LengthGroupedSampler`` yields each group's batches longest first instead), the short ones go last. ``random``: the
Trainer's own sampler, which reproduces the pipeline's `corecode sft --role R`. The checkpoint goes to
``<out>/ckpt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import Sampler


class ShuffledBuckets(Sampler):
    """One epoch's indices: length-sorted batches within groups of ``group_batches``, the batches in random order."""

    def __init__(self, lengths: list[int], batch_size: int, seed: int, group_batches: int):
        self.lengths = lengths
        self.batch_size = batch_size
        self.seed = seed
        self.group_batches = group_batches
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        generator = torch.Generator()
        generator.manual_seed(self.seed * 1000 + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        full, short = [], []
        size = self.group_batches * self.batch_size
        for start in range(0, len(order), size):
            group = sorted(order[start : start + size], key=lambda i: -self.lengths[i])
            for cut in range(0, len(group), self.batch_size):
                batch = group[cut : cut + self.batch_size]
                (full if len(batch) == self.batch_size else short).append(batch)
        shuffled = torch.randperm(len(full), generator=generator).tolist()
        return iter([i for b in shuffled for i in full[b]] + [i for batch in short for i in batch])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="A finished make run's directory (data/, params).")
    ap.add_argument("--role", required=True, choices=["planner", "coder", "single"])
    ap.add_argument("--order", required=True, choices=["random", "buckets"])
    ap.add_argument("--group-batches", type=int, default=50)
    ap.add_argument("--seed", type=int, default=None, help="SFT seed (default: params.yaml's seed).")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    root = args.root.resolve()
    out = args.out.resolve()
    os.chdir(root)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's corecode, root's data
    from corecode.config import load_params
    from corecode.training.sft import build_sft_trainer, save_final_model

    params = load_params("params.yaml")
    seed = params.seed if args.seed is None else args.seed
    cfg = params.sft.for_role(args.role, default_seed=seed).model_copy(update={"work_dir": str(out / "work")})
    trainer = build_sft_trainer(cfg, f"data/processed/{args.role}.jsonl", cfg.base_checkpoint)
    if args.order == "buckets":
        lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]
        sampler = ShuffledBuckets(lengths, cfg.batch_size, cfg.seed, args.group_batches)
        trainer._get_train_sampler = lambda *a, **k: sampler
    t = time.time()
    trainer.train()
    print(f"{args.role} {args.order} seed {seed}: trained in {time.time() - t:.1f} s")
    save_final_model(trainer.model, trainer.processing_class, cfg, out / "ckpt", Path(trainer.args.output_dir))


if __name__ == "__main__":
    main()
