"""A minimal OpenAI-compatible server over ``TransformersGenerator`` (``corecode serve``).

Serves one local checkpoint at ``/v1/models``, ``/v1/completions`` and ``/v1/chat/completions`` (no streaming, no
logprobs). It is the local endpoint for ``OpenAIGenerator``, the data engineer's teacher and users; for production
throughput use a drop-in server with the same API: ``vllm serve PATH`` or ``transformers serve``.

Requests are served one at a time (a lock around the model): one GPU batch per request, ``n`` samples batched.
"""

from __future__ import annotations

import threading
import time
import uuid

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from corecode.generation.base import SamplingParams
from corecode.generation.hf import TransformersGenerator
from corecode.generation.render import render_messages, tokenize_rendered


class _Sampling(BaseModel):
    model_config = ConfigDict(extra="ignore")  # OpenAI clients send fields we do not use (user, logit_bias, ...)

    model: str | None = None
    n: int = Field(1, ge=1, le=256)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    stop: str | list[str] | None = None
    seed: int | None = None
    ignore_eos: bool = False
    stream: bool = False

    def sampling(self, default_max_tokens: int) -> SamplingParams:
        if self.stream:
            raise HTTPException(400, "stream=true is not supported by corecode serve")
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return SamplingParams(
            n=self.n,
            max_new_tokens=self.max_completion_tokens or self.max_tokens or default_max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            stop=stop,
            seed=self.seed,
            ignore_eos=self.ignore_eos,
        )


class CompletionRequest(_Sampling):
    prompt: str | list[str]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: str
    content: str


class ChatRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)


def create_app(generator: TransformersGenerator, model_name: str, default_max_tokens: int = 256) -> FastAPI:
    """The FastAPI app; ``generator`` must not apply a chat template itself (chat is rendered here, by
    ``corecode.generation.render.render_messages``: the chat template, or the contents joined by newlines without one;
    generation stops at the template's end-of-turn token as well as EOS)."""
    app = FastAPI(title="corecode serve")
    lock = threading.Lock()
    tok = generator.tokenizer

    def check_model(req: _Sampling) -> None:
        if req.model not in (None, "", model_name):
            raise HTTPException(404, f"model {req.model!r} not served here; this server serves {model_name!r}")

    def usage(prompts: list[str], completions) -> dict:
        prompt_tokens = sum(map(len, tokenize_rendered(tok, prompts)))
        completion_tokens = sum(c.num_tokens for cs in completions for c in cs)
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

    def run(prompts: list[str], req: _Sampling):
        params = req.sampling(default_max_tokens)
        with lock:
            return generator.generate(prompts, params)

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "corecode"}]}

    @app.post("/v1/completions")
    def completions(req: CompletionRequest) -> dict:
        check_model(req)
        prompts = [req.prompt] if isinstance(req.prompt, str) else req.prompt
        results = run(prompts, req)
        choices = [
            {"index": i * req.n + j, "text": c.text, "finish_reason": c.finish_reason, "logprobs": None}
            for i, cs in enumerate(results)
            for j, c in enumerate(cs)
        ]
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": choices,
            "usage": usage(prompts, results),
        }

    @app.post("/v1/chat/completions")
    def chat_completions(req: ChatRequest) -> dict:
        check_model(req)
        prompt = render_messages(tok, [m.model_dump() for m in req.messages])  # the renderer training uses
        results = run([prompt], req)
        choices = [
            {"index": j, "message": {"role": "assistant", "content": c.text}, "finish_reason": c.finish_reason}
            for j, c in enumerate(results[0])
        ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": choices,
            "usage": usage([prompt], results),
        }

    return app
