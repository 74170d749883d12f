"""Parameters of the ``data`` section of params.yaml.

Defaults suit the embedded default (tiny CPU profile): the ``composite`` suite only, HumanEval as the evaluation set to
decontaminate against.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CompositeParams(BaseModel):
    """Knobs of the procedurally generated ``composite`` suite (corecode/data/composite.py)."""

    model_config = ConfigDict(extra="forbid")

    n_train: int = Field(3000, ge=1, description="Number of training problems.")
    n_val: int = Field(200, ge=0, description="Number of validation problems (same distribution as train, disjoint).")
    n_test: int = Field(600, ge=0, description="Number of test problems: held-out step pairs and longer chains.")
    n_rl: int = Field(
        600,
        ge=0,
        description="Problems of the `rl` split (composite_rl.jsonl): tests only, for the GRPO stages; no SFT row is "
        "built from them. Their step sequences occur in no other split (new compositions of seen steps and pairs; "
        "held-out pairs stay held out; chains stay within train_max_steps except the rl_longer_frac share). "
        "0 = no rl split.",
    )
    rl_longer_frac: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the rl split's problems (its first ones) whose chains are longer than train_max_steps "
        "(train_max_steps+1..test_max_steps, still without a held-out pair): compositions longer than any SFT row, "
        "where a plan matters most, for GRPO to learn from. 0 = every rl chain within train_max_steps.",
    )
    n_dev: int = Field(
        500,
        ge=0,
        description="Problems of the `dev` split (composite_dev.jsonl), drawn like test (held-out compositions) on "
        "their own RNG stream; no dev problem is a test problem and the rl split uses none of their step sequences. "
        "Every tuning run reads dev, never test (notebooks/sweep.py, the GRPO trainers' in-training evaluation). "
        "0 = no dev split.",
    )
    min_steps: int = Field(1, ge=1, description="Fewest primitive steps in a problem.")
    train_max_steps: int = Field(3, ge=1, description="Most steps in a train/val problem.")
    test_max_steps: int = Field(
        4, ge=1, description="Most steps in a test problem; > train_max_steps gives longer chains."
    )
    heldout_pair_frac: float = Field(
        0.15, ge=0.0, lt=1.0, description="Fraction of adjacent step pairs (a then b) that never occur in train/val."
    )
    test_longer_frac: float = Field(
        0.2, ge=0.0, le=1.0, description="Fraction of test problems longer than train_max_steps (rest: held-out pairs)."
    )
    test_unseen_chain_frac: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Fraction of test problems whose step sequence never occurs in train/val although each of its "
        "adjacent pairs does (unseen combinations of seen steps; the rest: held-out pairs).",
    )
    steps: list[str] | None = Field(
        None,
        description="Subset of the step library by step name or kind (e.g. [filter, map, sum], and `efficiency` for "
        "the efficiency family); null = all.",
    )
    start_types: list[Literal["ints", "str"]] = Field(
        default_factory=lambda: ["ints", "str"], description="Input types problems may take (a list of ints, a string)."
    )
    str_start_prob: float = Field(0.35, ge=0.0, le=1.0, description="Probability a problem takes a string input.")
    phrasing_variety: int = Field(
        2, ge=1, le=3, description="How many phrasings per step statements draw from (1 = statement mirrors the plan)."
    )
    styles: list[Literal["sequential", "nested", "mixed"]] = Field(
        default_factory=lambda: ["sequential", "nested", "mixed"],
        description="Statement styles: step by step, one nested noun phrase (reverse order), or both.",
    )
    n_tests: int = Field(8, ge=1, le=50, description="Tests per problem (edge cases included).")
    n_examples: int = Field(1, ge=0, le=3, description="Input/output examples shown in the docstring.")
    entry_point: str = Field("solve", description="Function name of every composite problem.")
    efficiency_frac: float = Field(
        0.1,
        ge=0.0,
        le=0.5,
        description="Share of each split drawn from the efficiency family (corecode/data/efficiency.py: a naive "
        "quadratic and an efficient linear solution, both recorded, tag `efficiency`), after the split's other "
        "problems, on their own RNG stream; with `steps` set, only where it lists `efficiency`. 0 = none. A split "
        "whose share of the family's chains runs out (about 900 train, 130 test problems) takes other problems "
        "for the rest, and build-data says so.",
    )
    efficiency_large_n: int = Field(
        3000,
        ge=10,
        le=20000,
        description="Length of the efficiency family's large test lists: the naive solution takes tens to hundreds "
        "of milliseconds on them, the efficient one under one.",
    )
    efficiency_memory_frac: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the efficiency family's problems (of each split) drawn from its memory-heavy steps "
        "(corecode/data/efficiency.py MEMORY_HEAVY: both solutions visit every pair of positions, the naive one "
        "first builds the list of all pairs' values, tens of MiB on the large tests, at about the efficient one's "
        "time), after the runtime-heavy ones, on their own RNG stream; 0 = none (the family as without this key, "
        "byte for byte).",
    )
    efficiency_memory_large_n: int = Field(
        1500,
        ge=10,
        le=5000,
        description="Length of the large test lists of the efficiency family's memory-heavy steps (quadratic time in "
        "both solutions): the naive solution's list of all pairs then takes tens of MiB, both run in a few hundred "
        "milliseconds.",
    )
    efficiency_large_tests: int = Field(
        2, ge=0, le=5, description="Large test lists per efficiency problem (none in the train split, never run)."
    )
    efficiency_sft_naive_frac: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of the efficiency family whose Coder and single SFT rows show the naive solution (by a "
        "hash of the task id), as human-written training code often is; the rest show the efficient one.",
    )

    @model_validator(mode="after")
    def _check(self) -> CompositeParams:
        if self.train_max_steps < self.min_steps:
            raise ValueError("train_max_steps must be >= min_steps")
        if self.test_max_steps < self.train_max_steps:
            raise ValueError("test_max_steps must be >= train_max_steps")
        if self.rl_longer_frac and self.test_max_steps <= self.train_max_steps:
            raise ValueError("rl_longer_frac > 0 needs test_max_steps > train_max_steps (the longer chains' lengths)")
        if self.test_longer_frac + self.test_unseen_chain_frac > 1.0:
            raise ValueError("test_longer_frac + test_unseen_chain_frac must be <= 1")
        if not self.entry_point.isidentifier():
            raise ValueError(f"entry_point {self.entry_point!r} is not a Python identifier")
        return self


class SourceSpec(BaseModel):
    """One external dataset: which loader reads it and from where (a hub id or a local file/dir)."""

    model_config = ConfigDict(extra="forbid")

    loader: Literal[
        "mbpp", "evalplus", "livecodebench", "livebench", "code_contests", "apps", "codeforces", "humaneval"
    ] = Field(description="Which schema the source is in.")
    path: str = Field(description="Hub dataset id or local JSONL/Parquet file or save_to_disk directory.")
    split: str | None = Field(None, description="Split of the hub/disk dataset to read (null: the loader's default).")
    name: str | None = Field(None, description="Hub config name (e.g. 'sanitized' for MBPP).")
    limit: int | None = Field(None, ge=1, description="Read at most this many rows.")
    role: Literal["train", "eval"] = Field(
        "train", description="train: goes into the SFT sets; eval: decontaminate against."
    )
    rl_fraction: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="A train source in data.train_sources: the fraction of its problems kept for GRPO only "
        "(data/processed/sources/<name>_rl.jsonl, no SFT row), picked by a hash of task_id and seed; the rest give "
        "SFT rows. 1.0: all for GRPO (a source without reference solutions and no teacher gives no SFT row anyway).",
    )


class DecontamParams(BaseModel):
    """Word n-gram decontamination of training items against evaluation problems."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="Drop training items that overlap an evaluation problem.")
    n: int = Field(10, ge=3, description="Word n-gram size.")
    threshold: float = Field(
        0.5, gt=0.0, le=1.0, description="Drop when this fraction of an item's n-grams occurs in an eval problem."
    )
    against: list[str] = Field(
        default_factory=lambda: ["humaneval"],
        description="Benchmarks (load_benchmark names) plus eval-role sources to decontaminate against.",
    )


