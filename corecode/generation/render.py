"""The one prompt renderer: how a role's prompt becomes the token ids a model sees, in every stage.

SFT rows (``training/sft.py``), the team / MAGRPO rollouts and their ptx term (``training/rollout.py``,
``training/team_grpo.py``), single-agent GRPO (``training/single_grpo.py``), evaluation and ``corecode solve``
(``generation/hf.py``, ``vllm_backend.py``) and ``corecode serve`` (``server.py``) all call these functions, so an
instruct model is trained on exactly the ids it is evaluated on:

- **Rendering.** A base model (a tokenizer without a chat template, such as the embedded one) reads the role's prompt
  as plain text; an instruct model reads it as one user message of the tokenizer's chat template, with the assistant
  cue after it. ``generation.use_chat_template`` overrides the choice (null = the tokenizer decides).
- **Token ids.** The rendered text is tokenized with ``add_special_tokens=False`` (a chat template writes its own
  special tokens), prompt and completion separately, so the prompt part of every SFT row is the very list of ids
  generation feeds the model for that prompt.
- **End of the completion.** An SFT completion ends with the token generation stops on: EOS for plain text, the chat
  template's end-of-turn token (``<|im_end|>`` for ChatML/Qwen) for chat, found by rendering an assistant turn.
  Generation stops on EOS, the model's ``generation_config`` EOS ids and that end-of-turn token
  (:func:`stop_token_ids`).

Written here rather than taken from TRL: TRL's SFTTrainer tokenizes a string prompt with the tokenizer's default
special tokens and appends ``eos_token`` as text (a chat model then learns to stop on EOS, not on its end-of-turn
token, unless the tokenizer's EOS is changed), and its conversational format renders prompt + completion through the
template again (ChatML adds a newline after ``<|im_end|>``); neither is guaranteed to give the ids evaluation uses.
SFT rows are therefore handed to TRL already tokenized (``input_ids`` + ``completion_mask``, which TRL's SFTTrainer
accepts as is). For a tokenizer without a chat template the ids are those TRL's own prompt/completion path produces
(tests/training/test_prompt_render.py holds both to it).
"""

from __future__ import annotations

from collections.abc import Sequence

# Content of the assistant turn rendered to find what the template writes after a completion.
_SENTINEL = "corecode-completion-sentinel"


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def use_chat(tokenizer, chat: bool | None) -> bool:
    """Whether prompts go through the chat template: ``chat`` (``generation.use_chat_template``) when set, else
    whether the tokenizer has one. Asking for a template the tokenizer lacks is an error, before any work."""
    if chat is None:
        return has_chat_template(tokenizer)
    if chat and not has_chat_template(tokenizer):
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        raise ValueError(
            f"generation.use_chat_template is true but the tokenizer of {name!r} has no chat template; "
            "set generation.use_chat_template: null (or false), or use an instruct checkpoint"
        )
    return bool(chat)


def render_messages(tokenizer, messages: Sequence[dict]) -> str:
    """Chat messages as the model reads them: the chat template with the assistant cue; without a template, the
    contents joined by newlines (``corecode serve``'s chat endpoint on a base model)."""
    if has_chat_template(tokenizer):
        return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    return "\n".join(m["content"] for m in messages)


def render_prompt(tokenizer, text: str, chat: bool | None) -> str:
    """A role's prompt as the model reads it: ``text`` itself, or ``text`` as one user message of the chat template."""
    if not use_chat(tokenizer, chat):
        return text
    return render_messages(tokenizer, [{"role": "user", "content": text}])


def tokenize_rendered(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of rendered prompts (no special tokens added: a template writes its own)."""
    return tokenizer(list(texts), add_special_tokens=False)["input_ids"]


def prompt_ids(tokenizer, text: str, chat: bool | None) -> list[int]:
    """The ids generation feeds the model for the role prompt ``text``; the prompt part of its SFT row."""
    return tokenize_rendered(tokenizer, [render_prompt(tokenizer, text, chat)])[0]


def end_of_turn_id(tokenizer) -> int | None:
    """The special token the chat template writes right after an assistant message (``<|im_end|>`` in ChatML), or
    None (no template, or the template writes no special token there: then EOS ends the turn)."""
    if not has_chat_template(tokenizer):
        return None
    messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": _SENTINEL}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    at = text.rfind(_SENTINEL)
    if at < 0:
        return None
    after = tokenize_rendered(tokenizer, [text[at + len(_SENTINEL) :]])[0]
    special = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
    return after[0] if after and after[0] in special else None


def completion_end_id(tokenizer, chat: bool) -> int:
    """The token an SFT completion ends with: the chat template's end-of-turn token for a chat prompt, else EOS."""
    eot = end_of_turn_id(tokenizer) if chat else None
    if eot is not None:
        return eot
    if tokenizer.eos_token_id is None:
        raise ValueError(f"{getattr(tokenizer, 'name_or_path', 'tokenizer')}: no eos_token; a completion needs an end")
    return tokenizer.eos_token_id


def stop_token_ids(tokenizer, generation_config=None) -> set[int]:
    """Ids that end a completion: the tokenizer's EOS, the model's ``generation_config.eos_token_id`` (one id or a
    list) and the chat template's end-of-turn token."""
    eos = getattr(generation_config, "eos_token_id", None)
    ids = set(eos if isinstance(eos, (list, tuple)) else [eos])
    ids |= {tokenizer.eos_token_id, end_of_turn_id(tokenizer)}
    ids.discard(None)
    return ids


def sft_example(tokenizer, prompt: str, completion: str, chat: bool, end_id: int | None = None) -> dict:
    """One tokenized SFT row: ``input_ids`` = :func:`prompt_ids` + the completion's ids + its end token
    (:func:`completion_end_id`, or ``end_id`` when the caller computed it once), and ``completion_mask`` (1 on the
    completion), the format TRL's SFTTrainer trains on with ``completion_only_loss``."""
    ids = prompt_ids(tokenizer, prompt, chat)
    end = completion_end_id(tokenizer, chat) if end_id is None else end_id
    completion_ids = tokenize_rendered(tokenizer, [completion])[0] + [end]
    return {"input_ids": ids + completion_ids, "completion_mask": [0] * len(ids) + [1] * len(completion_ids)}
