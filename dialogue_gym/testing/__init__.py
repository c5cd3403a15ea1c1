"""Test helpers: an OpenAI-compatible HTTP server with scripted replies and injectable faults."""

from __future__ import annotations

from dialogue_gym.testing.server import Fault, RequestRecord, TestServer

__all__ = ["Fault", "RequestRecord", "TestServer"]
