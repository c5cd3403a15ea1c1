"""SI-AVPO with a LoRA causal LM: the two views as two prompts of one adapted model.

:class:`LMViewPolicy` is the LM parameterization of the SI-AVPO
:class:`~dialogue_gym_agents.siavpo.policy.ViewPolicy`, trained by the same
:func:`~dialogue_gym_agents.siavpo.train.run_siavpo` as the strategy-level policy
(``dialogue-gym train siavpo --policy lm``). One
:class:`~dialogue_gym_agents.common.lm.policy.LMPolicy` (a chat LM with one LoRA adapter)
writes the system's utterances under two views:

* **student** — the system seat's chat prompt built from the observation only (the dialogue
  history and the Appendix B.5 control block; :func:`student_messages`), exactly the prompt
  the deployed :class:`SiavpoLMAgent` builds;
* **teacher** — the same messages with a rendered P_int block (:func:`render_privileged`: each
  latent concern's description, strength, resistance point, an unlock condition and an
  anti-pattern) inserted into the system message (:func:`teacher_messages`). The privileged
  record is read only there; the student prompt is built without it.

An action is an :class:`~dialogue_gym_agents.common.lm.policy.LMResponse`; its log-prob is the
sum of its tokens' log-probs (the response-level ratio of GRPO) and the utterance is its text with
the whitespace collapsed.

**AOPD at token level.** :meth:`LMViewPolicy.view_kl` is, per step, the mean over the response
tokens of the KL over the vocabulary between the student-view distribution (with gradients)
and the teacher-view distribution of θ_old (detached), computed with
:func:`~dialogue_gym_agents.siavpo.losses.aopd_kl` on the per-token logits (forward
KL(sg T ‖ S) or reverse KL(S ‖ sg T)). θ_old is kept as parameters, not distributions:
:meth:`LMViewPolicy.teacher_targets` snapshots the adapter's tensors (an
:class:`AdapterSnapshot`, one copy of the LoRA weights whatever the batch) and ``view_kl``
recomputes the teacher logits by swapping them into the adapter for one no-grad forward pass,
as :class:`~dialogue_gym_agents.common.lm.policy.LMPolicy` does for its reference policy. Storing
``(steps × response tokens × vocabulary)`` teacher distributions instead would take gigabytes
for a 49k-token vocabulary; the price is one extra forward pass per update epoch.

:meth:`LMViewPolicy.entropy` is the mean over the response tokens of the view's per-token
entropy over the vocabulary (at the sampled response's prefixes), so it needs the actions.

The teacher prompt is longer than the student prompt by the P_int block: ``max_prompt_tokens``
(the trainer's ``--max-length`` minus ``--max-new-tokens``) bounds the student prompt, whose
oldest turns are dropped to fit, and the teacher prompt holds the same turns.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch

from dialogue_gym.backends import Backend
from dialogue_gym.cards.card import TaskCard
from dialogue_gym_agents.common.checkpoint import Checkpoint
from dialogue_gym_agents.common.lm.agent import LMAgent
from dialogue_gym_agents.common.lm.model import adapter_tensors, response_logits
from dialogue_gym_agents.common.lm.policy import LMPolicy, LMResponse
from dialogue_gym_agents.common.lm.prompts import (
    fit_prompt,
    observation_control,
    observation_history,
)
from dialogue_gym_agents.siavpo.losses import KLDirection, aopd_kl
from dialogue_gym_agents.siavpo.policy import STUDENT, TEACHER, View

__all__ = [
    "ADAPTER_DIR",
    "PRIVILEGED_VERSION",
    "AdapterSnapshot",
    "LMEpisode",
    "LMStepInput",
    "LMViewPolicy",
    "SiavpoLMAgent",
    "build_lm_view_policy",
    "load_lm_agent",
    "render_privileged",
    "student_messages",
    "teacher_messages",
]

ADAPTER_DIR = "adapter"
"""The adapter's folder (peft format, vLLM-loadable) inside a ``siavpo`` LM checkpoint."""

PRIVILEGED_VERSION = "siavpo-pint-1"
"""Version of :func:`render_privileged` and :func:`teacher_messages` (stamped into checkpoints)."""

Messages = list[dict[str, str]]


