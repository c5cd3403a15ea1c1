"""The BDI record, re-exported beside the rest of the mind (it lives in dialogue_gym.bdi).

The record itself sits at the bottom of the package because task cards hold a target BDI and
the mind's encoders calibrate against the cards' sentences
(:mod:`dialogue_gym.mind.cosine_scale`): cards must not depend on the mind.
"""

from dialogue_gym.bdi import BDI

__all__ = ["BDI"]
