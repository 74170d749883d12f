"""``OpenAIGenerator``: any OpenAI-compatible endpoint (vllm serve, transformers serve, corecode serve, hosted APIs).

Plain prompts go to ``/v1/completions``; with ``chat=True`` each prompt is one user message to
``/v1/chat/completions``. One request per prompt asks for ``n`` samples; token counts come from ``usage`` (split
evenly over the samples when the server reports only a total), ``token_ids`` are ``None`` (HTTP APIs do not return
them). Requests run ``max_concurrency`` at a time, at most ``requests_per_second``, and are retried with exponential
backoff (honouring ``Retry-After``) on 429, 5xx, timeouts and connection errors.

Retries and rate limiting are hand-written (~30 lines): httpx retries only failed connects, not status codes, and no
retry/rate-limit library (tenacity, openai) is a project dependency.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from corecode.generation.base import Completion, SamplingParams

log = logging.getLogger(__name__)
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIError(RuntimeError):
    """The endpoint refused a request for good (4xx other than 408/409/429) or retries ran out."""


class _RateLimiter:
    """At most ``rate`` request starts per second across threads (evenly spaced)."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self.next_at = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_at)
            self.next_at = start + self.interval
        time.sleep(max(0.0, start - now))


class OpenAIGenerator:
    """Generator over an OpenAI-compatible endpoint; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        model: str = "",
        api_key: str | None = None,
        *,
        chat: bool = False,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        requests_per_second: float | None = None,
        max_concurrency: int = 8,
    ):
        self.base_url = base_url.rstrip("/")
        self.chat = chat
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.max_concurrency = max_concurrency
        self.limiter = _RateLimiter(requests_per_second)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self.model = model or self.list_models()[0]

    def close(self) -> None:
        self.client.close()

    def list_models(self) -> list[str]:
        data = self._request("GET", "/models")["data"]
        if not data:
            raise OpenAIError(f"{self.base_url}/models lists no model; set generation.openai_model")
        return [m["id"] for m in data]

    # ---------------------------------------------------------------------------------------------------------- http
    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        """One call with retries: exponential backoff from ``backoff_s``, ``Retry-After`` when the server sends it."""
        url = f"{self.base_url}{path}"
        for attempt in range(self.max_retries + 1):
            self.limiter.wait()
            delay = self.backoff_s * 2**attempt
            try:
                resp = self.client.request(method, path, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as e:
                reason = f"{type(e).__name__}: {e}"
            else:
                if resp.status_code < 400:
                    return resp.json()
                if resp.status_code not in RETRY_STATUS:
                    raise OpenAIError(f"{method} {url}: HTTP {resp.status_code}: {resp.text[:500]}")
                reason = f"HTTP {resp.status_code}"
                retry_after = resp.headers.get("retry-after")
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    delay = max(delay, float(retry_after))
            if attempt == self.max_retries:
                raise OpenAIError(f"{method} {url}: giving up after {attempt + 1} attempts ({reason})")
            log.warning("%s %s: %s; retry %d/%d in %.1fs", method, url, reason, attempt + 1, self.max_retries, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _body(self, prompt: str, params: SamplingParams) -> dict:
        body = {
            "model": self.model,
            "n": params.n,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        if params.ignore_eos:
            body["ignore_eos"] = True  # vLLM extension; other servers ignore unknown fields or reject them
        if self.chat:
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    def _one(self, prompt: str, params: SamplingParams) -> list[Completion]:
        data = self._request("POST", "/chat/completions" if self.chat else "/completions", self._body(prompt, params))
        choices = sorted(data.get("choices", []), key=lambda c: c.get("index", 0))
        if len(choices) != params.n:
            raise OpenAIError(f"{self.base_url}: asked for n={params.n} samples, got {len(choices)} choices")
        per_choice = self._tokens_per_choice(data, len(choices))
        out = []
        for c, ntok in zip(choices, per_choice):
            text = c["message"]["content"] if self.chat else c["text"]
            finish = "length" if c.get("finish_reason") == "length" else "stop"
            out.append(Completion(text=text or "", num_tokens=ntok, token_ids=None, finish_reason=finish))
        return out

    @staticmethod
    def _tokens_per_choice(data: dict, n: int) -> list[int]:
        """Per-choice completion tokens: the API reports only a total, so it is split evenly (exact for n=1)."""
        total = (data.get("usage") or {}).get("completion_tokens", 0) or 0
        base, extra = divmod(total, n)
        return [base + (1 if i < extra else 0) for i in range(n)]

    # ------------------------------------------------------------------------------------------------------ generate
    def generate(self, prompts: list[str], params: SamplingParams) -> list[list[Completion]]:
        """For each prompt, ``params.n`` completions; prompts are sent concurrently (``max_concurrency``)."""
        if params.n < 1:
            raise ValueError(f"SamplingParams.n must be >= 1, got {params.n}")
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(lambda p: self._one(p, params), prompts))