# -- prompts ---------------------------------------------------------------------------------------


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def render_privileged(
    privileged: Mapping[str, Any] | None, user_role: str = "user", examples: int = 1
) -> str:
    """P_int as compact text: the user's latent concerns, for the teacher prompt only.

    Renders the *static* internal persona of ``infos["system"]["privileged"]`` (its
    ``internal_persona.concerns``, else the plain ``concerns``): per concern its id and facet,
    strength, resistance point (``needed`` addressing turns for this persona), description,
    and the first ``examples`` unlock conditions and anti-patterns of the card. The simulator's
    dynamic state (statuses, progress, willingness, Δw) is left out, as in the strategy-level
    teacher (:class:`~dialogue_gym_agents.siavpo.policy.PrivilegedFeatures`).

    Args:
        privileged: The env's privileged record (``None`` or no concerns: ``""``).
        user_role: The card's user role, named in the block's heading.
        examples: Unlock conditions and anti-patterns quoted per concern (0: none).

    Returns:
        The block (heading and one line per concern), or ``""``.

    Raises:
        ValueError: ``examples`` < 0.
    """
    if examples < 0:
        raise ValueError(f"examples must be >= 0, got {examples}")
    if not privileged:
        return ""
    concerns = (privileged.get("internal_persona") or {}).get("concerns")
    concerns = concerns or privileged.get("concerns") or {}
    lines = []
    for cid, concern in concerns.items():
        facet = concern.get("facet")
        needed = max(int(concern.get("needed") or concern.get("resistance") or 1), 1)
        head = f"- {cid}" + (f" ({facet})" if facet else "")
        strength = concern.get("strength")
        head += f", strength {1.0 if strength is None else float(strength):.2f}"
        head += f", needs {needed} addressing turn{'s' if needed != 1 else ''}"
        parts = [head]
        if concern.get("description"):
            parts.append(_one_line(concern["description"]))
        unlock = [_one_line(u) for u in concern.get("unlock") or ()][:examples]
        anti = [_one_line(a) for a in concern.get("anti_patterns") or ()][:examples]
        if unlock:
            parts.append("Unlocked by e.g.: " + " / ".join(f'"{u}"' for u in unlock))
        if anti:
            parts.append("Avoid e.g.: " + " / ".join(f'"{a}"' for a in anti))
        lines.append(parts[0] + (": " + " ".join(parts[1:]) if len(parts) > 1 else ""))
    if not lines:
        return ""
    heading = (
        f"Hidden concerns of the {user_role} (privileged: they have not told you; "
        "address them, never reveal that you know them):"
    )
    return "\n".join([heading, *lines])


def student_messages(
    card: TaskCard,
    observation: Mapping[str, Any],
    tokenizer: Any = None,
    max_prompt_tokens: int | None = None,
    context_turns: int | None = None,
) -> Messages:
    """The student view: the system seat's chat prompt from the observation only.

    The same prompt as :class:`~dialogue_gym_agents.common.lm.agent.LMAgent` builds for the system
    seat (history and the B.5 control block; the oldest turns dropped to fit
    ``max_prompt_tokens``). It has no privileged input at all.
    """
    messages, _ = fit_prompt(
        tokenizer,
        card,
        "system",
        observation_history(observation),
        max_prompt_tokens,
        context_turns,
        **observation_control("system", observation),
    )
    return messages


def teacher_messages(student: Sequence[Mapping[str, str]], block: str) -> Messages:
    """The teacher view: the student's messages with the P_int ``block`` in the system message.

    The block goes before the system message's last line (the reply instruction); an empty
    block gives the student's messages unchanged (a copy).
    """
    messages = [dict(m) for m in student]
    if not block.strip() or not messages or messages[0].get("role") != "system":
        return messages
    lines = messages[0]["content"].split("\n")
    messages[0]["content"] = "\n".join([*lines[:-1], block.strip(), *lines[-1:]])
    return messages


@dataclasses.dataclass(frozen=True)
class LMStepInput:
    """One decision point of the LM policy: both views' prompts.

    Attributes:
        student: The student-view chat prompt (observation only).
        teacher: The teacher-view chat prompt (the same plus the P_int block).
    """

    student: Messages
    teacher: Messages

    def prompt(self, view: View) -> Messages:
        """The prompt of ``view``."""
        if view == TEACHER:
            return self.teacher
        if view == STUDENT:
            return self.student
        raise ValueError(f"view must be 'teacher' or 'student', got {view!r}")


