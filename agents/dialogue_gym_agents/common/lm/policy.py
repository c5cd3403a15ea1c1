"""LoRA causal-LM policies for GRPO: sampling, response log-probs, the KL reference, seats.

:class:`LMPolicy` is the LM parameterization of the GRPO trainers. It implements the policy
protocol of the strategy-level MASP trainer
(:class:`dialogue_gym_agents.common.policy.GRPOPolicy`): a *context* is a seat's chat prompt
(a list of messages, built by :class:`LMSeat` from the seat's observation with the Appendix B.5
control block) and an *action* is an :class:`LMResponse` (the reply text and its tokens).

- :meth:`LMPolicy.sample` generates replies through a text-generation backend — the local
  transformers backend (:class:`~dialogue_gym.backends.hf.HFBackend` around the adapted model,
  per-row seeded sampling) by default, or an OpenAI-compatible server such as vLLM serving the
  current adapter (:class:`VLLMAdapterSync` pushes it after every update) — and returns each
  reply's per-token log-probs under the sampling policy (the GRPO "old" policy).
- :meth:`LMPolicy.logprobs` gives ``log π(y_t | o, y_<t)`` per response token with the prompt
  masked (``(B, L)`` plus a ``(B, L)`` mask, with gradients); the response-level log-prob of the
  paper's Eq. 25 is their sum. :meth:`LMPolicy.reference_logprobs` gives the same under the
  frozen reference policy, and :meth:`LMPolicy.evaluate` both, for
  :func:`~dialogue_gym_agents.common.grpo.grpo_loss` with ``mask=`` (token-level ratios and
  the token-level k3 KL).

**Responses as tokens.** A backend returns text, so a reply's tokens are the tokenizer's
encoding of that text followed by the end-of-turn token when the reply ended by itself (none
when it was cut at ``max_new_tokens``). Old, current and reference log-probs are all computed
on these same tokens, so the importance ratios are consistent; the one approximation is that a
sampled, non-canonical tokenization of the same text is scored as the canonical one.

**Reference policy** (``reference=``): ``"copy"`` (default) — a frozen copy of the adapter as it
was when the policy was built (the SFT warm start when it was loaded from an ``sft-lora``
checkpoint), or after :meth:`LMPolicy.freeze_reference`; its log-probs are computed by swapping
the copied tensors into the adapter's parameters for one no-grad forward pass. ``"base"`` — the
adapter disabled, i.e. the base model (the SFT warm start when the SFT adapter was merged into
the base weights, ``python -m dialogue_gym_agents.common.lm merge``).

Dropout: GRPO keeps the model in eval mode throughout (no adapter dropout), so that the
first-epoch ratio is exactly 1 and sampling, old and new log-probs see the same network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from dialogue_gym.backends import Backend, BackendError, GenerationParams
from dialogue_gym.cards.card import TaskCard
from dialogue_gym_agents.common.checkpoint import CorruptCheckpointError
from dialogue_gym_agents.common.grpo import pad_token_rows
from dialogue_gym_agents.common.lm.model import adapter_tensors, response_logprobs, save_adapter
from dialogue_gym_agents.common.lm.prompts import (
    SEATS,
    encode_prompt,
    encode_response,
    fit_prompt,
    observation_control,
    observation_history,
)
from dialogue_gym_agents.common.policy import PolicyOutput

__all__ = [
    "REFERENCE_WEIGHTS",
    "LMPolicy",
    "LMResponse",
    "LMSeat",
    "VLLMAdapterSync",
    "pad_token_rows",
]

REFERENCE_WEIGHTS = "reference.safetensors"
"""The frozen reference adapter's tensors inside a saved policy folder."""

Messages = list[dict[str, str]]


@dataclasses.dataclass(frozen=True)
class LMResponse:
    """A sampled reply.

    Attributes:
        text: The reply as generated.
        tokens: The tokens it is scored as (text, then the end-of-turn token when finished).
        finished: The reply ended by itself (not cut at ``max_new_tokens``).
    """

    text: str
    tokens: tuple[int, ...]
    finished: bool


