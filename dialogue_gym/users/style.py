"""The persona's surface style: openers, closers and casing around a reply.

A reply template says what the user means; :func:`add_style` dresses it in the persona's
style (:class:`~dialogue_gym.cards.card.Style`) without changing what it says, and
:func:`pick_unused` draws a wording not said yet this episode. Both the cognitive user's
:class:`~dialogue_gym.users.wording.TemplateWording` and the CraigslistBargain seller use them.
The reply kinds that decide how a reply is dressed (:data:`FILLERS`, :data:`CONCEDING`,
:data:`TURNS_AWAY`) live here too, with :func:`link_refusal`, which joins a no to the reaction
before it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from dialogue_gym.cards.card import Style
from dialogue_gym.users.meaning import split_sentences

_GREETS = re.compile(r"\W*(hi|hey|hello|good (morning|afternoon|evening))\b", re.I)
"""A reply that opens with a greeting: no opener comes before it."""


_ASSENTS = frozenset({"ok", "okay", "alright", "right", "sure", "yeah", "yes"})
"""Words of assent: one opening a reply after another reads as a stutter ("ok okay, ...")."""


def _starts_alike(first: str, second: str) -> bool:
    """Whether ``second`` opens with the first word of ``first``, or both with assent.

    Case aside; "ok okay, i know there's some competition" stutters as "Oh! Oh, ..." does
    (blind play round 14, CB seed 138).
    """
    word = re.match(r"\W*(\w+)", first)
    other = re.match(r"\W*(\w+)", second)
    if word is None or other is None:
        return False
    one, two = word.group(1).lower(), other.group(1).lower()
    return one == two or (one in _ASSENTS and two in _ASSENTS)


def _says_again(closer: str, text: str) -> bool:
    """Whether ``closer`` opens with a word (four letters or more) that ``text`` already says.

    "... Anyway, thanks, but no. Anyway!" (blind play round 11, P4G seed 103).
    """
    word = re.match(r"\W*(\w{4,})", closer)
    return word is not None and re.search(rf"\b{word.group(1)}\b", text, re.I) is not None


_SQUARES_UP = re.compile(r"\W*(look|listen)\b", re.I)
"""Openers that square up to an objection: not before a reply that gives ground ("Look.
Alright, if I control the flow, the kitchen won't drown."; round 16, Merchant seed 158)."""
_NOTES = re.compile(r"\W*(understood|i see|noted)\b", re.I)
"""Openers that take in a statement: not before the answer to a question ("Understood." to
"How have your weekends been going?"; round 16, Merchant seeds 153, 159)."""
_SORRY_LONG = re.compile(r"talk too much|rambl|i'?m a lot|unloading all this", re.I)
"""Closers that apologize for a long reply: only after one (round 16, Courier seed 151)."""
_LONG_REPLY = 25
"""Words from which a reply is long enough to apologize for."""
_LEADS_ON = re.compile(r"\W*(so|but|and|also|anyway|still)\b", re.I)
"""A reply that opens by going on from something said before."""


def add_style(
    text: str,
    style: Style,
    pick: Callable[[str, tuple[str, ...]], str],
    rng: np.random.Generator,
    *,
    asked: bool,
    closer: bool = True,
    turning_away: bool = False,
    gives_ground: bool = False,
) -> str:
    """Adds a persona's opener and closer (each sometimes) and its casing to a reply.

    Args:
        text: The reply.
        style: The persona's style (openers, closers, verbosity, casing).
        pick: Draws one of a key's options (the user's episode-aware picker).
        rng: The user's episode generator.
        asked: The other side asked a question: only then may a closer thank it for asking.
        closer: Whether a closer may follow (not after a reply that gives ground, whose
            closers would hedge it: "$0.25 it is. We'll see.").
        turning_away: The reply says no: only then may it end with one of the style's
            sign-offs ("Thank you for your time."), which close a conversation.
        gives_ground: The reply concedes or agrees: no opener that squares up to an
            objection ("Look. Alright, if I control the flow, ...").

    A reply that ends with a question takes no closer: the question hands the turn over
    ("Are those new people, though? I hope you understand.", blind play round 12, Merchant
    seed 116).
    """
    if rng.random() < 0.45:
        opener = pick("opener", style.openers)
        announces = opener.rstrip().endswith(":") and _LEADS_ON.match(text)
        misfits = (gives_ground and _SQUARES_UP.match(opener)) or (asked and _NOTES.match(opener))
        if _starts_alike(opener, text) or _GREETS.match(text) or announces or misfits:
            # "Oh! Oh, I didn't know ..." stutters; "I see. Hi!" or "Ok. Hey, thanks for
            # reaching out." reacts to nothing before the greeting (blind play round 13, CB
            # seeds 123, 125); "To be candid: So I don't have to choose ..." announces a
            # statement and goes on from something said before (round 16, P4G seed 159).
            opener = ""
        runs_on = bool(opener) and not opener.rstrip().endswith((".", "!", "?", ":"))
        if runs_on and not re.match(r"I\b", text):
            text = text[:1].lower() + text[1:]  # "Okay, so true, ..." not "Okay, so True, ..."
        text = opener + text
    if rng.random() < 0.35 * style.verbosity and closer and not text.rstrip().endswith("?"):
        # A sign-off mid-conversation says goodbye to someone still talking ("I don't have
        # spare cash right now. So you see why I'm careful. Thank you for your time." at the
        # first exchange, blind play round 12, Merchant seed 119).
        offs = style.sign_offs if turning_away else ()
        if offs and rng.random() < len(offs) / (len(offs) + len(style.closers)):
            ending = pick("sign_off", offs)
        else:
            ending = pick("closer", style.closers) if style.closers else ""
        if (
            (asked or not re.search(r"\bask", ending, re.I))
            and not _starts_alike(text, ending)
            and not _says_again(ending, text)
            and not (_SORRY_LONG.search(ending) and len(text.split()) < _LONG_REPLY)
        ):
            text = text.rstrip() + ending  # not "Thank you for your message. ... Thank you."
    return text.lower() if style.lowercase else text


def unsaid(used: set[str], key: str, options: tuple[str, ...]) -> list[int]:
    """The indices of ``options`` not said yet under ``key`` this episode (see ``used``).

    A wording is remembered by its text, not its place in ``options``: callers narrow a key's
    list turn by turn (a counter that did not move drops the wordings of a concession), and
    an index into one narrowing named another line in the next, so the seller said "You're
    almost there. $4,600 and we can wrap this up." twice running (blind play round 14, CB
    seeds 130 and 134).
    """
    return [i for i, text in enumerate(options) if f"{key}:{text}" not in used]


def pick_unused(
    rng: np.random.Generator,
    used: set[str],
    key: str,
    options: tuple[str, ...],
    prefer: Callable[[str], object] | None = None,
) -> str:
    """One of ``options`` at random, preferring those not used yet under ``key`` this episode.

    Args:
        rng: The user's episode generator.
        used: ``"<key>:<wording>"`` of the options used so far (updated).
        key: What the options are for (a reply kind, a concern's voice lines, ...).
        options: The wordings.
        prefer: Of the unused options, those it accepts come first when there are any.
    """
    fresh = unsaid(used, key, options)
    preferred = [i for i in fresh if prefer(options[i])] if prefer is not None else []
    fresh = preferred or fresh
    index = int(rng.choice(fresh)) if fresh else int(rng.integers(len(options)))
    used.add(f"{key}:{options[index]}")
    return options[index]


FILLERS = frozenset({"neutral", "inquiry_open", "greeting", "farewell", "repetition"})
"""Reply kinds said without the persona's opener and closer ("Go on." is not dressed up)."""
CONCEDING = frozenset({"agree", "positive", "resolved"})
"""Reply kinds that give ground: a persona's closer ("No offense.", "We'll see.", "If that's
true.") hedges a doubt and would contradict them ("$0.25 it is. We'll see.")."""
OPENING_ONLY = re.compile(
    r"\b(from the start|before we get into it|should mention first|doing fine, thanks)\b", re.I
)
"""Lines that fit only a first reply ("Before we get into it:" at the third exchange; blind play
round 13, P4G seeds 121, 126; "There's something I should mention first." at the fifth and "I'm
doing fine, thanks. What's on your mind?" at the third: round 18, P4G seeds 170, 175)."""
TURNS_AWAY = frozenset({"refuse", "refuse_concern", "pushback", "pushback_ask"})
"""Reply kinds that say no: after an acknowledgement they follow a "But"."""
AGREES = re.compile(r"\W*(yeah|yes|right|exactly|mm-hm|that'?s (it|exactly))\b", re.I)
"""A reaction that opens by agreeing with what the system said (no answer to a question)."""
ACCUSES = re.compile(
    r"\b(push\w*|pitch|lean on|hard sells?|rush\w*|cornered|guilt|nags?|urgent|sales calls?|"
    r"countdowns?|deadlines?)\b",
    re.I,
)
"""Words of the pressure worry that accuse the asker: after one polite ask the user gives its
need to decide alone instead ("I like space to think things over."), not "I get uncomfortable
when people lean on me about donations." (blind play round 13: P4G seeds 120, 121, 126,
Merchant 121, Courier 122), nor "Countdowns put me off." when nobody set one (round 15, P4G
seed 143)."""
EASED = re.compile(r"\b(back(ing|ed)? off|less (pushy|cornered)|not a hard sell)\b", re.I)
"""Thanks that presuppose a push before ("I appreciate you backing off a little."): said only
once the user was pushed or had said no, never to a first "no pressure" (round 15, P4G seed
146: "I feel a bit less cornered now, thanks." to a plain opt-out ask)."""
RESERVATION = re.compile(
    r"\b(still|though|yet)\b|not (fully|sure|quite|totally|convinced)|\bbut\b", re.I
)
"""A reaction to a partial answer that says what is still missing ("It still feels small.")."""
CONCEDES = re.compile(
    r"(?![^.?!]*\b(thank|appreciat))([^,.?!]{1,30}), but (?P<rest>.+)", re.I | re.S
)
"""A no that opens by granting the answer something ("That's something, but ...", "Maybe,
but ..."); a sentence that thanks is politeness, not a concession."""


def opening(template: str) -> str:
    """A template's first sentence, up to its first placeholder (``"Thanks for asking."``)."""
    first = split_sentences(template, min_words=1)[0]
    return first.split("{", 1)[0].strip() or first


def link_refusal(parts: list[str], keys: list[str]) -> None:
    """Links a no to the reaction before it, in place ("That's fair. But not this time.").

    The user took the answer in and still says no; two sentences with no link read as a
    reply stitched from two people.

    Args:
        parts: The reply's parts, in order (the second is rewritten).
        keys: Their reply kinds (a ``partial``/``resolved`` reaction, then a no:
            :data:`TURNS_AWAY`).
    """
    if len(parts) < 2 or keys[0] not in ("partial", "resolved") or keys[1] not in TURNS_AWAY:
        return
    second = parts[1]
    if not re.match(r"(But|I\b|I'm)", second):
        second = second[:1].lower() + second[1:]
    if second.startswith("But"):
        parts[1] = second
    elif re.search(r"\bstill\b", second, re.I):
        # "Okay, but I still make these decisions in my own time.": a linker would say
        # "still" twice ("Still, okay, but I still ..."; round 12, Merchant 112).
        parts[1] = second[:1].upper() + second[1:]
    elif match := CONCEDES.match(second):
        # After a reaction that granted the answer, a no granting it again says it twice:
        # "Okay. That's something concrete, at least. Still, that's something, but it doesn't
        # really help" (blind play round 14, ESConv seed 132).
        parts[1] = f"But {match['rest']}"
    elif re.search(r"\bbut\b", second, re.I):
        # "Still, thanks, but it's not for us." (after a reaction that says "Still," already,
        # "Anyway,": never "Still, it adds up. Still, I appreciate ...").
        linker = "Anyway" if re.search(r"\bstill\b", parts[0], re.I) else "Still"
        parts[1] = f"{linker}, {second}"
    else:
        # After a reaction that says what is still missing, a no that gives no other reason
        # follows from it: "Maybe, but I'd still be stuck with the admin. So no.", not
        # "... But no."
        follows = keys[1] == "refuse" and RESERVATION.search(parts[0])
        parts[1] = f"{'So' if follows else 'But'} {second}"


def fits(line: str, unfit: Sequence[re.Pattern[str]]) -> bool:
    """``line`` matches none of a persona's ``unfit`` patterns (``[[personas.unfit]]``)."""
    return not any(pattern.search(line) for pattern in unfit)


def fitting_reaction(asked: bool, reserve: bool, pushed: bool) -> Callable[[str], bool]:
    """Which reactions to an answer fit the reply being written.

    Args:
        asked: The turn asked about the user's story: no line that agrees (:data:`AGREES`).
        reserve: The reply goes on to say no for this worry: a line that says what is still
            missing (:data:`RESERVATION`).
        pushed: The user was pushed or said no earlier: only then thanks for easing off
            (:data:`EASED`).
    """

    def fits(line: str) -> bool:
        if asked and AGREES.match(line):
            return False
        if reserve and not RESERVATION.search(line):
            return False
        return pushed or not EASED.search(line)

    return fits
