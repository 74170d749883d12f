"""Generation backends behind one interface (``Generator.generate(prompts, SamplingParams)``).

``make_generator(params.generation, model_or_path, tokenizer)`` picks one: ``TransformersGenerator`` (hf.py),
``VLLMGenerator`` (vllm_backend.py), ``OpenAIGenerator`` (openai_http.py). ``corecode serve`` (server.py) exposes a
local checkpoint as an OpenAI-compatible endpoint.
"""

from corecode.generation.base import Completion, Generator, SamplingParams
from corecode.generation.factory import make_generator

__all__ = ["Completion", "Generator", "SamplingParams", "make_generator"]
