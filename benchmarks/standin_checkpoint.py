"""Write a random-weight stand-in for a Qwen2.5-Coder hub checkpoint (its real shape, a Qwen-style tokenizer with the
instruct chat template or none) to a local directory, for the GPU measurements where no hub is reachable:

    python benchmarks/standin_checkpoint.py --shape 7b --out data/standin/qwen2.5-coder-7b-instruct --device cuda
    corecode profile apply qwen2.5-coder-7b-instruct --set model.name_or_path=data/standin/qwen2.5-coder-7b-instruct

The tokenizer is built from a tokenizer.json (default: the anchors' 32k byte-level BPE, copied to .bench/).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corecode.models.testing import QWEN25_CODER_SHAPES, make_qwen_standin  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(QWEN25_CODER_SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", action="store_true", help="a base model: EOS <|endoftext|>, no chat template")
    ap.add_argument("--tokenizer", default=".bench/tok32k.json", help="tokenizer.json to build the tokenizer from")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    tok = PreTrainedTokenizerFast(tokenizer_file=a.tokenizer, unk_token="<unk>")
    out = make_qwen_standin(a.out, tok, a.shape, instruct=not a.base, device=a.device)
    config = json.loads((out / "config.json").read_text())
    n = sum(p.stat().st_size for p in out.glob("*.safetensors"))
    print(
        json.dumps(
            {
                "out": str(out),
                "shape": a.shape,
                "instruct": not a.base,
                "weights_GB": round(n / 1e9, 2),
                "hidden_size": config["hidden_size"],
                "layers": config["num_hidden_layers"],
            }
        )
    )


if __name__ == "__main__":
    main()
