"""Teacher plans with ``data.teacher.backend: transformers``: a real local HF checkpoint, real sandbox, disk cache.

No hub model is reachable here, so the teacher is a tiny checkpoint (``make_tiny_checkpoint``) trained to memorise, for
two MBPP problems, the plan it writes for ``teacher_prompt(problem)`` and the code it writes (as the verifying Coder)
for ``coder_prompt(problem, plan)``. One plan leads to correct code (accepted by the sandbox), the other to wrong
code (rejected); greedy decoding keeps it deterministic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from corecode.agents.prompts import coder_prompt, format_code, format_plan
from corecode.data.loaders.mbpp import load_mbpp
from corecode.data.teacher import CompletionCache, annotate_plans, teacher_generator, teacher_prompt
from corecode.generation.base import SamplingParams

pytestmark = pytest.mark.usefixtures("one_thread")


def _composite(**kw):
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split)."""
    from corecode.data.config import CompositeParams

    return CompositeParams(
        **{**dict(n_test=300, n_rl=0, test_longer_frac=0.5, test_unseen_chain_frac=0.0, phrasing_variety=3), **kw}
    )


FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"
GOOD_PLAN = "1. Return four times the side length."
GOOD_CODE = "def square_perimeter(a):\n    return 4 * a"
BAD_PLAN = "1. Return x unchanged."
BAD_CODE = "def triple(x):\n    return x"
# A second MBPP row in the dataset's schema; its teacher plan leads the Coder to wrong code.
TRIPLE_ROW = {
    "task_id": 9102,
    "text": "Write a function to triple a number.",
    "code": "def triple(x):\n    return 3 * x",
    "test_list": ["assert triple(2) == 6", "assert triple(-4) == -12"],
    "test_setup_code": "",
    "challenge_test_list": [],
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(mbpp file, problems by id, checkpoint dir): the checkpoint memorises teacher and coder completions."""
    from corecode.models.testing import make_tiny_checkpoint

    root = tmp_path_factory.mktemp("teacher_hf")
    rows = [json.loads(line) for line in (FIX / "mbpp.jsonl").read_text().splitlines() if line.strip()]
    mbpp = root / "mbpp.jsonl"
    mbpp.write_text("".join(json.dumps(r) + "\n" for r in [r for r in rows if r["task_id"] == 17] + [TRIPLE_ROW]))
    probs = {p.task_id: p for p in load_mbpp(mbpp)}
    good, bad = probs["mbpp/17"], probs["mbpp/9102"]
    texts = [
        teacher_prompt(good) + format_plan(GOOD_PLAN),
        teacher_prompt(bad) + format_plan(BAD_PLAN),
        coder_prompt(good, GOOD_PLAN) + format_code(GOOD_CODE),
        coder_prompt(bad, BAD_PLAN) + format_code(BAD_CODE),
    ]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices on a shared 2-core machine: one thread is faster
    try:
        ckpt = make_tiny_checkpoint(root / "teacher", texts, train_steps=80)
    finally:
        torch.set_num_threads(threads)
    return mbpp, probs, ckpt


@pytest.fixture()
def generate_calls(monkeypatch):
    """Counts real ``TransformersGenerator`` constructions and ``generate`` calls (they still run)."""
    from corecode.generation.hf import TransformersGenerator

    calls = {"init": 0, "generate": 0}
    init, generate = TransformersGenerator.__init__, TransformersGenerator.generate

    def counting_init(self, *a, **kw):
        calls["init"] += 1
        init(self, *a, **kw)

    def counting_generate(self, *a, **kw):
        calls["generate"] += 1
        return generate(self, *a, **kw)

    monkeypatch.setattr(TransformersGenerator, "__init__", counting_init)
    monkeypatch.setattr(TransformersGenerator, "generate", counting_generate)
    return calls


def _params(ckpt, cache, **kw):
    from corecode.data.config import TeacherParams

    return TeacherParams(
        enabled=True,
        backend="transformers",
        model=str(ckpt),
        chat=False,
        n_candidates=2,
        temperature=0.0,
        max_new_tokens=48,
        cache=str(cache),
        **kw,
    )


def test_annotate_plans_with_local_hf_teacher(setup, tmp_path, generate_calls):
    from corecode.sandbox.isolation import SandboxUnavailable
    from corecode.sandbox.sandbox import Sandbox

    _, probs, ckpt = setup
    problems = [probs["mbpp/17"], probs["mbpp/9102"]]
    cfg = _params(ckpt, tmp_path / "cache.jsonl")
    sampling = SamplingParams(n=2, temperature=0.0, max_new_tokens=48)
    gen, model = teacher_generator(cfg)
    assert model == str(ckpt) and generate_calls["init"] == 0  # loaded on first use only
    try:
        with Sandbox() as sb:
            res = annotate_plans(
                problems, gen, gen, sb, CompletionCache(cfg.cache), model, model, teacher_sampling=sampling
            )
            assert generate_calls == {"init": 1, "generate": 2}  # one teacher batch, one coder batch
            n_lines = len(Path(cfg.cache).read_text().splitlines())
            gen2, _ = teacher_generator(cfg)
            again = annotate_plans(
                problems, gen2, gen2, sb, CompletionCache(cfg.cache), model, model, teacher_sampling=sampling
            )
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable: {e}")
    by_id = {r.task_id: r for r in res}
    assert by_id["mbpp/17"].plan == GOOD_PLAN
    assert (by_id["mbpp/17"].n_candidates, by_id["mbpp/17"].n_passed, by_id["mbpp/17"].pass_rate) == (2, 2, 1.0)
    assert by_id["mbpp/9102"].plan is None  # the plan extracted fine, but its code failed the tests
    assert (by_id["mbpp/9102"].n_candidates, by_id["mbpp/9102"].pass_rate) == (2, 0.0)
    # The rerun came from the cache: no model loaded, nothing generated, same results.
    assert generate_calls == {"init": 1, "generate": 2}
    assert [(r.plan, r.n_passed) for r in again] == [(r.plan, r.n_passed) for r in res]
    cached = [json.loads(line) for line in Path(cfg.cache).read_text().splitlines()]
    assert len(cached) == n_lines  # the rerun wrote nothing
    assert len({row["key"] for row in cached}) == 4  # 2 teacher prompts + 2 distinct coder prompts
    assert format_plan(BAD_PLAN) in {t for row in cached for t in row["texts"]}


def test_build_data_with_transformers_teacher(setup, tmp_path, generate_calls):
    from corecode.data.build import build_data
    from corecode.data.config import DataParams, SourceSpec
    from corecode.data.io import read_jsonl
    from corecode.sandbox.isolation import SandboxUnavailable

    mbpp, _, ckpt = setup
    data = DataParams(
        composite=_composite(n_train=10, n_val=2, n_test=4),
        train_sources=["composite", "mbpp_hf"],
        sources={"mbpp_hf": SourceSpec(loader="mbpp", path=str(mbpp), rl_fraction=0.0)},
        teacher=_params(ckpt, tmp_path / "cache.jsonl", sources=["mbpp_hf"]),
    )
    try:
        first = build_data(data, 0, tmp_path / "p1", tmp_path / "r1", progress=False)
        assert generate_calls == {"init": 1, "generate": 2}
        again = build_data(data, 0, tmp_path / "p2", tmp_path / "r2", progress=False)
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable: {e}")
    assert generate_calls == {"init": 1, "generate": 2}  # the rerun neither loaded the teacher nor generated
    expected = {"mbpp": {"problems": 2, "planned": 1, "mean_pass_rate": 0.5}}
    assert first.teacher == expected and again.teacher == expected
    for out in ("p1", "p2"):
        planner = [r for r in read_jsonl(tmp_path / out / "planner.jsonl") if r["source"] == "mbpp"]
        assert [r["task_id"] for r in planner] == ["mbpp/17"]
        assert planner[0]["completion"] == format_plan(GOOD_PLAN)
        assert f"teacher-plan({ckpt},pass_rate=1.00)" in planner[0]["provenance"]


def test_transformers_teacher_needs_a_model():
    from corecode.data.config import TeacherParams

    with pytest.raises(ValueError, match="data.teacher.model"):
        teacher_generator(TeacherParams(enabled=True, backend="transformers", model=""))
