"""One collaborative GRPO step (Planner + Coder) against TRL's own single-agent GRPOTrainer step, same command.

Both sides use the anchor's model (/work/shared/anchors/trl_grpo_step.py: random-init Qwen2-shaped body, 0.39B,
32k BPE vocab, bf16, gradient checkpointing) and the anchor's synthetic reward, so the numbers measure the trainers,
not the sandbox or a model's skill:

- TRL: ``GRPOTrainer`` exactly as the anchor configures it: 8 prompts x 8 generations = 64 completions x 256 tokens,
  plain ``generate``, 16 x 4 gradient accumulation. Median step time over steps 2..N.
- Team: corecode's team step (``corecode.training.rollout`` / ``advantages``, the code ``TeamGRPOTrainer`` runs):
  a Planner model samples 8 problems x G_p=2 plans (128 tokens), a separate Coder model samples G_c=4 programs per
  plan = 64 programs x 256 tokens; group advantages at both levels; both models updated (AdamW). Generation uses a
  static KV cache (``grpo.team.static_cache``), which transformers compiles. Median over steps 2..N.

``--shape 1.5b`` (or ``3b``) swaps the model for a random-weight Qwen2.5-Coder body of that shape (its 151,936-row
vocabulary included), the same on both sides. Prints both medians and team/TRL.
``--tiny`` is a CPU smoke run (tiny model, short completions, 2 steps).
Needs only torch, transformers, trl and datasets (the device image lacks pydantic, so corecode's package
``__init__`` files that pull it in are bypassed below); ``--shape`` other than ``anchor`` imports corecode.models,
which needs pydantic too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Import only corecode's dependency-free modules: register the package without running its __init__ (which imports
# the pydantic-based generation factory, absent from the GPU image).
_gen = types.ModuleType("corecode.generation")
_gen.__path__ = [str(ROOT / "corecode" / "generation")]
sys.modules.setdefault("corecode.generation", _gen)
from corecode.training.advantages import group_advantages  # noqa: E402
from corecode.training.rollout import LossConfig, generate_chunks, policy_loss_backward  # noqa: E402

PROMPTS = [f'def solve_{i}(nums):\n    """Return the sum of the even numbers in nums."""\n' for i in range(8)]


def reward(completions, **kw):
    """The anchor's synthetic reward."""
    return [float(len(c) % 7 == 0) + 0.01 * len(c.split()) for c in completions]


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def tokenizer(path: str | None, tiny: bool) -> PreTrainedTokenizerFast:
    if path and Path(path).exists():
        tok = PreTrainedTokenizerFast(tokenizer_file=path, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    else:  # train a small byte-level BPE on the prompts (tiny) or on the stdlib sources (full size)
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        t = Tokenizer(models.BPE(unk_token="<unk>"))
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        t.decoder = decoders.ByteLevel()
        size = 512 if tiny else 32768
        trainer = trainers.BpeTrainer(
            vocab_size=size,
            special_tokens=["<unk>", "<pad>", "<eos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        if tiny:
            t.train_from_iterator(PROMPTS * 10, trainer)
        else:
            import sysconfig

            files = [str(p) for p in Path(sysconfig.get_paths()["stdlib"]).glob("*.py")]
            t.train(files, trainer)
        tok = PreTrainedTokenizerFast(tokenizer_object=t, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    return tok


def make_model(tok, tiny: bool, device: str, dtype, shape: str = "anchor") -> Qwen2ForCausalLM:
    if shape != "anchor":  # a Qwen2.5-Coder shape (corecode.models.testing), its real vocabulary size included
        from corecode.models.testing import QWEN25_CODER_SHAPES

        cfg = Qwen2Config(**{**QWEN25_CODER_SHAPES[shape], "max_position_embeddings": 4096})
    elif tiny:
        cfg = Qwen2Config(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=1024,
        )
    else:
        cfg = Qwen2Config(
            vocab_size=32768,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
        )
    cfg.pad_token_id, cfg.eos_token_id, cfg.bos_token_id = tok.pad_token_id, tok.eos_token_id, tok.eos_token_id
    torch.manual_seed(0)
    return Qwen2ForCausalLM(cfg).to(dtype).to(device)


def trl_steps(model, tok, a) -> list[float]:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    ds = Dataset.from_list([{"prompt": p} for p in PROMPTS * (a.steps + 1)])
    args = GRPOConfig(
        output_dir="/tmp/grpo_step_trl",
        per_device_train_batch_size=16,
        gradient_accumulation_steps=4,
        num_generations=8,
        max_completion_length=a.code_tokens,
        max_steps=a.steps,
        logging_steps=1,
        report_to=[],
        learning_rate=1e-6,
        save_strategy="no",
        bf16=a.bf16,
        gradient_checkpointing=a.gc,
        temperature=1.0,
        use_cpu=a.device == "cpu",
    )
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *args, **kw):
            sync()
            self.t = time.perf_counter()

        def on_step_end(self, *args, **kw):
            sync()
            times.append(time.perf_counter() - self.t)

    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=reward, args=args, train_dataset=ds)
    trainer.add_callback(Timer())
    trainer.train()
    return times


def team_steps(planner, coder, tok, a) -> tuple[list[float], dict]:
    gp, gc, mb = 2, 4, 16
    opts = {m: torch.optim.AdamW(m.parameters(), lr=1e-6) for m in (planner, coder)}
    for m in (planner, coder):
        if a.gc:
            m.gradient_checkpointing_enable()
        m.config.use_cache = True
    times, info = [], {}
    for _ in range(a.steps):
        sync()
        t0 = time.perf_counter()
        plans = [
            s
            for c in generate_chunks(
                planner, tok, PROMPTS, gp, a.plan_tokens, chunk_size=64, static_cache=a.static_cache
            )
            for g in c
            for s in g
        ]
        coder_prompts = [
            PROMPTS[i // gp] + "# Plan:\n# " + s.completion.text.replace("\n", "\n# ") + "\n"
            for i, s in enumerate(plans)
        ]
        programs = [
            s
            for c in generate_chunks(
                coder, tok, coder_prompts, gc, a.code_tokens, chunk_size=64, static_cache=a.static_cache
            )
            for g in c
            for s in g
        ]
        sync()
        t_gen = time.perf_counter() - t0
        r_c = torch.tensor(reward([s.completion.text for s in programs]))
        r_p = r_c.view(-1, gc).mean(1)  # credit flows through the partner
        adv_p, _ = group_advantages(r_p, gp)
        adv_c, _ = group_advantages(r_c, gc)
        for model, samples, adv, n in ((planner, plans, adv_p, a.plan_tokens), (coder, programs, adv_c, a.code_tokens)):
            with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=a.bf16):
                policy_loss_backward(
                    model, samples, adv, LossConfig("grpo", max_completion_length=n), tok.pad_token_id, mb
                )
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opts[model].step()
            opts[model].zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t0)
        info = {
            "programs": len(programs),
            "plans": len(plans),
            "generation_s_last": t_gen,
            "program_tokens_mean": statistics.mean(s.completion.num_tokens for s in programs),
            "plan_tokens_mean": statistics.mean(s.completion.num_tokens for s in plans),
        }
    return times, info


def median_after_first(xs: list[float]) -> float:
    return statistics.median(xs[1:] if len(xs) > 1 else xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="CPU smoke run: tiny model, short completions, 2 steps")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--tokenizer", default="/work/shared/anchors/tok32k.json", help="tok32k.json (else one is trained)")
    ap.add_argument("--no-static-cache", dest="static_cache", action="store_false")
    ap.add_argument("--only", choices=["team", "trl"], default=None)
    ap.add_argument("--shape", choices=["anchor", "1.5b", "3b"], default="anchor", help="model shape (anchor: 0.39B)")
    ap.add_argument("--json", default=os.environ.get("GRPO_STEP_JSON"), help="write results here too")
    a = ap.parse_args()
    a.device = "cuda" if torch.cuda.is_available() and not a.tiny else "cpu"
    a.bf16 = a.gc = a.device == "cuda"
    a.static_cache = a.static_cache and a.device == "cuda"
    a.steps = a.steps or (2 if a.tiny else 6)
    a.plan_tokens, a.code_tokens = (16, 32) if a.tiny else (128, 256)
    dtype = torch.bfloat16 if a.bf16 else torch.float32
    tok = tokenizer(None if a.tiny else a.tokenizer, a.tiny)
    res = {
        "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
        "shape": a.shape,
        "steps": a.steps,
        "static_cache": a.static_cache,
        "completions": 64,
        "code_tokens": a.code_tokens,
        "plan_tokens": a.plan_tokens,
    }
    if a.only != "trl":
        planner, coder = (make_model(tok, a.tiny, a.device, dtype, a.shape) for _ in range(2))
        res["team_step_s"], res["team_info"] = team_steps(planner, coder, tok, a)
        res["team_step_s_median"] = median_after_first(res["team_step_s"])
        del planner, coder
        if a.device == "cuda":
            torch.cuda.empty_cache()
    if a.only != "team":
        model = make_model(tok, a.tiny, a.device, dtype, a.shape)
        res["trl_step_s"] = trl_steps(model, tok, a)
        res["trl_step_s_median"] = median_after_first(res["trl_step_s"])
    if "team_step_s_median" in res and "trl_step_s_median" in res:
        res["team_over_trl"] = res["team_step_s_median"] / res["trl_step_s_median"]
    if a.device == "cuda":
        res["max_mem_GiB"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(res, indent=1))
    if "team_over_trl" in res:
        print(
            f"team step median {res['team_step_s_median']:.2f} s (Planner {res['team_info']['plans']} plans + "
            f"Coder {res['team_info']['programs']} programs) | TRL single-agent step median "
            f"{res['trl_step_s_median']:.2f} s (64 completions) | team/TRL = {res['team_over_trl']:.2f}"
        )
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
