"""Test helper (not shipped): a tiny random causal LM with a chat template, built offline.

:func:`build_tiny_model` writes a Hugging Face model folder — a 2-layer Llama with a byte-level
BPE tokenizer trained on a few sentences and the task cards' prose, and a ChatML chat
template — that every code path
taking "any local HF model path" accepts. Its outputs are noise; it exists so that training
loops, checkpoints and reloads can be tested in seconds where SmolLM2 would take minutes.
"""

from __future__ import annotations

from pathlib import Path

from dialogue_gym_agents.common.seeding import derive_seed, isolated_global_rng

__all__ = ["CHATML_TEMPLATE", "build_tiny_model"]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""The ChatML template (SmolLM2's and Qwen's layout, without a default system prompt)."""

_TEXTS = (
    "Hello! Have you heard of Save the Children? They help children around the world.",
    "I am not sure, money is tight for me this month. How is the donation used?",
    "Even a small part of your payment helps. Would you consider donating fifty cents?",
    "You are the persuader talking with a persuadee. Your goal: convince them to donate.",
    "Estimated state of the persuadee (may be wrong): Belief: Desire: Intention:",
    "Receptivity: 0.50 Confidence: 0.40 Valence: +0.10. I feel heard, thank you.",
    "The conversation starts. You speak first. Reply with your next turn only.",
    "I hear that this has been a hard week. What would help you most right now?",
)


def _card_texts() -> list[str]:
    """The built-in task cards' prose (so that prompts take few tokens: fast tests)."""
    from dialogue_gym.cards.card import builtin_cards, load_card

    texts: list[str] = []
    for name in builtin_cards():
        card = load_card(name)
        texts += [card.description, card.goal, card.user_goal or "", card.system_role]
        texts += [f"{s.name} {s.description} {' '.join(s.templates)}" for s in card.strategies]
    return [t for t in texts if t]


def build_tiny_model(
    folder: str | Path, *, seed: int = 0, hidden_size: int = 32, layers: int = 2
) -> Path:
    """Writes a tiny random Llama chat model (weights, tokenizer, template) into ``folder``.

    Args:
        folder: Where to write (created; files in it are replaced).
        seed: Seed of the random weights (drawn inside an isolated global-RNG block, since
            transformers initializes weights from torch's global generator).
        hidden_size: Model width (a multiple of 4).
        layers: Transformer blocks.

    Returns:
        ``folder``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    specials = ["<|pad|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([*_TEXTS, *_card_texts()], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>"
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with isolated_global_rng(derive_seed(seed, "tiny-lm")):
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    from dialogue_gym_agents.common.lm.model import quiet_transformers

    with quiet_transformers():
        model.save_pretrained(str(folder), safe_serialization=True)
        tokenizer.save_pretrained(str(folder))
    return folder
