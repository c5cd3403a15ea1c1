"""Outbound-sales baselines for the Merchant and Courier cards: ``scripted`` and ``pushy``.

Both read only the observation (the dialogue history) and the public task card; neither sees
the user's hidden concerns. :class:`ScriptedSalesAgent` is a model of a good hand-written sales
agent with its own answers per concern; :class:`PushySalesAgent` proposes every turn with hype
and urgency and gives no reasons.
"""

from __future__ import annotations

from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym_agents.baselines.listening import ListeningAgent
from dialogue_gym_agents.baselines.persuasion import PushyAgent

# Each task's fixed lines: the opening (rapport), the needs inquiry that introduces the offer
# with its key facts, the question after a bare refusal, and the proposals (never pushy, each
# with the trial or opt-out spelled out).
LINES: dict[str, dict[str, Any]] = {
    "Merchant": {
        "opening": (
            "Hi, this is Sam, your account manager on the platform's merchant team. Thanks for "
            "picking up. How has business been this week?"
        ),
        "probe": (
            "I'm calling about the Weekend Boost: 20% off dishes you choose on four weekends. "
            "What would make you hesitate about something like that?"
        ),
        "why_not": (
            "That's fair. Can I ask what's holding you back? I'd rather answer your real "
            "question than guess."
        ),
        "open_question": (
            "Before I go on, I'd rather hear it from you: what is your biggest worry about the "
            "Weekend Boost?"
        ),
        "anything_else": ("Okay. Anything else that gives you pause with the Weekend Boost?"),
        "asks": (
            "Would you like to join the Weekend Boost for the two trial weekends, on the dishes "
            "you pick?",
            "Shall I enroll the restaurant for the trial, with the daily cap set where you want "
            "it?",
            "Would you be open to trying it this weekend? You can switch it off in the app any "
            "day.",
        ),
    },
    "Courier": {
        "opening": (
            "Hi, this is Alex from the courier operations team. Thanks for taking the call. How "
            "have your shifts been going lately?"
        ),
        "probe": (
            "I'm calling about the Northgate regional bonus for couriers this week. Before I go "
            "into details, what would make you hesitate about something like that?"
        ),
        "why_not": (
            "Understood. Can I ask what's holding you back? I'd rather answer your actual "
            "question than guess."
        ),
        "open_question": (
            "Before I go on, I'd rather hear it from you: what is your biggest worry about the "
            "Northgate bonus?"
        ),
        "anything_else": ("Okay. Anything else that gives you pause with the Northgate bonus?"),
        "asks": (
            "Would you like to take the Northgate bonus for one block this week, on the day that "
            "suits you?",
            "Shall I book you a Northgate block? You can swap or drop it up to 12 hours before.",
            "Would you be up for trying one bonus block this week and seeing how it goes?",
        ),
    },
}