class SourceLimits(BaseModel):
    """What one external training source's data may look like: build-data keeps only what fits, the
    great-expectations suites of validate-data check it."""

    model_config = ConfigDict(extra="forbid")

    max_prompt_chars: int = Field(ge=1, description="Longest problem statement and SFT prompt, in characters.")
    max_completion_chars: int = Field(ge=1, description="Longest SFT completion (plan or code), in characters.")
    min_tests: int = Field(1, ge=0, description="Fewest tests (test cases, or check-code asserts) an RL problem has.")
    max_tests: int = Field(ge=1, description="Most tests an RL problem keeps (the first ones; the rest are cut).")
    max_test_chars: int = Field(
        ge=1, description="Longest test (input plus expected output, in characters) an RL problem keeps; longer: cut."
    )


def _source_limits() -> dict[str, SourceLimits]:
    # Contest statements (with input/output sections and examples) run to several thousand characters; APPS,
    # CodeContests and Codeforces have tens to hundreds of tests per problem, some of them megabytes long.
    return {
        "mbpp": SourceLimits(max_prompt_chars=3000, max_completion_chars=3000, max_tests=20, max_test_chars=2000),
        "apps": SourceLimits(max_prompt_chars=8000, max_completion_chars=6000, max_tests=50, max_test_chars=20000),
        "code_contests": SourceLimits(
            max_prompt_chars=8000, max_completion_chars=8000, max_tests=50, max_test_chars=20000
        ),
        "codeforces": SourceLimits(
            max_prompt_chars=10000, max_completion_chars=8000, max_tests=50, max_test_chars=20000
        ),
    }