class LMPolicy:
    """A chat causal LM with a trainable LoRA adapter, as a GRPO policy.

    Args:
        model: The ``PeftModel`` (its ``default`` adapter is the trained one).
        tokenizer: Its tokenizer.
        temperature: Sampling temperature of :meth:`sample` (``greedy=True``: 0).
        max_new_tokens: Longest reply.
        reference: ``"copy"`` (frozen copy of the current adapter) or ``"base"`` (adapter off).
        backend: Generation backend for :meth:`sample` (default: a local ``HFBackend``).
        batch_size: Rows per ``generate`` call of the default local backend.
        name: Model name stamped into the local backend's completions.

    Raises:
        ValueError: No trainable adapter, an unknown reference mode, bad limits.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        temperature: float = 0.75,
        max_new_tokens: int = 64,
        reference: Literal["copy", "base"] = "copy",
        backend: Backend | None = None,
        batch_size: int = 8,
        name: str = "lm-policy",
    ) -> None:
        if reference not in ("copy", "base"):
            raise ValueError(f"reference must be 'copy' or 'base', got {reference!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not adapter_tensors(model):
            raise ValueError("the model has no LoRA adapter (use lm.model.attach_lora first)")
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.reference = reference
        self.pad_id = int(tokenizer.pad_token_id)
        if backend is None:
            from dialogue_gym.backends.hf import HFBackend

            backend = HFBackend(model, tokenizer, name=name, batch_size=batch_size)
        self.backend = backend
        for parameter in self.trainable_parameters():
            parameter.requires_grad_(True)
        self._reference: dict[str, torch.Tensor] | None = (
            self._snapshot() if reference == "copy" else None
        )
        model.eval()

    # -- parameters ----------------------------------------------------------------------------

    def _snapshot(self) -> dict[str, torch.Tensor]:
        return {name: p.detach().clone() for name, p in adapter_tensors(self.model).items()}

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The adapter's weights (what GRPO updates; the base and the reference stay frozen)."""
        return list(adapter_tensors(self.model).values())

    def freeze_reference(self) -> None:
        """Makes the current adapter the frozen KL reference (end of the warm start)."""
        self.reference = "copy"
        self._reference = self._snapshot()

    def state_dict(self) -> dict[str, Any]:
        """``{"adapter": {name: tensor}, "reference": {name: tensor} | None}`` (copies)."""
        return {
            "adapter": self._snapshot(),
            "reference": None
            if self._reference is None
            else {k: v.clone() for k, v in self._reference.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Loads :meth:`state_dict` output (adapter weights and reference).

        Raises:
            ValueError: Names or shapes that do not match this policy's adapter.
        """
        live = adapter_tensors(self.model)
        adapter = dict(state["adapter"])
        if set(adapter) != set(live):
            raise ValueError("the state's adapter tensors do not match this policy's adapter")
        with torch.no_grad():
            for name, parameter in live.items():
                if parameter.shape != adapter[name].shape:
                    raise ValueError(
                        f"{name}: shape {tuple(adapter[name].shape)} expected "
                        f"{tuple(parameter.shape)}"
                    )
                parameter.copy_(adapter[name])
        reference = state.get("reference")
        if reference is None:
            self.reference, self._reference = "base", None
        else:
            if set(reference) != set(live):
                raise ValueError("the state's reference tensors do not match this adapter")
            self.reference = "copy"
            self._reference = {
                k: v.detach().clone().to(live[k].device, live[k].dtype)
                for k, v in reference.items()
            }

    def save(self, folder: str | Path) -> list[str]:
        """Writes the adapter (peft format, vLLM-loadable) and the reference; returns the files."""
        from safetensors.torch import save_file

        folder = Path(folder)
        files = save_adapter(self.model, folder)
        if self._reference is not None:
            save_file(
                {k: v.detach().to("cpu").contiguous() for k, v in self._reference.items()},
                str(folder / REFERENCE_WEIGHTS),
                metadata={"format": "pt"},
            )
            files.append(REFERENCE_WEIGHTS)
        return files

    def load_reference(self, folder: str | Path) -> None:
        """Loads the reference saved by :meth:`save` (a folder without one: ``"base"``).

        Raises:
            CorruptCheckpointError: The file cannot be read or does not fit the adapter.
        """
        from safetensors.torch import load_file

        path = Path(folder) / REFERENCE_WEIGHTS
        if not path.is_file():
            self.reference, self._reference = "base", None
            return
        try:
            reference = load_file(str(path))
        except Exception as exc:  # safetensors raises its own error types
            raise CorruptCheckpointError(f"cannot read {path}: {exc}") from None
        live = adapter_tensors(self.model)
        if set(reference) != set(live) or any(reference[k].shape != live[k].shape for k in live):
            raise CorruptCheckpointError(f"{path} does not fit the adapter it was saved with")
        self.reference = "copy"
        self._reference = {k: v.to(live[k].device, live[k].dtype) for k, v in reference.items()}

    @contextlib.contextmanager
    def _reference_weights(self) -> Iterator[None]:
        """Inside the block the model computes the reference policy (no gradients)."""
        if self._reference is None:
            with self.model.disable_adapter():
                yield
            return
        live = adapter_tensors(self.model)
        originals = {name: p.data for name, p in live.items()}
        try:
            for name, parameter in live.items():
                parameter.data = self._reference[name]
            yield
        finally:
            for name, parameter in live.items():
                parameter.data = originals[name]

    # -- log-probs ------------------------------------------------------------------------------

    def prompt_ids(self, contexts: Sequence[Messages]) -> list[list[int]]:
        """Token ids of each context's chat-templated prompt."""
        return [encode_prompt(self.tokenizer, context) for context in contexts]

    def logprobs(
        self, contexts: Sequence[Messages], responses: Sequence[LMResponse]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log-probs of ``responses`` under the current policy (with gradients).

        Returns:
            ``(logp, mask)``, each ``(B, L)``; the response-level log-prob is
            ``(logp * mask).sum(-1)``.
        """
        return response_logprobs(
            self.model,
            self.prompt_ids(contexts),
            [list(r.tokens) for r in responses],
            self.pad_id,
        )

    def reference_logprobs(
        self, contexts: Sequence[Messages], responses: Sequence[LMResponse]
    ) -> torch.Tensor:
        """Per-token log-probs under the frozen reference policy, ``(B, L)``, no gradients."""
        with torch.no_grad(), self._reference_weights():
            logp, _ = self.logprobs(contexts, responses)
        return logp

    def evaluate(self, contexts: Sequence[Messages], actions: Sequence[LMResponse]) -> PolicyOutput:
        """Current log-probs (with gradients), mask and reference log-probs (token level)."""
        logp, mask = self.logprobs(contexts, actions)
        return PolicyOutput(logp, mask, None, self.reference_logprobs(contexts, actions))

    # -- sampling --------------------------------------------------------------------------------

    def generate(
        self,
        contexts: Sequence[Messages],
        generator: torch.Generator,
        greedy: bool = False,
        temperature: float | None = None,
    ) -> list[LMResponse]:
        """Replies for a batch of contexts (no log-probs).

        Each row samples with its own seed drawn from ``generator``, so a reply does not
        depend on the other rows of its batch.

        Raises:
            BackendError: Generation failed.
        """
        if not contexts:
            return []
        seeds = torch.randint(0, 2**31 - 1, (len(contexts),), generator=generator).tolist()
        heat = 0.0 if greedy else float(self.temperature if temperature is None else temperature)
        requests = [
            (
                list(context),
                GenerationParams(temperature=heat, max_tokens=self.max_new_tokens, seed=int(seed)),
            )
            for context, seed in zip(contexts, seeds, strict=True)
        ]
        completions = self.backend.generate_batch(requests, n=1, component="policy")
        responses = []
        for [completion] in completions:
            finished = completion.finish_reason != "length"
            tokens = encode_response(self.tokenizer, completion.text, finished=finished)
            responses.append(LMResponse(completion.text, tuple(tokens), finished))
        return responses

    def sample(
        self, contexts: Sequence[Messages], generator: torch.Generator, greedy: bool = False
    ) -> tuple[list[LMResponse], list[torch.Tensor]]:
        """Replies and their per-token log-probs under the sampling policy (detached).

        Returns:
            The responses and, per response, a 1-D tensor of its tokens' log-probs.
        """
        responses = self.generate(contexts, generator, greedy=greedy)
        if not responses:
            return [], []
        with torch.no_grad():
            logp, _ = self.logprobs(contexts, responses)
        return responses, [logp[i, : len(r.tokens)].detach() for i, r in enumerate(responses)]


class LMSeat:
    """Connects an :class:`LMPolicy` to one env seat (the MASP trainer's ``Seat`` protocol).

    Args:
        card: The task card.
        seat: ``"system"`` or ``"user"``.
        tokenizer: The policy's tokenizer (for the prompt token budget; ``None``: no budget).
        max_prompt_tokens: Prompt budget; the oldest turns are dropped to fit.
        context_turns: Most recent turns shown (``None``: all that fit).

    Raises:
        ValueError: Unknown seat.
    """

    def __init__(
        self,
        card: TaskCard,
        seat: str,
        tokenizer: Any = None,
        max_prompt_tokens: int | None = None,
        context_turns: int | None = None,
    ) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        self.card = card
        self.seat = seat
        self.tokenizer = tokenizer
        self.max_prompt_tokens = max_prompt_tokens
        self.context_turns = context_turns

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset: the prompt is a function of the observation."""

    def context(self, observation: Mapping[str, Any]) -> Messages:
        """The seat's chat prompt (history + the Appendix B.5 control block)."""
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

    def env_action(self, action: LMResponse, observation: Mapping[str, Any]) -> str:
        """The reply text (whitespace collapsed) as the env action."""
        return " ".join(action.text.split())


class VLLMAdapterSync:
    """Pushes an :class:`LMPolicy`'s current adapter to a vLLM server (rollouts on the server).

    vLLM must run with LoRA and runtime adapter updates enabled::

        VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora --max-lora-rank 16

    Each call saves the adapter into a fresh version folder under ``folder`` (which the server
    must be able to read: same machine or shared storage), unloads the adapter of that name
    (``POST /v1/unload_lora_adapter``; an error there is ignored) and loads the new one
    (``POST /v1/load_lora_adapter``); requests for model ``lora_name`` then sample from the
    current policy. Older version folders are removed (the last ``keep`` stay).

    Args:
        base_url: The server's OpenAI-compatible URL (``http://127.0.0.1:8000/v1``).
        lora_name: The served adapter name (the rollout backend's model name).
        folder: Where version folders are written.
        timeout: Seconds per HTTP request.
        keep: Version folders kept on disk.
    """

    def __init__(
        self,
        base_url: str,
        lora_name: str,
        folder: str | Path,
        timeout: float = 120.0,
        keep: int = 2,
    ) -> None:
        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.lora_name = lora_name
        self.folder = Path(folder)
        self.timeout = timeout
        self.keep = max(1, keep)
        self.version = 0
        self._versions: list[Path] = []

    def _post(self, path: str, payload: Mapping[str, Any]) -> tuple[int, str]:
        request = urllib.request.Request(
            self.root + path,
            data=json.dumps(dict(payload)).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return int(response.status), response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as exc:
            raise BackendError(
                f"cannot reach the vLLM server at {self.root}: {exc}", retryable=True
            ) from None

    def __call__(self, policy: LMPolicy) -> Path:
        """Saves the adapter and (re)loads it on the server; returns the version folder.

        Raises:
            BackendError: The server is unreachable or refuses the adapter.
        """
        self.version += 1
        target = (self.folder / f"{self.lora_name}-v{self.version:05d}").resolve()
        save_adapter(policy.model, target)
        # Unload first (its status is ignored: on the first push nothing may be loaded yet),
        # so that a name left loaded by an earlier run is replaced too.
        self._post("/v1/unload_lora_adapter", {"lora_name": self.lora_name})
        status, body = self._post(
            "/v1/load_lora_adapter", {"lora_name": self.lora_name, "lora_path": str(target)}
        )
        if status >= 400:
            raise BackendError(
                f"vLLM refused adapter {target} (HTTP {status}: {body[:200]}); start it with "
                "--enable-lora, a --max-lora-rank >= the adapter's rank and "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True",
                status=status,
            )
        self._versions.append(target)
        while len(self._versions) > self.keep:
            shutil.rmtree(self._versions.pop(0), ignore_errors=True)
        return target
