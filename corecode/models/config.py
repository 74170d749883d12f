"""Parameters of the `model` section of params.yaml.

Defaults describe the *embedded default*: a ~2M-parameter Qwen2-architecture model with a 2k byte-level BPE vocab,
sized to learn on 2 CPU cores in minutes. Real checkpoints (Qwen2.5-Coder-*-Instruct, ...) are selected with
``name_or_path``; the profiles in ``configs/profiles/`` (``corecode profile list``) set them up for 1.5B-14B.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EmbeddedModelParams(BaseModel):
    """Shape of the embedded Qwen2 model (``model.embedded.*``), initialised from scratch by ``corecode init-model``."""

    model_config = ConfigDict(extra="forbid")

    hidden_size: int = Field(192, gt=0, description="Width of the residual stream.")
    num_hidden_layers: int = Field(4, gt=0, description="Number of transformer blocks.")
    num_attention_heads: int = Field(6, gt=0, description="Query heads; hidden_size must be divisible by it.")
    num_key_value_heads: int = Field(2, gt=0, description="KV heads (grouped-query attention); divides query heads.")
    intermediate_size: int = Field(512, gt=0, description="Width of the SwiGLU MLP.")
    max_position_embeddings: int = Field(512, gt=0, description="Longest prompt+completion in tokens (RoPE range).")
    vocab_size: int = Field(2048, ge=300, description="BPE vocabulary size (256 bytes + specials + merges).")
    tie_word_embeddings: bool = Field(True, description="Share input embedding and LM head weights (saves params).")
    rope_theta: float = Field(10000.0, gt=0, description="RoPE base frequency.")

    @model_validator(mode="after")
    def _heads_divide(self) -> "EmbeddedModelParams":
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be divisible by num_key_value_heads "
                f"({self.num_key_value_heads})"
            )
        return self


class TokenizerParams(BaseModel):
    """How ``init-model`` trains the embedded model's byte-level BPE tokenizer (``model.tokenizer.*``)."""

    model_config = ConfigDict(extra="forbid")

    min_frequency: int = Field(2, ge=1, description="A merge must occur this often in the corpus to be learnt.")
    max_corpus_rows: int | None = Field(
        None, ge=1, description="Train on at most this many rows per corpus file (None: all)."
    )


class LoraParams(BaseModel):
    """A LoRA adapter (peft): the one shape every trainer reads (``sft.lora``, ``grpo.team.lora``, ``grpo.magrpo.lora``,
    ``grpo.single.lora``).

    Defaults suit a 1.5B-14B hub checkpoint; the embedded default trains from scratch and keeps ``enabled: false``.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="Train a LoRA adapter instead of all weights.")
    r: int = Field(16, ge=1, description="LoRA rank.")
    alpha: int = Field(32, ge=1, description="LoRA scaling numerator (scale = alpha / r).")
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout on the LoRA branch.")
    target_modules: list[str] | str = Field(
        "all-linear", description="Modules that get adapters: a list of names (q_proj, ...) or peft's 'all-linear'."
    )
    modules_to_save: list[str] = Field(
        default_factory=list,
        description="Modules trained in full beside the adapter and saved with it (peft's modules_to_save), by name "
        "suffix: [embed_tokens, lm_head] for special tokens the base never learnt (a base model given ChatML's "
        "<|im_start|>, a random stand-in); [embed_tokens] where the LM head is tied to it (peft's ensure_weight_tying "
        "keeps the head on the trained copy).",
    )
    merge: bool = Field(
        True, description="Save the adapter merged into the base weights, so later stages load a plain checkpoint."
    )


class ModelParams(BaseModel):
    """The base checkpoint every stage starts from (``corecode init-model``)."""

    model_config = ConfigDict(extra="forbid")

    name_or_path: str = Field(
        "embedded",
        description="'embedded' (tiny Qwen2 built from model.embedded + a BPE tokenizer trained on the "
        "corpus), a hub id (Qwen/Qwen2.5-Coder-7B-Instruct) or a local checkpoint directory (config.json + weights "
        "+ tokenizer). init-model checks it first: an unreachable hub id or a directory without config.json stops "
        "there.",
    )
    revision: str | None = Field(None, description="Hub revision (branch, tag, commit) when name_or_path is a hub id.")
    copy_weights: bool = Field(
        True,
        description="init-model with a hub id/path: save a full local copy in data/checkpoints/base (True) or "
        "only a pointer file base/corecode_pointer.json naming the source (False; saves disk for 7B+).",
    )
    embedded: EmbeddedModelParams = Field(
        default_factory=EmbeddedModelParams, description="Shape of the from-scratch model (name_or_path: embedded)."
    )
    tokenizer: TokenizerParams = Field(
        default_factory=TokenizerParams, description="The BPE tokenizer init-model trains for the embedded model."
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="dtype of init-model's copy and of the models evaluate and solve generate with; 'auto': "
        "bfloat16 on CUDA when supported, else float32 (CPU). The trainers set their own (sft.dtype, grpo.*.bf16).",
    )
    device: str = Field(
        "auto",
        description="Device evaluate and solve generate on: 'auto' (cuda if available, else cpu), 'cpu', 'cuda', "
        "'cuda:1', ...",
    )
