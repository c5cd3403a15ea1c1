"""The BDI mental-state record of a user (MASP, Eq. 6)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class BDI:
    """A user's mental state: belief, desire, intention texts plus three scalars.

    Attributes:
        belief: What the user currently believes (free text).
        desire: What the user currently wants (free text).
        intention: What the user currently plans to do (free text).
        receptivity: ρ ∈ [0, 1], openness to the system's arguments.
        confidence: c ∈ [0, 1], commitment to the current stance.
        valence: v ∈ [-1, 1], affect towards the conversation.
    """

    belief: str
    desire: str
    intention: str
    receptivity: float
    confidence: float
    valence: float

    def __post_init__(self) -> None:
        for name in ("belief", "desire", "intention"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"BDI.{name} must be a str, got {type(getattr(self, name))!r}")
        for name, low in (("receptivity", 0.0), ("confidence", 0.0), ("valence", -1.0)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or math.isnan(value):
                raise TypeError(f"BDI.{name} must be a real number, got {value!r}")
            if not low <= value <= 1.0:
                raise ValueError(f"BDI.{name}={value} is outside [{low}, 1]")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BDI:
        """Builds a record from a mapping with the six field names."""
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in data]
        if missing:
            raise KeyError(f"BDI record is missing fields: {', '.join(missing)}")
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        """Returns the six fields as a JSON-serializable dict."""
        return dataclasses.asdict(self)

    def render(self) -> str:
        """Renders the record as the short text block shown to policies."""
        return (
            f"Belief: {self.belief}\nDesire: {self.desire}\nIntention: {self.intention}\n"
            f"Receptivity: {self.receptivity:.2f} Confidence: {self.confidence:.2f} "
            f"Valence: {self.valence:+.2f}"
        )
