"""Teacher plans through a real OpenAI-compatible HTTP server on 127.0.0.1, a real sandbox, and the disk cache.

The server is scripted (no model weights are reachable here): for a teacher prompt it returns one good and one
useless plan; for a coder prompt it returns correct code only when the plan says so. It answers the very first request
with 429 to exercise the client's retry/backoff.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from corecode.data.loaders.mbpp import load_mbpp
from corecode.data.teacher import CompletionCache, annotate_plans
from corecode.generation.base import SamplingParams


def _composite(**kw):
    """Test-sized suite: the config defaults are the embedded default's (1000 test problems and an rl split)."""
    from corecode.data.config import CompositeParams

    return CompositeParams(
        **{**dict(n_test=300, n_rl=0, test_longer_frac=0.5, test_unseen_chain_frac=0.0, phrasing_variety=3), **kw}
    )


FIX = Path(__file__).resolve().parents[1] / "fixtures" / "data"
GOOD = "<plan>\n1. Return four times the side length.\n</plan>"
BAD = "<plan>\n1. Return zero.\n</plan>"


class _Handler(BaseHTTPRequestHandler):
    calls: list = []
    refused_once = [False]

    def log_message(self, *a):  # quiet
        pass

    def _send(self, code: int, body: dict, headers: dict | None = None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.refused_once[0]:
            self.refused_once[0] = True
            return self._send(429, {"error": "slow down"}, {"Retry-After": "0"})
        prompt = req["prompt"]
        self.calls.append(prompt)
        if "### Reference solution" in prompt:  # teacher
            texts = [GOOD, BAD] if "square" in prompt else [BAD, BAD]
        elif "four times" in prompt:  # coder with the good plan
            texts = ["```python\ndef square_perimeter(a):\n    return 4 * a\n```"]
        else:
            texts = ["```python\ndef f(*a):\n    return 0\n```"]
        texts = (texts * req["n"])[: req["n"]]
        self._send(
            200,
            {
                "choices": [{"index": i, "text": t, "finish_reason": "stop"} for i, t in enumerate(texts)],
                "usage": {"completion_tokens": 10 * len(texts)},
            },
        )


@pytest.fixture()
def server():
    _Handler.calls = []
    _Handler.refused_once = [False]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_teacher_plans_rejection_sampled_and_cached(server, tmp_path):
    from corecode.generation.openai_http import OpenAIGenerator
    from corecode.sandbox.isolation import SandboxUnavailable
    from corecode.sandbox.sandbox import Sandbox

    problems = [p for p in load_mbpp(FIX / "mbpp.jsonl") if p.task_id in ("mbpp/3", "mbpp/17")]
    gen = OpenAIGenerator(server, "scripted", backoff_s=0.01, requests_per_second=50)
    cache = CompletionCache(tmp_path / "teacher_cache.jsonl")
    sampling = SamplingParams(n=2, temperature=0.7, max_new_tokens=64)
    try:
        with Sandbox() as sb:
            res = annotate_plans(problems, gen, gen, sb, cache, "scripted", "scripted", teacher_sampling=sampling)
            first_calls = len(_Handler.calls)
            again = annotate_plans(
                problems,
                gen,
                gen,
                sb,
                CompletionCache(tmp_path / "teacher_cache.jsonl"),
                "scripted",
                "scripted",
                teacher_sampling=sampling,
            )
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable: {e}")
    finally:
        gen.close()
    by_id = {r.task_id: r for r in res}
    assert by_id["mbpp/17"].plan == "1. Return four times the side length."
    assert by_id["mbpp/17"].n_candidates == 2 and by_id["mbpp/17"].pass_rate == 0.5
    assert by_id["mbpp/3"].plan is None and by_id["mbpp/3"].pass_rate == 0.0
    assert _Handler.refused_once[0]  # the 429 was retried
    assert first_calls == 2 + 3  # 2 teacher prompts; 3 distinct coder prompts (mbpp/3 got the same plan twice)
    assert len(_Handler.calls) == first_calls  # the rerun came entirely from the cache
    assert [(r.plan, r.n_passed) for r in again] == [(r.plan, r.n_passed) for r in res]


def test_build_data_with_teacher_adds_verified_plans(server, tmp_path):
    from corecode.data.build import build_data
    from corecode.data.config import DataParams, SourceSpec, TeacherParams
    from corecode.data.io import read_jsonl
    from corecode.sandbox.isolation import SandboxUnavailable

    data = DataParams(
        composite=_composite(n_train=10, n_val=2, n_test=4),
        train_sources=["composite", "mbpp_fx"],
        sources={"mbpp_fx": SourceSpec(loader="mbpp", path=str(FIX / "mbpp.jsonl"), rl_fraction=0.0)},
        teacher=TeacherParams(
            enabled=True,
            sources=["mbpp_fx"],
            base_url=server,
            model="scripted",
            chat=False,
            n_candidates=2,
            requests_per_second=50,
            cache=str(tmp_path / "cache.jsonl"),
        ),
    )
    try:
        s = build_data(data, 0, tmp_path / "p", tmp_path / "r", progress=False)
    except SandboxUnavailable as e:
        pytest.skip(f"sandbox unavailable: {e}")
    assert s.teacher == {"mbpp": {"problems": 3, "planned": 1, "mean_pass_rate": round(0.5 / 3, 4)}}
    planner = [r for r in read_jsonl(tmp_path / "p" / "planner.jsonl") if r["source"] == "mbpp"]
    assert [r["task_id"] for r in planner] == ["mbpp/17"]
    assert planner[0]["completion"] == GOOD and "teacher-plan(scripted,pass_rate=0.50)" in planner[0]["provenance"]
    assert "## Teacher plans" in (tmp_path / "r" / "data_card.md").read_text()
