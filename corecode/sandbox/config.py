"""Parameters of the `sandbox` section of params.yaml (defaults: a 2-core CPU box, isolation on)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# cache_dir's value for corecode's user cache directory (resolved by corecode.sandbox.prepare.PrepareCache).
USER_CACHE = "user-cache"


class SandboxParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workers: int = Field(2, ge=1, le=256, description="Pre-started sandboxed interpreters (one per core is right).")
    time_limit_s: float = Field(
        3.0, gt=0, description="Wall-clock limit per test case (a problem's own time_limit_s overrides it)."
    )
    sample_time_limit_s: float = Field(
        20.0, gt=0, description="Wall-clock cap for one sample over all its tests (checks with 100s of calls)."
    )
    memory_limit_mb: int = Field(
        512, ge=64, description="Address-space limit of the candidate process (a problem's memory_limit_mb overrides)."
    )
    max_output_bytes: int = Field(
        1_000_000, ge=1024, description="Most bytes of results / stdout one sample may send back; more is a failure."
    )
    max_file_size_mb: int = Field(16, ge=0, description="Largest file the candidate may write (RLIMIT_FSIZE).")
    scratch_size_mb: int = Field(64, ge=1, description="Size of the private tmpfs scratch directory (bwrap only).")
    max_processes: int = Field(16, ge=1, description="Processes/threads the sandbox user may have (RLIMIT_NPROC).")
    max_open_files: int = Field(64, ge=16, description="Open file descriptors of the candidate (RLIMIT_NOFILE).")
    isolation: Literal["bwrap", "unshare", "none"] = Field(
        "bwrap",
        description="bwrap: user/pid/net/mount namespaces, only the interpreter visible (default). unshare: "
        "namespaces but the host filesystem stays readable. none: rlimits only, for debugging; NOT safe.",
    )
    python: str = Field(
        "/usr/bin/python3",
        description="Interpreter run inside the sandbox (stdlib only, world-readable; its lib dirs are bound in).",
    )
    uid_base: int = Field(
        61000,
        ge=1000,
        description="When started as root, worker i runs as host uid uid_base + 256*b + i (never root), b the "
        "pool's own block of uids (isolation.claim_uid_block).",
    )
    cgroup: bool = Field(
        True,
        description="Also cap each worker's whole jail with a memory cgroup (memory_limit_mb + scratch + 128 MB) "
        "where the host allows one (root); rlimits alone bound each process, not their sum.",
    )
    early_stop: bool = Field(False, description="Default of stop_on_first_failure: stop a sample at its first failure.")
    strict_return_types: bool = Field(
        True,
        description="Return values must be plain built-in data (int, str, list, dict, ...; stdlib Counter/OrderedDict/"
        "defaultdict count as dict, namedtuples as tuple); others fail.",
    )
    float_tol: float = Field(
        1e-6, ge=0, description="Tolerance used to grade single calls of check()-style problems that set none."
    )
    seed: int = Field(0, description="Seed of `random` before a trusted check() is recorded or replayed.")
    judge_timeout_s: float = Field(30.0, gt=0, description="Limit for trusted recording / replay of one problem.")
    cache_dir: str | None = Field(
        USER_CACHE,
        description="Where materialised tests (expected outputs from reference solutions) are cached: "
        f"{USER_CACHE} = corecode's user cache directory (corecode.paths.user_cache_dir: $CORECODE_CACHE_DIR, else "
        "$XDG_CACHE_HOME/corecode, ~/.cache/corecode on Linux) + /sandbox; a directory; null = memory only.",
    )
