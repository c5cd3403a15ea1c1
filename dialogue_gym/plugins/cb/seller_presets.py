"""The seller's dynamics parameters: :class:`SellerPreset` and the shipped soft/hard presets.

The presets' ``floor_range`` (where the hidden bottom line sits, × listing) is calibrated on
CraigslistBargain's train split: it is read from the shipped table
``dialogue_gym/calibration/tables/cb.json``, which ``dialogue-gym data fit cb`` recomputes
(:mod:`dialogue_gym.plugins.cb.calibration` states the rule: soft = the basis ratio's 10th-50th
percentiles, hard = its 50th-90th). The other fields are the presets' own design.
"""

from __future__ import annotations

import dataclasses

from dialogue_gym.calibration import shipped_table
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.plugins.cb.calibration import seller_floor_range
from dialogue_gym.users.presets import calibrated

__all__ = ["HARD", "SELLER_PRESETS", "SOFT", "SellerPreset", "seller_preset"]


@dataclasses.dataclass(frozen=True)
class SellerPreset:
    """Parameters of the seller dynamics; ``SOFT`` and ``HARD`` are the shipped presets.

    Fractions "of the gap" are of the distance between the current ask and the bottom line.

    Attributes:
        name: Preset name.
        floor_range: The bottom line's range as fractions of the listing price (the shipped
            presets': calibrated on the train split, see the module docstring).
        arg_gain: Share of the gap one argument takes (times its weight).
        off_weight: Weight of an argument the persona is not especially receptive to (the
            persona's own concerns weigh their strength, 0.35..1).
        max_gain: Cap on the share of the gap taken in one turn.
        bare_step: Share of the gap conceded to a bare offer or request.
        close_gap: Accept an offer above the bottom line this close to the ask (× listing).
        positive_gap: An offer this close to the ask (× listing) makes the seller positive.
        insult_fraction: Offers below this fraction of the listing are insulting low-balls.
        harden: Share of (listing − ask) the ask moves back up after an insult.
        walk_after: Insults after which the seller walks away.
        unlock_threshold: Addressing score that counts as an argument.
        unlock_margin: A turn *touches* an argument when its score reaches
            ``unlock_threshold`` and lies within this margin of the turn's best score (a side
            match far below the best one is not an argument).
        meaning_threshold: The sentence-level meaning reader's probability at which a turn
            argues a reason in any words (it then scores ``unlock_threshold``).
        reason_threshold: The same line for the reason the reader finds likeliest in the turn
            (above its near misses): an offer in the same sentence takes probability from it.
        focus_threshold: ... and for a reason the seller brought up in its last reply ("Full
            disclosure, the fan is loud." — "Given that, would you take $N?").
        tie_margin: Touched arguments within this margin of the best score are tied; a tie
            goes to the persona's own (strongest) concern. Only one argument is credited per
            turn: the best (after tie-breaking), with its share of the turn's one unit of
            credit when the turn touches several (split in proportion to their scores; about
            ``1/k`` for ``k`` arguments argued alike). An argument the seller has given all
            it will for (exhausted) yields to one the seller itself brought up that the turn
            also touches; otherwise the turn earns nothing.
        stuffing_mood: Mood lost by a turn that touches two or more arguments at once
            (multi-topic stuffing; event ``multi_topic``). Small on purpose: the turn's
            real cost is that its credit is split.
        proactive_credit: Share of an argument's gain it earns before the seller has voiced
            that concern (closed loop: an argument answering what the seller said it cares
            about counts in full; the same argument recited blind counts this much).
        anti_threshold: Anti-pattern score that counts as an insult.
        cave_prob: Probability of giving in to an offer below the acceptable price without a
            reason (the soft-seller bias; not justified).
        cave_growth: Added to ``cave_prob`` for every earlier offer without a reason.
        cave_min: Never gives in below this fraction of the listing.
        drift_prob: Probability of an extra concession without a reason on a bare turn.
        drift_step: Share of the gap that unreasoned concession takes (not justified).
        rapport_gain: Mood gained from a greeting or a friendly question (twice at most).
    """

    name: str
    floor_range: tuple[float, float]
    arg_gain: float
    off_weight: float
    bare_step: float
    close_gap: float
    positive_gap: float
    insult_fraction: float
    harden: float
    walk_after: int
    max_gain: float = 0.6
    unlock_threshold: float = 0.5
    unlock_margin: float = 0.3
    meaning_threshold: float = 0.3
    reason_threshold: float = 0.2
    focus_threshold: float = 0.1
    tie_margin: float = 0.02
    stuffing_mood: float = 0.05
    proactive_credit: float = 0.5
    anti_threshold: float = 0.6
    cave_prob: float = 0.0
    cave_growth: float = 0.0
    cave_min: float = 0.25
    drift_prob: float = 0.0
    drift_step: float = 0.0
    rapport_gain: float = 0.1

    def __post_init__(self) -> None:
        low, high = self.floor_range
        if not 0.0 < low <= high <= 1.0:
            raise ValueError(f"floor_range must satisfy 0 < low <= high <= 1, got {low, high}")
        if self.walk_after < 1:
            raise ValueError("walk_after must be >= 1")


_CB_TABLE = shipped_table("cb")

HARD = SellerPreset(
    name="hard",
    floor_range=seller_floor_range(_CB_TABLE, "hard"),
    arg_gain=0.3,
    off_weight=0.0,  # a hard seller is moved only by reasons it cares about
    bare_step=0.04,
    close_gap=0.015,
    positive_gap=0.06,
    insult_fraction=0.55,
    harden=0.5,
    walk_after=2,
)
SOFT = SellerPreset(
    name="soft",
    floor_range=seller_floor_range(_CB_TABLE, "soft"),
    arg_gain=0.45,
    off_weight=0.7,
    bare_step=0.12,
    close_gap=0.06,
    positive_gap=0.12,
    insult_fraction=0.45,
    harden=0.15,
    walk_after=5,
    max_gain=0.75,
    cave_prob=0.05,
    cave_growth=0.03,
    drift_prob=0.3,
    drift_step=0.3,
    rapport_gain=0.15,
)
SELLER_PRESETS = {"soft": SOFT, "hard": HARD}


def seller_preset(card: TaskCard, name: str) -> SellerPreset:
    """The shipped preset ``name`` with the card's ``[seller.presets.<name>]`` overrides.

    Raises:
        ValueError: Unknown preset name or field.
    """
    overrides = dict(card.extra.get("seller", {}).get("presets", {}).get(name, {}))
    if "floor_range" in overrides:  # TOML gives a list; the preset holds a tuple
        overrides["floor_range"] = tuple(float(v) for v in overrides["floor_range"])
    where = f"card {card.id!r}: seller.presets.{name}"
    return calibrated(SELLER_PRESETS, name, overrides, where, "seller")