class LMEpisode:
    """Per-rollout state of :class:`LMViewPolicy` (a ``PolicyEpisode``).

    The prompts are functions of the observation and the privileged record, so nothing is
    kept between turns; the sampling seeds come from the trainer's generator.

    Args:
        policy: The view policy (card, tokenizer, prompt limits).
    """

    def __init__(self, policy: LMViewPolicy) -> None:
        self.policy = policy

    def encode(
        self, observation: Mapping[str, Any], privileged: Mapping[str, Any] | None = None
    ) -> LMStepInput:
        """Both views' prompts for the system observation (and the privileged record)."""
        p = self.policy
        student = student_messages(
            p.card, observation, p.tokenizer, p.max_prompt_tokens, p.context_turns
        )
        block = render_privileged(privileged, p.card.user_role, p.examples)
        return LMStepInput(student, teacher_messages(student, block))

    def act(self, action: Any) -> str:
        """The reply text of an :class:`LMResponse`, whitespace collapsed."""
        if not isinstance(action, LMResponse):
            raise TypeError(f"an LM episode acts with LMResponse replies, got {type(action)!r}")
        return " ".join(action.text.split())


# -- log-probs and distributions -------------------------------------------------------------------


def _row_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B,)`` mean of ``(B, R)`` values over each row's masked tokens (0 for none)."""
    return (values * mask).sum(dim=-1) / mask.sum(dim=-1).clamp_min(1.0)


@dataclasses.dataclass(frozen=True)
class AdapterSnapshot:
    """θ_old as parameters: copies of the adapter's tensors (see the module docstring).

    Attributes:
        tensors: Detached copies by parameter name.
    """

    tensors: Mapping[str, torch.Tensor]