# The scripted agent's own answers to each concern (hand-written, not the simulator's
# prototypes): what a sensible account manager says when the concern comes up.
ANSWERS: dict[str, dict[str, tuple[str, ...]]] = {
    "Merchant": {
        "margin_squeeze": (
            "I hear you on margins. We fund 60% of each discount and you fund 40%, so on a "
            "typical $25 order your share is about two dollars, and your commission rate stays "
            "the same.",
            "You also choose the dishes: put the 20% on the ones with the best margin, like "
            "sides or drinks, and leave the rest at full price.",
            "To make it concrete: on a $30 order the discount is $6, of which $3.60 comes from us "
            "and $2.40 from you, and the free delivery is entirely on us.",
        ),
        "upfront_cost": (
            "There's no sign-up fee and nothing to pay up front. Your share is netted from your "
            "weekly payout, and only on promotion orders that actually came in.",
            "No deposit and no minimum spend: if no promotion orders arrive, it costs you "
            "nothing at all.",
            "The banner and the featured spot are paid by the platform too, so there's no "
            "advertising budget to find before the weekend.",
        ),
        "unclear_roi": (
            "Fair question. Comparable restaurants in your area saw about 30% more weekend "
            "orders, and around 40% of promotion orders came from first-time customers.",
            "About a quarter of those new customers reordered within a month at full price, and "
            "your dashboard shows new customers and net revenue every day, so you can check it "
            "on your own numbers.",
            "After the first weekend we can go through your real figures together, orders, new "
            "customers and net revenue, before you decide to continue.",
        ),
        "platform_trust": (
            "I understand, and I won't ask you to take my word for it. The terms are in writing "
            "in your merchant app before you confirm, and they're fixed for all four weekends.",
            "Every promotion order shows the discount split line by line on your statement, and "
            "if a charge doesn't match the written terms, we refund it.",
            "No hidden fees: I'm your named account manager, and if any charge on your "
            "statement ever doesn't match the terms, call my direct line and I'll fix it.",
        ),
        "past_promo": (
            "I'm sorry that happened. This one is different: the first two weekends are a "
            "trial, and you can pause or opt out any day with one tap in the app.",
            "You also set a daily cap on discounted orders, so it can't run away from you like "
            "last time, and there's no contract term or cancellation fee.",
            "After the first weekend we'll review the results together, and if it isn't "
            "working, you switch it off in the app. That's it.",
        ),
        "pressure": (
            "Understood, I'm not going to push you. It's your call, and no hard feelings if "
            "it's not for you.",
            "I'll keep this short and send you the details in writing, so you can decide in "
            "your own time.",
            "Take your time. The offer stays open in your merchant app, and whatever you decide "
            "is completely fine.",
        ),
        "kitchen_capacity": (
            "That matters. You can set a daily or hourly cap on promotion orders, and busy mode "
            "pauses them the moment the kitchen is full.",
            "If your evenings are packed, we can run the discount only in the quieter afternoon "
            "window, 2 to 5 pm, so your dinner rush stays as it is.",
            "Prep times stretch automatically when you're busy, and late orders during the "
            "campaign don't count against your rating.",
        ),
        "setup_effort": (
            "You won't have any admin. I can set it up on my end while we're on the phone; it "
            "takes about five minutes.",
            "There's no admin for you: your menu and prices stay as they are, and the discount "
            "is applied automatically at checkout.",
            "Our design team makes the banner from your existing photos, so there's nothing for "
            "you to prepare.",
        ),
        "staff_training": (
            "Nothing changes for your staff: orders come through the same tablet with a Weekend "
            "Boost tag and the discount already applied.",
            "Your team never handles the discount or refunds; the platform settles it in the "
            "payout, and there's a one-page guide for the weekend crew.",
            "Your staff won't need training: our support line is open all weekend, and I can "
            "walk your team through it in ten minutes on a video call.",
        ),
    },
    "Courier": {
        "fuel_costs": (
            "Fair point. On top of the $60 there's an $8 fuel allowance per block, and Northgate "
            "orders are short, about 1.4 miles on average, so you burn less fuel per order.",
            "After fuel, the bonus still adds roughly $50 to a four-hour block, and your first "
            "order can take you into the zone, so the trip out is paid.",
            "The zone is about three miles from the central hub; the fuel allowance covers that "
            "trip several times over.",
        ),
        "payout_terms": (
            "There are only two conditions: stay online in Northgate for the block and accept 7 "
            "of 10 offers. There's no minimum number of orders.",
            "A progress tracker in the app shows your online time and acceptance rate during the "
            "block, so you always know where you stand.",
            "The bonus is paid the following Monday with your regular earnings, as its own line "
            "in the app.",
        ),
        "bonus_trust": (
            "I understand. Once you book a block, the bonus amount is locked and can't be lowered, "
            "and you get a written confirmation in the app.",
            "If we cancel a block on our side, you still get half the bonus. We changed the rules "
            "after the complaints in spring.",
            "The bonus terms are locked in writing in the app when you book, and we can't "
            "change them afterwards; take a screenshot if you like.",
        ),
        "night_safety": (
            "Your safety comes first. The evening block ends at 9 pm, and the safety button in "
            "the app connects you to a live agent and shares your location.",
            "For your safety at night, you can decline any order to an address you're not "
            "comfortable with, and it won't count against your acceptance rate.",
            "If evenings don't feel right, the 11 am to 3 pm block pays the same bonus in "
            "daylight, and most orders are on the busy, well-lit main streets.",
        ),
        "pressure": (
            "Understood, I'm not going to push you. It's your call, and no hard feelings if it "
            "doesn't suit you.",
            "I'll send the details in the app so you can decide in your own time.",
            "Take your time. You decide your own hours; this is just an option if it helps.",
        ),
        "schedule_conflict": (
            "You pick the block that fits: 11 am to 3 pm or 5 to 9 pm, any day from Thursday to "
            "Sunday, and one block is enough for the bonus.",
            "If your week changes, you can swap or drop a booked block up to 12 hours before, "
            "with no penalty.",
            "You don't have to do all of them; a single weekend block works if weekdays are full.",
        ),
        "distance_home": (
            "Your first order of the block can be a pickup near your usual area that heads into "
            "Northgate, so the trip over is paid.",
            "In the last half hour, the heading-home filter sends you orders in the direction of "
            "your home, so you're not riding back empty.",
            "The clock starts once you're in the zone, and you can start from wherever your "
            "previous order ends.",
        ),
        "vehicle_fit": (
            "Northgate is flat and compact, and bike and scooter couriers get a shorter delivery "
            "radius there, so trips stay within range.",
            "For e-bikes, there's a charging point at the partner hub on Market Street if your "
            "battery runs low.",
            "Cars get the longer trips and bikes the short ones, so the zone works for every "
            "vehicle type.",
        ),
        "unfamiliar_area": (
            "The app gives turn-by-turn directions in Northgate, with building entrance notes "
            "from other couriers.",
            "Most restaurants there are clustered around Market Street, and the zone guide has "
            "pickup spots and parking tips.",
            "There's a zone lead you can message during the block if you get stuck.",
        ),
    },
}

