"""Model factory: the embedded tiny Qwen2 or any hub checkpoint, and the one way every stage loads a model.

``load_model(name_or_path)`` + ``load_tokenizer(name_or_path)`` are what init-model, SFT, the GRPO trainers,
evaluation, ``solve`` and ``serve`` call, whether ``name_or_path`` is the embedded default's checkpoint, a hub id
(Qwen/Qwen2.5-Coder-7B-Instruct), a local directory, the pointer ``init-model`` writes with
``model.copy_weights: false``, or a LoRA adapter directory (``sft.lora.merge: false``). A source that cannot be
loaded (no config.json, an unreachable hub id, a missing directory) fails in seconds with the key and the fix
(:func:`check_source`), before any weights are read.
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
    from corecode.data.io import iter_jsonl

    for path in paths:
        for lineno, row in iter_jsonl(path, "training corpus file not found (run `corecode build-data` first)"):
            if max_rows is not None and lineno > max_rows:
                break
            texts = [row[k] for k in CORPUS_TEXT_KEYS if isinstance(row.get(k), str)]
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


class ModelSourceError(ValueError):
    """A model source that cannot be loaded; the message names the params key and the fix."""


def resolve_source(name_or_path: str | Path) -> tuple[str, str | None]:
    """(hub id or directory, revision) behind ``name_or_path``: a checkpoint dir holding only the pointer file that
    ``init-model`` writes with ``model.copy_weights: false`` resolves to the source it names."""
    pointer = Path(name_or_path) / POINTER_FILE
    if pointer.is_file():
        data = json.loads(pointer.read_text())
        return data["name_or_path"], data.get("revision")
    return str(name_or_path), None


def adapter_base(path: str | Path) -> str | None:
    """The base model of a LoRA adapter directory (peft's ``adapter_config.json``), None for anything else."""
    if not (Path(path) / "adapter_config.json").is_file() or (Path(path) / "config.json").is_file():
        return None
    from peft import PeftConfig

    return PeftConfig.from_pretrained(str(path)).base_model_name_or_path


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or name.endswith("/") or name.count("/") > 1 or "\\" in name


def _check_hub_id(repo_id: str, revision: str | None, key: str, timeout_s: float) -> None:
    """A hub id is usable when its config.json is in the local cache or the hub answers within ``timeout_s``.

    Probed here because ``from_pretrained`` retries an unreachable hub with backoff for ~25 s before failing; this
    asks once (huggingface_hub's ``get_hf_file_metadata`` without retries), so an offline machine fails in seconds.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, is_offline_mode, try_to_load_from_cache

    fix = (
        f"download it where the hub is reachable (`hf download {repo_id} --local-dir DIR`), copy DIR here and set "
        f"{key} to DIR; or fill the Hugging Face cache (HF_HOME) and set HF_HUB_OFFLINE=1"
    )
    try:
        if isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str):
            return
    except ValueError as e:  # not a valid repo id either
        raise ModelSourceError(
            f"{key}: {repo_id!r} is neither a local directory nor a valid hub id ({e}); give a directory holding "
            "config.json and the weights, or a hub id such as Qwen/Qwen2.5-Coder-1.5B-Instruct"
        ) from None
    if is_offline_mode():
        raise ModelSourceError(f"{key}: {repo_id!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; {fix}")
    try:
        get_hf_file_metadata(hf_hub_url(repo_id, "config.json", revision=revision), timeout=timeout_s)
    except Exception as e:  # network down, unknown or gated repo, bad revision: all end the same way
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelSourceError(
            f"{key}: cannot fetch hub model {repo_id!r} ({type(e).__name__}: {reason}); "
            f"no local directory of that name either; {fix}"
        ) from None


def check_source(
    name_or_path: str | Path,
    key: str = "model.name_or_path",
    *,
    revision: str | None = None,
    hint: str = "",
    timeout_s: float = 5.0,
) -> None:
    """Raise :class:`ModelSourceError` (naming ``key`` and the fix) unless ``name_or_path`` can be loaded: a directory
    with config.json, a pointer file or a LoRA adapter whose source checks out, or a hub id that is cached or
    reachable. Reads no weights; ``hint`` is appended to the error of a missing checkpoint directory."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if (path / POINTER_FILE).is_file():
            source, pointed = resolve_source(path)
            where = f"model.name_or_path (via {path / POINTER_FILE})"
            check_source(source, where, revision=pointed, timeout_s=timeout_s)
        elif (base := adapter_base(path)) is not None:
            where = f"{key} (the base_model_name_or_path of {path}/adapter_config.json)"
            check_source(base, where, timeout_s=timeout_s)
        elif not (path / "config.json").is_file():
            raise ModelSourceError(
                f"{key}: {path} has no config.json, so it is no model checkpoint; point {key} at the directory that "
                f"holds config.json and the weights (save_pretrained's output){hint}"
            )
        return
    if path.exists() or _looks_like_path(str(name_or_path)):
        what = "is not a directory" if path.exists() else "does not exist"
        raise ModelSourceError(f"{key}: {path} {what}; give a checkpoint directory or a hub id (org/name){hint}")
    _check_hub_id(str(name_or_path), revision, key, timeout_s)


def enable_gradient_checkpointing(model: torch.nn.Module) -> None:
    """Non-reentrant activation checkpointing (so a frozen base under a LoRA adapter still back-propagates), and no KV
    cache in training forwards; ``activation_checkpointing_enable`` is the transformers >= 5.x name."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable({"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False


def decoder_parts(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module] | None:
    """(causal LM, its decoder stack with ``layers``) of a transformers causal LM, under a peft wrapper too; None for
    a model of another layout."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(base, "lm_head"):
        return None
    return base, inner


def compile_decoder_layers(model: torch.nn.Module) -> None:
    """Run each decoder layer's forward through ``torch.compile`` (Inductor, dynamic sizes) while the layer is in
    training mode; in eval mode (rollouts' prefill with a KV cache, no-grad passes) it stays eager, so only training
    passes compile and generation's cache objects never reach Dynamo. The layers share one code object, so Dynamo
    compiles one layer and reuses it for the others ("regional compilation"): for a 28-layer stack on the 2-core CPU
    the first steps took 6.6x less time than with the whole model's forward compiled (``benchmarks/compile_time.py``,
    docs/benchmarks.md). The embedding, final norm and LM head stay eager.
    Raises ValueError for a model without a ``model.layers`` list."""
    parts = decoder_parts(model)
    if parts is None:
        raise ValueError(f"compile_model: {type(model).__name__} has no decoder layer list (model.layers)")
    for layer in parts[1].layers:
        eager = layer.forward
        compiled = torch.compile(eager, dynamic=True)

        def forward(*args, _layer=layer, _eager=eager, _compiled=compiled, **kwargs):
            return (_compiled if _layer.training else _eager)(*args, **kwargs)

        layer.forward = forward


def load_model(
    name_or_path: str | Path,
    dtype: str | torch.dtype = "auto",
    device: str = "auto",
    *,
    revision: str | None = None,
    gradient_checkpointing: bool = False,
    attn_implementation: str | None = None,
    key: str = "model.name_or_path",
) -> PreTrainedModel:
    """The one way every stage loads a model: ``AutoModelForCausalLM.from_pretrained`` on the resolved dtype/device.

    ``name_or_path`` is a hub id, a checkpoint directory, a directory holding init-model's pointer file, or a LoRA
    adapter directory (peft; its base is loaded the same way and the adapter merged in, giving a plain model). A
    source that cannot be loaded fails first, naming ``key`` (:func:`check_source`).
    """
    from corecode.generation.attention_mask import mend_sdpa_masks

    mend_sdpa_masks()  # left-padded batches: no NaN from query rows without a key on a GPU
    check_source(name_or_path, key, revision=revision)
    base = adapter_base(name_or_path)
    source, pointed_revision = resolve_source(base or name_or_path)
    dev = resolve_device(device)
    kwargs = {"dtype": resolve_dtype(dtype, dev), "revision": revision or pointed_revision}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except OSError as e:
        raise ModelSourceError(f"{key}: cannot load model {source!r}: {e}") from e
    if base is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(name_or_path)).merge_and_unload()
    model.to(dev)
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model


