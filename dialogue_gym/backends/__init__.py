"""Text-generation backends behind one interface, and the record/replay cache.

* :func:`make_backend` builds one from a spec: ``"openai:MODEL"`` (any OpenAI-compatible
  endpoint), ``"hf:smollm2"`` / ``"hf:/local/path"`` (local ``transformers``), ``"fake"`` /
  ``"fake:echo"`` (deterministic, for tests); ``cache=PATH`` puts it behind a
  :class:`ReplayCache` in mode ``"off"``, ``"rw"`` or ``"replay"``.
* Every backend answers :meth:`~Backend.generate`, :meth:`~Backend.agenerate` and
  :meth:`~Backend.generate_batch` and accounts :class:`Usage` per component.

The OpenAI and HF backends import their heavy dependencies (``openai``, ``torch``) only when
they are built.
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.backends.base import (
    Backend,
    BackendError,
    BaseBackend,
    CacheMiss,
    Completion,
    GenerationParams,
    Messages,
    SampleRequest,
    Usage,
    normalize_messages,
)
from dialogue_gym.backends.cache import CACHE_MODES, CachedBackend, ReplayCache, cache_key
from dialogue_gym.backends.factory import make_backend
from dialogue_gym.backends.fake import FakeBackend, scripted

__all__ = [
    "CACHE_MODES",
    "Backend",
    "BackendError",
    "BaseBackend",
    "CacheMiss",
    "CachedBackend",
    "Completion",
    "FakeBackend",
    "GenerationParams",
    "HFBackend",
    "Messages",
    "OpenAIBackend",
    "ReplayCache",
    "SampleRequest",
    "Usage",
    "cache_key",
    "make_backend",
    "normalize_messages",
    "scripted",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIBackend":
        from dialogue_gym.backends.openai_backend import OpenAIBackend

        return OpenAIBackend
    if name == "HFBackend":
        from dialogue_gym.backends.hf import HFBackend

        return HFBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