class LMViewPolicy:
    """The LM :class:`~dialogue_gym_agents.siavpo.policy.ViewPolicy` around an :class:`LMPolicy`.

    Args:
        policy: The LoRA LM policy (its sampling temperature and reply limit are used).
        card: The task card (the system seat's prompt).
        max_prompt_tokens: Student prompt budget (oldest turns dropped to fit; ``None``: all).
        context_turns: Most recent turns in the prompts (``None``: all that fit).
        examples: Unlock conditions / anti-patterns quoted per concern in the P_int block.
        batch_size: Rows per no-grad scoring pass (log-probs of sampled replies).
        source: What the policy was built from (recorded by :meth:`info`).

    Raises:
        ValueError: ``batch_size`` < 1 or ``examples`` < 0.
    """

    def __init__(
        self,
        policy: LMPolicy,
        card: TaskCard,
        *,
        max_prompt_tokens: int | None = None,
        context_turns: int | None = None,
        examples: int = 1,
        batch_size: int = 8,
        source: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if examples < 0:
            raise ValueError(f"examples must be >= 0, got {examples}")
        self.policy = policy
        self.card = card
        self.tokenizer = policy.tokenizer
        self.max_prompt_tokens = max_prompt_tokens
        self.context_turns = context_turns
        self.examples = int(examples)
        self.batch_size = int(batch_size)
        self.source = dict(source or {})

    # -- ViewPolicy ----------------------------------------------------------------------------

    def new_episode(self, seed: int | None = None) -> LMEpisode:
        """A fresh :class:`LMEpisode` (``seed`` is unused: sampling seeds come per batch)."""
        return LMEpisode(self)

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        """The adapter's weights (the base model stays frozen)."""
        return iter(self.policy.trainable_parameters())

    def forward(
        self, inputs: Sequence[LMStepInput], actions: Sequence[LMResponse], view: View
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(logits, targets, mask)`` of the replies under ``view``'s prompts.

        See :func:`response_logits`.
        """
        if len(inputs) != len(actions):
            raise ValueError(f"{len(inputs)} step inputs but {len(actions)} actions")
        prompts = self.policy.prompt_ids([step.prompt(view) for step in inputs])
        return response_logits(
            self.policy.model, prompts, [list(a.tokens) for a in actions], self.policy.pad_id
        )

    def log_probs(
        self, inputs: Sequence[LMStepInput], actions: Sequence[LMResponse], view: View
    ) -> torch.Tensor:
        """``(B,)`` response log-probs (sum over its tokens) under ``view``, with gradients."""
        if not inputs:
            return torch.zeros(0)
        logits, targets, mask = self.forward(inputs, actions, view)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        return (logp * mask).sum(dim=-1)

    def sample(
        self, inputs: Sequence[LMStepInput], view: View, generator: torch.Generator
    ) -> tuple[list[LMResponse], torch.Tensor]:
        """Generates a reply per input from ``view``'s prompt, with its response log-prob.

        The log-probs are detached. Each row samples with its own seed drawn from
        ``generator`` at the policy's temperature (:meth:`LMPolicy.generate`).
        """
        if not inputs:
            return [], torch.zeros(0)
        responses = self.policy.generate([step.prompt(view) for step in inputs], generator)
        with torch.no_grad():
            logp = torch.cat(
                [
                    self.log_probs(
                        inputs[i : i + self.batch_size], responses[i : i + self.batch_size], view
                    )
                    for i in range(0, len(inputs), self.batch_size)
                ]
            )
        return responses, logp.detach().cpu()

    def teacher_targets(
        self,
        inputs: Sequence[LMStepInput] | None = None,
        actions: Sequence[LMResponse] | None = None,
    ) -> AdapterSnapshot:
        """θ_old: a snapshot of the adapter now (``inputs``/``actions`` are unused).

        The snapshot is row-independent, so a chunked update passes it whole to every chunk.
        """
        return AdapterSnapshot(
            {name: p.detach().clone() for name, p in adapter_tensors(self.policy.model).items()}
        )

    @contextlib.contextmanager
    def weights(self, snapshot: AdapterSnapshot | None) -> Iterator[None]:
        """Inside the block the adapter holds ``snapshot``'s tensors (``None``: unchanged).

        Raises:
            ValueError: The snapshot does not fit the adapter.
        """
        if snapshot is None:
            yield
            return
        live = adapter_tensors(self.policy.model)
        saved = snapshot.tensors
        if set(saved) != set(live) or any(saved[k].shape != live[k].shape for k in live):
            raise ValueError("the adapter snapshot does not fit this policy's adapter")
        originals = {name: p.data for name, p in live.items()}
        try:
            for name, parameter in live.items():
                parameter.data = saved[name]
            yield
        finally:
            for name, parameter in live.items():
                parameter.data = originals[name]

    def view_kl(
        self,
        inputs: Sequence[LMStepInput],
        actions: Sequence[LMResponse],
        direction: KLDirection = "forward",
        targets: AdapterSnapshot | None = None,
    ) -> torch.Tensor:
        """``(B,)`` token-level AOPD KL between the views, averaged over the response tokens.

        At each token of the reply, the KL over the vocabulary between the student view's
        next-token distribution (current parameters, with gradients) and the teacher view's
        (the parameters of ``targets``, else the current ones; no gradients) —
        :func:`~dialogue_gym_agents.siavpo.losses.aopd_kl` on the logits.
        """
        if not inputs:
            return torch.zeros(0)
        with torch.no_grad(), self.weights(targets):  # teacher first, then restore the adapter
            teacher, _, _ = self.forward(inputs, actions, TEACHER)
        student, _, mask = self.forward(inputs, actions, STUDENT)
        return _row_mean(aopd_kl(student, teacher, direction), mask)

    def entropy(
        self,
        inputs: Sequence[LMStepInput],
        view: View,
        actions: Sequence[LMResponse] | None = None,
    ) -> torch.Tensor:
        """``(B,)`` mean per-token entropy of ``view``'s distribution along the replies.

        Raises:
            ValueError: No ``actions`` (the LM's entropy is taken along the sampled replies).
        """
        if actions is None:
            raise ValueError("the LM policy's entropy needs the sampled replies (actions=)")
        if not inputs:
            return torch.zeros(0)
        logits, _, mask = self.forward(inputs, actions, view)
        logp = torch.log_softmax(logits, dim=-1)
        return _row_mean(-(logp.exp() * logp).sum(dim=-1), mask)

    # -- checkpoints ---------------------------------------------------------------------------

    def save(self, folder: str | Path) -> list[str]:
        """Writes the adapter into ``folder/adapter``; returns the files relative to ``folder``."""
        from dialogue_gym_agents.common.lm.model import save_adapter

        names = save_adapter(self.policy.model, Path(folder) / ADAPTER_DIR)
        return [f"{ADAPTER_DIR}/{name}" for name in names]

    def info(self) -> dict[str, Any]:
        """What a checkpoint records: the policy kind, what it was built from, prompt versions."""
        from dialogue_gym_agents.common.lm.prompts import PROMPT_VERSION

        return {
            "policy": "lm",
            "system_policy": dict(self.source),
            "prompt_version": PROMPT_VERSION,
            "privileged_version": PRIVILEGED_VERSION,
            "privileged_examples": self.examples,
            "max_prompt_tokens": self.max_prompt_tokens,
        }


def build_lm_view_policy(
    card: TaskCard,
    *,
    model: str,
    init: str | Path | None,
    lora_r: int,
    lora_alpha: float,
    seed: int,
    device: str,
    dtype: str,
    temperature: float,
    max_new_tokens: int,
    max_length: int,
    batch_size: int,
    examples: int = 1,
) -> LMViewPolicy:
    """The :class:`LMViewPolicy` of a run (see :func:`~.sft.warm_start.build_policy`).

    A fresh adapter on ``model``, or the adapter of an ``sft-lora`` system checkpoint
    (``init``) as the warm start.

    Raises:
        CheckpointError: ``init`` is missing, corrupt, of another kind or task, or of the
            user seat.
        ModelNotFoundError: The base model path does not exist.
        ModelLoadError: Nothing loadable there.
    """
    from dialogue_gym_agents.sft.warm_start import build_policy

    policy, source = build_policy(
        seat="system",
        init=init,
        model=model,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        seed=seed,
        device=device,
        dtype=dtype,
        card=card,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        reference="base",  # SI-AVPO has no KL to a reference: keep no copy of the adapter
        batch_size=batch_size,
    )
    return LMViewPolicy(
        policy,
        card,
        max_prompt_tokens=max(16, max_length - max_new_tokens),
        examples=examples,
        batch_size=batch_size,
        source=source,
    )


# -- the deployable agent --------------------------------------------------------------------------


class SiavpoLMAgent(LMAgent):
    """Plays the system seat with the LM's **student view** only (never reads infos).

    An :class:`~dialogue_gym_agents.common.lm.agent.LMAgent` of the system seat: its prompt is the
    student view it was trained under (:func:`student_messages` is the same prompt), and its
    temperature defaults to 0.3, the paper's decoding. Turn ``k`` of an episode reset with seed
    ``s`` samples with seed ``derive_seed(s, "system", k)``.

    Args:
        card: The task card.
        seat: ``"system"`` (the only seat an SI-AVPO agent plays).
        backend: The generation backend (an ``HFBackend`` around the adapted model).
        tokenizer: The model's tokenizer (prompt token budget).
        temperature: Sampling temperature (0: greedy).
        **kwargs: Other :class:`~dialogue_gym_agents.common.lm.agent.LMAgent` options.

    Raises:
        ValueError: ``seat`` is not the system's.
    """

    def __init__(
        self,
        card: TaskCard,
        seat: str,
        backend: Backend,
        tokenizer: Any = None,
        *,
        temperature: float = 0.3,
        **kwargs: Any,
    ) -> None:
        if seat != "system":
            raise ValueError(f"an SI-AVPO agent plays the system seat, not {seat!r}")
        super().__init__(card, seat, backend, tokenizer, temperature=temperature, **kwargs)


def load_lm_agent(
    ckpt: Checkpoint,
    card: TaskCard,
    *,
    seed: int | None = None,
    temperature: float | None = None,
    deterministic: bool | None = None,
    max_new_tokens: int | None = None,
    device: str = "auto",
    batch_size: int = 8,
) -> SiavpoLMAgent:
    """The :class:`SiavpoLMAgent` of a verified ``siavpo`` LM checkpoint.

    Args:
        ckpt: The checkpoint (``info["policy"] == "lm"``).
        card: The env's task card (already checked against the checkpoint).
        seed: Default episode seed.
        temperature: Sampling temperature (default: the run's ``--eval-temperature``, 0.3).
        deterministic: ``True``: greedy decoding (temperature 0), whatever ``temperature``.
        max_new_tokens: Override the run's reply limit.
        device: Torch device.
        batch_size: Rows per ``generate`` call.

    Raises:
        CorruptCheckpointError: An unusable generation config, or an adapter that does not fit.
        CheckpointMismatchError: The installed SmolLM2 differs from the one it was trained on.
        ModelNotFoundError: Its base model path no longer exists.
    """
    from dialogue_gym_agents.common.lm.agent import build_lm_agent

    agent = build_lm_agent(
        card,
        ckpt,
        ADAPTER_DIR,
        "system",
        seed=seed,
        temperature=0.0 if deterministic else temperature,
        default_temperature=float(ckpt.config.get("eval_temperature", 0.3)),
        max_new_tokens=max_new_tokens,
        backend=None,
        base_url=None,
        device=device,
        batch_size=batch_size,
        base=ckpt.info.get("system_policy") or None,
        agent_type=SiavpoLMAgent,
    )
    return cast(SiavpoLMAgent, agent)
