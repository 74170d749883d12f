"""Decontamination: n-gram overlap with evaluation problems drops training items, and the drops are reported."""

from __future__ import annotations

from pathlib import Path

from corecode.data.build import build_data
from corecode.data.composite import generate_composite
from corecode.data.config import CompositeParams, DataParams, DecontamParams, SourceSpec
from corecode.data.decontam import decontaminate, ngrams
from corecode.data.io import read_jsonl
from corecode.data.loaders.humaneval import load_humaneval


def _composite(**kw) -> CompositeParams:
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split)."""
    return CompositeParams(
        **{**dict(n_test=300, n_rl=0, test_longer_frac=0.5, test_unseen_chain_frac=0.0, phrasing_variety=3), **kw}
    )


FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"


def test_ngrams():
    assert ngrams("The cat, the HAT!", 2) == {("the", "cat"), ("cat", "the"), ("the", "hat")}
    assert ngrams("two words", 5) == {("two", "words")}
    assert ngrams("", 3) == set()


def test_copy_of_eval_problem_is_dropped_composite_kept():
    he = load_humaneval()
    copy = he[10].model_copy(update={"task_id": "train/copy", "source": "scraped", "split": "train"})
    light = he[11].model_copy(
        update={
            "task_id": "train/light",
            "prompt": "def f(x):\n    'unrelated words here'\n",
            "reference_solution": "def f(x):\n    return x\n",
        }
    )
    composite = generate_composite(_composite(n_train=200, n_val=0, n_test=0), seed=0)["train"]
    rep = decontaminate(composite + [copy, light], he, n=10, threshold=0.5)
    assert [p.task_id for p, _, _ in rep.dropped] == ["train/copy"]
    assert rep.dropped[0][2] == 1.0 and len(rep.kept) == 201
    # stricter threshold, same result for composite; looser n-gram size must not drop composite either
    assert decontaminate(composite, he, n=6, threshold=0.3).dropped == []


def test_build_with_external_source_reports_drops(tmp_path):
    data = DataParams(
        composite=_composite(n_train=30, n_val=5, n_test=8),
        train_sources=["composite", "mbpp_fx"],
        sources={"mbpp_fx": SourceSpec(loader="mbpp", path=str(FIX / "mbpp.jsonl"), split="train", rl_fraction=0.0)},
        decontam=DecontamParams(n=8, threshold=0.5),
    )
    s = build_data(data, 0, tmp_path / "p", tmp_path / "r", progress=False)
    assert s.dropped == {"composite": 0, "mbpp": 1} and s.dropped_ids == ["mbpp/9001"]
    assert s.sources["mbpp_fx"] == {
        "loaded": 4,
        "decontaminated": 1,
        "rl": 0,
        "rl_unusable": 0,
        "sft_problems": 3,
        "sft_rows_over_limits": 0,
    }
    single = read_jsonl(tmp_path / "p" / "single.jsonl")
    assert sum(r["source"] == "mbpp" for r in single) == 3  # 4 rows, 1 contaminated
    assert all(r["provenance"].startswith("mbpp_fx:mbpp:") for r in single if r["source"] == "mbpp")
    assert not any(r["source"] == "mbpp" for r in read_jsonl(tmp_path / "p" / "planner.jsonl"))  # no gold plans
    card = (tmp_path / "r" / "data_card.md").read_text()
    assert "| mbpp | 1 |" in card and "mbpp/9001" in card and "| single | train | mbpp | 3 |" in card
    off = build_data(
        data.model_copy(update={"decontam": DecontamParams(enabled=False)}),
        0,
        tmp_path / "p2",
        tmp_path / "r2",
        progress=False,
    )
    assert off.dropped == {"composite": 0, "mbpp": 0}
