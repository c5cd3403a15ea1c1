"""The validator's labelled arm: human replay with the corpus's own strategy labels read.

The simulated user reads what a system turn does twice over: by similarity to the card's
wording of each concern, and (where the card names one) with a learned reader of the corpus
strategies the turn uses, whose card strategy ``addresses`` some concerns. Where the corpus
labels the real system turns with those strategies (ESConv's supporter strategies, P4G's
annotated persuasion acts), the labelled arm replays the human turns again with the labels in
place of the learned reader: the user reads exactly the strategies the annotators saw. The
difference from plain human replay is what better perception of strategies could buy; what
remains is the user's dynamics (how a strategy read becomes a reason, and a reason a
decision). docs/validity.md, "The labelled arm", reports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from dialogue_gym.data import Dialogue
from dialogue_gym.validity.corpus import exchange_acts

__all__ = ["reading_labels", "strategy_labels"]


def strategy_labels(card: Any, dialogue: Dialogue, limit: int) -> list[frozenset[str] | None]:
    """Per exchange of the first ``limit``, the labels of its system turns naming card strategies.

    A label names a card strategy by its name or through the card's ``[corpus] label_aliases``.
    An exchange the corpus did not annotate gets ``None``; an annotated one whose labels name
    no strategy of the card gets an empty set (the annotators saw none of them). The list is
    empty when no exchange of the first ``limit`` names a strategy: the arm does not apply.
    """
    names = {strategy.name for strategy in card.strategies}
    aliases = card.corpus.label_aliases if card.corpus is not None else {}
    labels: list[frozenset[str] | None] = [
        frozenset(a for a in acts if aliases.get(a, a) in names) if acts else None
        for acts in exchange_acts(dialogue)[:limit]
    ]
    return labels if any(labels) else []


@contextlib.contextmanager
def reading_labels(
    env: Any, texts: Sequence[str], labels: Sequence[frozenset[str] | None]
) -> Iterator[None]:
    """Within the block, ``env``'s user reads ``texts[i]``'s strategies as ``labels[i]``.

    The user's appeal reader is swapped for a lookup of the turn's view (the text every reader
    of a turn sees); a turn that is not one of ``texts``, or whose label is ``None``, is read by
    the user's own reader as before. The reader is restored on exit.

    Raises:
        TypeError: The env's user has no utterance analyzer to read with.
    """
    analyzer = getattr(env.user, "analyzer", None)
    if analyzer is None:
        raise TypeError(f"{type(env.user).__name__} has no utterance analyzer to read labels with")
    by_view = {
        analyzer.view(text): label
        for text, label in zip(texts, labels, strict=False)
        if label is not None
    }
    own = analyzer.appeal_reader

    def read(view: str) -> frozenset[str]:
        label = by_view.get(view)
        if label is not None:
            return label
        return own(view) if own is not None else frozenset()

    analyzer.appeal_reader = read
    try:
        yield
    finally:
        analyzer.appeal_reader = own