class ValidationParams(BaseModel):
    """Bounds the great-expectations suites check (corecode validate-data)."""

    model_config = ConfigDict(extra="forbid")

    max_prompt_chars: int = Field(2000, ge=1, description="Longest allowed SFT prompt of composite, in characters.")
    max_completion_chars: int = Field(
        2000, ge=1, description="Longest allowed SFT completion of composite, in characters."
    )
    per_source: dict[str, SourceLimits] = Field(
        default_factory=_source_limits,
        description="Limits of the external training sources, by loader (mbpp, apps, code_contests, codeforces); "
        "a source missing here gets composite's prompt/completion limits and no test limits.",
    )
    min_rows: int = Field(1, ge=1, description="Fewest rows any validated dataset/split may have.")
    datasets: list[str] = Field(
        default_factory=lambda: [
            "planner",
            "coder",
            "single",
            "composite_train",
            "composite_val",
            "composite_test",
            "composite_dev",
            "composite_rl",
        ],
        description="Datasets `corecode validate-data` checks by default (names of data/processed/<name>.jsonl); the "
        "RL files of data.train_sources (sources/<name>_rl.jsonl, dataset <name>_rl) are checked too.",
    )

    def limits(self, source: str) -> SourceLimits:
        """The limits of ``source`` (a loader name, the ``source`` of its problems); see ``per_source``."""
        if source in self.per_source:
            return self.per_source[source]
        return SourceLimits(
            max_prompt_chars=self.max_prompt_chars,
            max_completion_chars=self.max_completion_chars,
            max_tests=10**9,
            max_test_chars=10**12,
        )


class TeacherParams(BaseModel):
    """Teacher plans for training sources without gold plans (corecode/data/teacher.py); off by default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="Annotate plans with a teacher model during build-data.")
    sources: list[str] = Field(default_factory=list, description="Keys of data.sources whose problems get plans.")
    backend: Literal["openai", "transformers"] = Field("openai", description="HTTP endpoint or local HF model.")
    base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint (backend=openai).")
    model: str = Field("", description="Model name at the endpoint, or HF path/id (backend=transformers).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key, if any.")
    chat: bool = Field(True, description="Use /chat/completions (else /completions).")
    n_candidates: int = Field(4, ge=1, description="Plans sampled per problem before rejection.")
    temperature: float = Field(0.7, ge=0.0, description="Teacher sampling temperature.")
    max_new_tokens: int = Field(256, ge=1, description="Longest teacher plan, in tokens.")
    requests_per_second: float | None = Field(2.0, gt=0, description="HTTP rate limit (null: none).")
    max_retries: int = Field(5, ge=0, description="HTTP retries with exponential backoff on 429/5xx/timeouts.")
    cache: str = Field("data/interim/teacher_cache.jsonl", description="Completion cache; reruns call no teacher.")


class DataParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    composite: CompositeParams = Field(default_factory=CompositeParams, description="The embedded task suite.")
    train_sources: list[str] = Field(
        default_factory=lambda: ["composite"],
        description="Sources the Planner/Coder/single SFT sets are built from: 'composite' and/or keys of `sources`.",
    )
    sources: dict[str, SourceSpec] = Field(
        default_factory=dict, description="External datasets by name (MBPP, APPS, ...); empty in the embedded default."
    )
    decontam: DecontamParams = Field(default_factory=DecontamParams, description="Decontamination settings.")
    validation: ValidationParams = Field(default_factory=ValidationParams, description="Validation bounds.")
    teacher: TeacherParams = Field(default_factory=TeacherParams, description="Teacher plans (off by default).")

    @model_validator(mode="after")
    def _check_sources(self) -> DataParams:
        for name in self.train_sources:
            if name != "composite" and name not in self.sources:
                raise ValueError(f"train_sources: {name!r} is neither 'composite' nor a key of data.sources")
            if name != "composite" and self.sources[name].role == "eval":
                raise ValueError(f"train_sources: {name!r} has role 'eval' in data.sources (an evaluation set)")
        return self