# Concerns the scripted agent raises on its own when nothing is pending (the offer's key facts).
PROACTIVE: dict[str, tuple[str, ...]] = {
    "Merchant": ("margin_squeeze", "past_promo", "kitchen_capacity"),
    "Courier": ("fuel_costs", "schedule_conflict", "night_safety"),
}

# The pushy agent's proposals: hype and urgency, no reasons.
PUSHY: dict[str, tuple[str, ...]] = {
    "Merchant": (
        "Hi! The Weekend Boost is a no-brainer. Can I sign you up right now?",
        "Every restaurant on your street has already joined. Shall I enroll you today before "
        "the spots are gone?",
        "Trust me, this will blow up your sales. Just say yes and I'll add you now.",
        "Last chance! The offer closes tonight. Are you in?",
        "Come on, don't miss out. Would you like to join right now?",
        "You'd be crazy to pass on this. Let's get you enrolled immediately.",
        "Your competitors are already in and you'll fall behind. Can I sign you up today?",
        "I'll keep calling until you say yes, so let's just sign you up now.",
    ),
    "Courier": (
        "Hey! The Northgate bonus is easy money. Can I lock you in right now?",
        "Spots are going fast and every courier is grabbing them. Will you take the bonus today?",
        "Trust me, you'll make a killing. Just say yes and I'll book your blocks now.",
        "Last chance! The bonus closes tonight. Are you in?",
        "Come on, don't miss out. Would you like to accept it right now?",
        "You'd be crazy to pass on free money. Let's get you booked immediately.",
        "Everyone else in your area has already signed up. Can I put you down today?",
        "I'll keep messaging until you say yes, so let's just book it now.",
    ),
}


def _table(table: dict[str, Any], card: TaskCard, what: str) -> Any:
    if card.id not in table:
        raise ValueError(f"no {what} for task {card.id!r}; the sales agents cover {sorted(table)}")
    return table[card.id]


class ScriptedSalesAgent(ListeningAgent):
    """A sensible hand-written outbound sales agent for the Merchant and Courier cards.

    The closed loop of :class:`ListeningAgent` with this module's tables: it opens with
    rapport, asks what would make the user hesitate about the offer, answers the concern the
    user raises with its own concrete reasons (:data:`ANSWERS`) until the user signals it is
    settled, checks for anything else, and proposes enrollment when nothing raised is pending.

    Args:
        card: The task card (``Merchant`` or ``Courier``).
        seed: Default seed (the agent is deterministic; kept for the interface).
        encoder: Encoder used to recognize raised concerns.
        detect_threshold: Cosine similarity at which a reply sentence raises a concern.
        **kwargs: Other agent options of the evaluation harness (ignored).
    """

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        encoder: str | Encoder = "minilm",
        detect_threshold: float = 0.55,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            card,
            _table(LINES, card, "lines"),
            _table(ANSWERS, card, "answers"),
            _table(PROACTIVE, card, "proactive list"),
            seed,
            encoder,
            detect_threshold,
        )


class PushySalesAgent(PushyAgent):
    """Proposes enrollment every turn with hype and urgency, and never gives a reason.

    Args:
        card: The task card (``Merchant`` or ``Courier``).
        seed: Unused (the agent is deterministic; kept for the interface).
        **kwargs: Other agent options of the evaluation harness (ignored).
    """

    def __init__(self, card: TaskCard, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(card, seed, lines=_table(PUSHY, card, "pushy lines"))