def load_tokenizer(
    name_or_path: str | Path, *, revision: str | None = None, key: str = "model.name_or_path"
) -> PreTrainedTokenizerBase:
    """The checkpoint's tokenizer with a pad token (eos when it has none) and left padding for generation. A LoRA
    adapter directory's own tokenizer files are used when it has them (SFT saves them), else its base's."""
    check_source(name_or_path, key, revision=revision)
    base = adapter_base(name_or_path)
    has_own = base is not None and any(Path(name_or_path).glob("tokenizer*"))
    source, pointed_revision = resolve_source(name_or_path if base is None or has_own else base)
    tok = AutoTokenizer.from_pretrained(source, revision=revision or pointed_revision)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def count_parameters(model: torch.nn.Module) -> int:
    """Unique parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


# ------------------------------------------------------------------------------------------------------- init-model
def _remove_checkpoint_files(out_dir: Path) -> None:
    """A re-run may switch between a copy and a pointer: remove the previous checkpoint's files (only those)."""
    out_dir.mkdir(parents=True, exist_ok=True)
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


def init_base_checkpoint(params: ModelParams, corpus: list[Path], out_dir: Path, seed: int = 0) -> dict:
    """Write the base checkpoint (model + tokenizer) to ``out_dir``; returns a small summary dict.

    Embedded: train the BPE tokenizer on ``corpus`` and initialise the Qwen2 model from ``model.embedded``.
    Hub id/path: load it and save a local copy, or (``copy_weights: false``) write a pointer file.
    """
    out_dir = Path(out_dir)
    # Everything that can fail (the corpus, the source) runs before the previous checkpoint's files are removed.
    if params.name_or_path == EMBEDDED:
        texts = list(iter_corpus_texts(corpus, params.tokenizer.max_corpus_rows))
        if not texts:
            raise ValueError(f"training corpus is empty: {[str(p) for p in corpus]}")
        tok = train_bpe_tokenizer(texts, params.embedded.vocab_size, params.tokenizer.min_frequency)
        model = build_embedded_model(params, tok, seed)
        source = EMBEDDED
    elif params.copy_weights:
        model = load_model(params.name_or_path, params.dtype, "cpu", revision=params.revision)
        tok = load_tokenizer(params.name_or_path, revision=params.revision)
        source = params.name_or_path
    else:
        check_source(params.name_or_path, revision=params.revision)
        model = tok = source = None
    _remove_checkpoint_files(out_dir)
    if model is None:
        (out_dir / POINTER_FILE).write_text(
            json.dumps({"name_or_path": params.name_or_path, "revision": params.revision}, indent=1) + "\n"
        )
        return {"source": params.name_or_path, "pointer": True, "out_dir": str(out_dir)}
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return {
        "source": source,
        "pointer": False,
        "out_dir": str(out_dir),
        "parameters": count_parameters(model),
        "vocab_size": len(tok),
        "corpus_texts": len(texts) if source == EMBEDDED else None,
    }
