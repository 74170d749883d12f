"""Parameters of the `model` section of params.yaml.

Defaults describe the *embedded default*: a ~2M-parameter Qwen2-architecture model with a 2k byte-level BPE vocab,
sized to learn on 2 CPU cores in minutes. Real checkpoints (Qwen2.5-Coder-*-Instruct, ...) are selected with
``name_or_path``; see ``corecode/models/profiles.py`` for documented 1.5B/7B/14B settings.
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
    """LoRA adapter settings (``model.lora.*``), used when roles share a base model with one adapter per role."""

    model_config = ConfigDict(extra="forbid")

    r: int = Field(16, gt=0, description="LoRA rank.")
    alpha: int = Field(32, gt=0, description="LoRA scaling numerator (scale = alpha / r).")
    dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout on the LoRA input.")
    target_modules: list[str] | str = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names to adapt (Qwen2 names), or 'all-linear'.",
    )


class ModelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name_or_path: str = Field(
        "embedded", description="'embedded' (tiny Qwen2 built from model.embedded + a BPE tokenizer trained on the "
        "corpus), or a hub id / local path loaded with AutoModelForCausalLM.from_pretrained."
    )
    revision: str | None = Field(None, description="Hub revision (branch, tag, commit) when name_or_path is a hub id.")
    copy_weights: bool = Field(
        True, description="init-model with a hub id/path: save a full local copy in data/checkpoints/base (True) or "
        "only a pointer file base/corecode_pointer.json naming the source (False; saves disk for 7B+)."
    )
    embedded: EmbeddedModelParams = Field(default_factory=EmbeddedModelParams)
    tokenizer: TokenizerParams = Field(default_factory=TokenizerParams)
    roles: Literal["separate", "lora"] = Field(
        "separate", description="'separate': Planner and Coder are two full models; 'lora': one base model with a "
        "LoRA adapter per role (model.lora)."
    )
    lora: LoraParams = Field(default_factory=LoraParams)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="'auto': bfloat16 on CUDA when supported, else float32 (CPU)."
    )
    device: str = Field("auto", description="'auto' (cuda if available, else cpu), 'cpu', 'cuda', 'cuda:1', ...")
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in backward to save memory (needed for 7B+ on one GPU)."
    )
    attn_implementation: str | None = Field(
        None, description="transformers attention backend ('sdpa', 'eager', 'flash_attention_2'); None: default."
    )
