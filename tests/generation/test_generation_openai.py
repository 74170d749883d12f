"""OpenAIGenerator against real servers on 127.0.0.1: `corecode serve` on the tiny checkpoint, and a small scripted
http.server for retry/backoff/rate-limit behaviour (status codes a real model server only returns under load)."""

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from conftest import F_BODY, G_BODY

from corecode.generation.base import SamplingParams
from corecode.generation.config import GenerationParams
from corecode.generation.factory import make_generator
from corecode.generation.hf import TransformersGenerator
from corecode.generation.openai_http import OpenAIError, OpenAIGenerator

GREEDY = SamplingParams(max_new_tokens=40, temperature=0)


@pytest.fixture(scope="module")
def served(tiny_ckpt, free_port):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "corecode.cli",
            "serve",
            "--model",
            str(tiny_ckpt),
            "--port",
            str(port),
            "--name",
            "tiny",
            "--max-tokens",
            "40",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"corecode serve exited {proc.returncode}: {proc.stdout.read()}")
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("corecode serve did not come up in 180 s")
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def test_completions_match_local_backend(served, tiny_ckpt):
    client = OpenAIGenerator(served)  # model name discovered from /v1/models
    assert client.model == "tiny"
    remote = client.generate(["def f(x):\n", "def g(y):\n"], GREEDY)
    assert [r[0].text for r in remote] == [F_BODY, G_BODY]
    local = TransformersGenerator(str(tiny_ckpt)).generate(["def f(x):\n"], GREEDY)[0][0]
    assert remote[0][0].num_tokens == local.num_tokens  # from the server's usage
    assert remote[0][0].finish_reason == "stop" and remote[0][0].token_ids is None


def test_n_samples_stop_and_length(served):
    client = OpenAIGenerator(served, "tiny")
    out = client.generate(["def g(y):\n"], SamplingParams(n=3, max_new_tokens=40, temperature=0, stop=["return"]))
    assert [c.text for c in out[0]] == ["    if y:\n        "] * 3
    (c,) = client.generate(["def g(y):\n"], SamplingParams(max_new_tokens=2, temperature=0))[0]
    assert c.finish_reason == "length" and c.num_tokens == 2


def test_raw_http_shape_and_usage(served):
    r = httpx.post(
        f"{served}/completions",
        json={"prompt": ["def f(x):\n", "def g(y):\n"], "n": 2, "temperature": 0, "max_tokens": 40},
    ).json()
    assert r["object"] == "text_completion" and [c["index"] for c in r["choices"]] == [0, 1, 2, 3]
    assert [c["text"] for c in r["choices"]] == [F_BODY, F_BODY, G_BODY, G_BODY]
    assert r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] > 0
    assert httpx.post(f"{served}/completions", json={"prompt": "x", "model": "other"}).status_code == 404
    assert httpx.post(f"{served}/completions", json={"prompt": "x", "n": 0}).status_code == 422


def test_chat_completions(served):
    # the embedded tokenizer has no chat template: the server feeds the message contents as the prompt
    client = OpenAIGenerator(served, "tiny", chat=True)
    (c,) = client.generate(["def f(x):\n"], GREEDY)[0]
    assert c.text == F_BODY and c.num_tokens > 0


def test_wrong_model_is_not_retried(served):
    client = OpenAIGenerator(served, "gpt-9", backoff_s=5.0)
    t = time.time()
    with pytest.raises(OpenAIError, match="HTTP 404"):
        client.generate(["x"], GREEDY)
    assert time.time() - t < 5.0


def test_make_generator_backends(served, tiny_ckpt):
    g = make_generator(GenerationParams(backend="openai", base_url=served), None)
    assert isinstance(g, OpenAIGenerator) and g.model == "tiny"
    t = make_generator(GenerationParams(max_batch_size=3), str(tiny_ckpt))
    assert isinstance(t, TransformersGenerator) and t.max_batch_size == 3
    with pytest.raises(ImportError, match=r"pip install corecode\[vllm\]"):
        make_generator(GenerationParams(backend="vllm"), str(tiny_ckpt))


# ------------------------------------------------------------------------------------------ scripted flaky server
class _Scripted(BaseHTTPRequestHandler):
    script: list = []  # (status, headers, delay_s) per request; the last entry repeats
    times: list = []

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).times.append(time.monotonic())
        status, headers, delay = self.script[min(len(self.times) - 1, len(self.script) - 1)]
        time.sleep(delay)
        body = json.dumps(
            {
                "choices": [{"index": 0, "text": "ok", "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 5},
            }
            if status == 200
            else {"error": {"message": "busy"}}
        ).encode()
        try:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out first

    def log_message(self, *args):
        pass


@pytest.fixture()
def scripted():
    handler = type("H", (_Scripted,), {"script": [], "times": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_retries_with_backoff_then_success(scripted):
    handler, url = scripted
    handler.script = [(429, {}, 0), (503, {}, 0), (200, {}, 0)]
    (c,) = OpenAIGenerator(url, "m", backoff_s=0.2).generate(["p"], SamplingParams())[0]
    assert (c.text, c.num_tokens) == ("ok", 5)
    gaps = [b - a for a, b in zip(handler.times, handler.times[1:])]
    assert len(handler.times) == 3 and gaps[0] >= 0.2 and gaps[1] >= 0.4  # exponential: 0.2 s, then 0.4 s


def test_retry_after_header_and_giving_up(scripted):
    handler, url = scripted
    handler.script = [(429, {"Retry-After": "0.5"}, 0)]
    with pytest.raises(OpenAIError, match=r"giving up after 3 attempts \(HTTP 429\)"):
        OpenAIGenerator(url, "m", backoff_s=0.01, max_retries=2).generate(["p"], SamplingParams())
    assert len(handler.times) == 3 and handler.times[1] - handler.times[0] >= 0.5


def test_client_errors_are_not_retried(scripted):
    handler, url = scripted
    handler.script = [(400, {}, 0)]
    with pytest.raises(OpenAIError, match="HTTP 400"):
        OpenAIGenerator(url, "m", backoff_s=0.01).generate(["p"], SamplingParams())
    assert len(handler.times) == 1


def test_timeouts_are_retried(scripted):
    handler, url = scripted
    handler.script = [(200, {}, 1.0), (200, {}, 0)]
    (c,) = OpenAIGenerator(url, "m", timeout_s=0.3, backoff_s=0.01).generate(["p"], SamplingParams())[0]
    assert c.text == "ok" and len(handler.times) == 2


def test_rate_limit_spaces_requests(scripted):
    handler, url = scripted
    handler.script = [(200, {}, 0)]
    out = OpenAIGenerator(url, "m", requests_per_second=10, max_concurrency=4).generate(["p"] * 5, SamplingParams())
    assert len(out) == 5
    assert handler.times[-1] - handler.times[0] >= 0.35  # 5 starts at 10/s: >= 0.4 s apart end to end (slack)
