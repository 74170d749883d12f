"""Model factory: the embedded tiny Qwen2 or any hub checkpoint, always ending as a ``save_pretrained`` directory.

Every later stage (SFT, GRPO, evaluation, serving) loads a checkpoint the same way, ``load_model(path)`` +
``load_tokenizer(path)``, whether it started as the embedded default or as Qwen2.5-Coder-7B-Instruct.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    Qwen2Config,
    Qwen2ForCausalLM,
    set_seed,
)

from corecode.models.config import ModelParams
from corecode.models.tokenizer import train_bpe_tokenizer

EMBEDDED = "embedded"
POINTER_FILE = "corecode_pointer.json"  # written instead of weights when model.copy_weights is false
CORPUS_TEXT_KEYS = ("prompt", "completion", "text")


# ----------------------------------------------------------------------------------------------------- device/dtype
def resolve_device(device: str = "auto") -> torch.device:
    """'auto' -> cuda when available, else cpu; anything else is passed to ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype = "auto", device: str | torch.device = "auto") -> torch.dtype:
    """'auto' -> bfloat16 on a CUDA device that supports it, float16 on older CUDA cards, float32 on CPU."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype != "auto":
        return getattr(torch, dtype)
    dev = resolve_device(device) if isinstance(device, str) else device
    if dev.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


# ----------------------------------------------------------------------------------------------------------- corpus
def iter_corpus_texts(paths: list[Path], max_rows: int | None = None) -> Iterator[str]:
    """Yield the text fields (prompt, completion, text) of every JSONL row; errors name the file and line."""
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: training corpus file not found (run `corecode build-data` first)")
        with path.open() as f:
            for lineno, line in enumerate(f, 1):
                if max_rows is not None and lineno > max_rows:
                    break
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{lineno}: not valid JSON: {e}") from None
                texts = [row[k] for k in CORPUS_TEXT_KEYS if isinstance(row, dict) and isinstance(row.get(k), str)]
                if not texts:
                    raise ValueError(f"{path}:{lineno}: row has none of the text fields {CORPUS_TEXT_KEYS}")
                yield from texts


# ----------------------------------------------------------------------------------------------------------- models
def embedded_config(params: ModelParams, tokenizer: PreTrainedTokenizerBase) -> Qwen2Config:
    """The Qwen2 config of the embedded model; the vocab comes from the trained tokenizer (may be < vocab_size)."""
    e = params.embedded
    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=e.hidden_size,
        intermediate_size=e.intermediate_size,
        num_hidden_layers=e.num_hidden_layers,
        num_attention_heads=e.num_attention_heads,
        num_key_value_heads=e.num_key_value_heads,
        max_position_embeddings=e.max_position_embeddings,
        tie_word_embeddings=e.tie_word_embeddings,
        rope_theta=e.rope_theta,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )


def build_embedded_model(params: ModelParams, tokenizer: PreTrainedTokenizerBase, seed: int = 0) -> Qwen2ForCausalLM:
    """A freshly initialised embedded model (float32, CPU); same seed -> same weights."""
    set_seed(seed)
    model = Qwen2ForCausalLM(embedded_config(params, tokenizer))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def _resolve_pointer(name_or_path: str | Path) -> tuple[str, str | None]:
    """A checkpoint dir holding only a pointer file resolves to the hub id/path it names."""
    pointer = Path(name_or_path) / POINTER_FILE
    if pointer.is_file():
        data = json.loads(pointer.read_text())
        return data["name_or_path"], data.get("revision")
    return str(name_or_path), None


def load_model(
    name_or_path: str | Path,
    dtype: str | torch.dtype = "auto",
    device: str = "auto",
    *,
    revision: str | None = None,
    gradient_checkpointing: bool = False,
    attn_implementation: str | None = None,
) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_pretrained`` on the resolved dtype/device; the one way to load any checkpoint."""
    source, pointed_revision = _resolve_pointer(name_or_path)
    dev = resolve_device(device)
    kwargs = {"dtype": resolve_dtype(dtype, dev), "revision": revision or pointed_revision}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except OSError as e:
        raise OSError(f"cannot load model {source!r} (model.name_or_path): {e}") from e
    model.to(dev)
    if gradient_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.x name
        if enable is not None:
            enable({"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    return model


def load_tokenizer(name_or_path: str | Path, *, revision: str | None = None) -> PreTrainedTokenizerBase:
    """The checkpoint's tokenizer with a pad token (eos when it has none) and left padding for generation."""
    source, pointed_revision = _resolve_pointer(name_or_path)
    tok = AutoTokenizer.from_pretrained(source, revision=revision or pointed_revision)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def count_parameters(model: torch.nn.Module) -> int:
    """Unique parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


# ------------------------------------------------------------------------------------------------------- init-model
def init_base_checkpoint(params: ModelParams, corpus: list[Path], out_dir: Path, seed: int = 0) -> dict:
    """Write the base checkpoint (model + tokenizer) to ``out_dir``; returns a small summary dict.

    Embedded: train the BPE tokenizer on ``corpus`` and initialise the Qwen2 model from ``model.embedded``.
    Hub id/path: load it and save a local copy, or (``copy_weights: false``) write a pointer file.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # A re-run may switch between a copy and a pointer: remove the previous checkpoint's files (only those).
    for pattern in (
        POINTER_FILE,
        "config.json",
        "generation_config.json",
        "model*.safetensors*",
        "tokenizer*",
        "special_tokens_map.json",
        "vocab.json",
        "merges.txt",
        "chat_template.jinja",
    ):
        for stale in out_dir.glob(pattern):
            stale.unlink()
    if params.name_or_path == EMBEDDED:
        texts = list(iter_corpus_texts(corpus, params.tokenizer.max_corpus_rows))
        if not texts:
            raise ValueError(f"training corpus is empty: {[str(p) for p in corpus]}")
        tok = train_bpe_tokenizer(texts, params.embedded.vocab_size, params.tokenizer.min_frequency)
        model = build_embedded_model(params, tok, seed)
        model.save_pretrained(out_dir)
        tok.save_pretrained(out_dir)
        source = EMBEDDED
    elif params.copy_weights:
        model = load_model(params.name_or_path, params.dtype, "cpu", revision=params.revision)
        tok = load_tokenizer(params.name_or_path, revision=params.revision)
        model.save_pretrained(out_dir)
        tok.save_pretrained(out_dir)
        source = params.name_or_path
    else:
        (out_dir / POINTER_FILE).write_text(
            json.dumps({"name_or_path": params.name_or_path, "revision": params.revision}, indent=1) + "\n"
        )
        return {"source": params.name_or_path, "pointer": True, "out_dir": str(out_dir)}
    return {
        "source": source,
        "pointer": False,
        "out_dir": str(out_dir),
        "parameters": count_parameters(model),
        "vocab_size": len(tok),
        "corpus_texts": len(texts) if source == EMBEDDED else None,
    }
