"""Write your own task card, register environments from it and play an episode.

Tasks are data: a TOML card holds the roles and goal, the target mental state, the success
judge's labels, the system's strategies (with templates), the user's latent concerns (how they
are voiced, what unlocks them, what makes them worse), the user's reply templates, speaking
styles and the ingredients of the persona bank. This one is a small made-up task — a community
garden organizer asks a neighbour to volunteer for one Saturday morning — with two concerns.
The shipped cards in ``envs/*.toml`` show every option with comments.

Run: ``python examples/custom_task_card.py [--encoder hashing] [--out DIR]``
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import dialogue_gym
from dialogue_gym.cards.card import load_card

GARDEN_CARD = r"""
schema_version = 1

[task]
id = "Garden"
title = "Community garden volunteering"
description = "A garden organizer asks a neighbour to volunteer for one Saturday morning."
system_role = "organizer"
user_role = "neighbour"
goal = "Get the neighbour to sign up for one Saturday morning, answering their concerns honestly."
user_goal = "Decide whether to give up a Saturday morning to volunteer at the garden."
max_exchanges = 6
# On-topic prototype sentences: a turn far from all of them (and with no cue) is off-topic.
domain = [
  "The community garden needs volunteers for planting on Saturday morning.",
  "Would you join us at the garden for a few hours this weekend?",
  "No gardening experience is needed; we show everyone what to do.",
]

[target]  # the mental state of a neighbour who has been won over
belief = "Volunteering at the garden is easy, useful and fits my week."
desire = "I want to help the garden and meet my neighbours."
intention = "I will volunteer this Saturday morning."
receptivity = 0.9
confidence = 0.8
valence = 0.6

[judge.success]  # the embedded judge's stance labels and their rewards
labels = { refused = -1.0, neutral = -0.5, positive = 0.1, agree = 1.0 }
threshold = 0.6
n = 3
question = "Has the neighbour agreed to volunteer at the garden?"

[cues]  # regexes over system turns (ask, greeting, pressure) and user replies (stance)
ask = ["\\bsign (you )?up\\b", "\\bjoin us\\b", "\\bvolunteer\\b.*\\?"]
greeting = ["\\bhello\\b", "\\bhi\\b"]
pressure = ["\\bmust\\b", "\\beveryone else\\b"]
reply_refuse = ["\\bno\\b", "\\bcan't\\b"]
reply_agree = ["\\bi'll (come|be there|do it)\\b", "\\bcount me in\\b"]
reply_positive = ["\\bmaybe\\b", "\\bsounds nice\\b"]

[[strategies]]
name = "greeting"
description = "Says hello and introduces the garden."
templates = ["Hi! I'm one of the organizers of the community garden down the street."]

[[strategies]]
name = "time-reassurance"
description = "Explains the commitment is small and flexible."
addresses = ["time"]
templates = [
  "It's just one Saturday morning, nine to noon, and you can leave whenever you need to.",
  "There's no ongoing commitment: come once and see if you like it.",
]

[[strategies]]
name = "skills-reassurance"
description = "Explains no experience is needed."
addresses = ["skills"]
templates = [
  "You don't need any gardening experience; we pair newcomers with someone who knows the beds.",
  "We provide gloves and tools, and the tasks are simple: watering, planting seedlings.",
]

[[strategies]]
name = "ask"
description = "Asks the neighbour to sign up."
asks = true
templates = ["Would you join us this Saturday morning? I can sign you up right now."]

[[concerns]]
id = "time"
facet = "operational"
resistance = 1
voice = ["My weekends are already pretty packed."]
unlock = ["It's only one morning and you can leave whenever you need to."]
unlock_cues = ["one (saturday )?morning", "leave whenever", "no ongoing commitment"]
anti = ["Everyone else on the street is coming, you must too."]
ack_partial = ["One morning might be doable."]
ack_resolved = ["Okay, a single morning fits."]
belief_unresolved = "Volunteering would eat up my weekend."
belief_resolved = "It is only one flexible morning."
desire_unresolved = "I want to keep my weekend free."

[[concerns]]
id = "skills"
facet = "psychological"
resistance = 1
voice = ["I don't know the first thing about gardening."]
unlock = ["No experience is needed; we show newcomers what to do."]
unlock_cues = ["no (gardening )?experience", "pair newcomers", "provide gloves"]
anti = ["It's easy, anyone who can't do it is just lazy."]
ack_partial = ["If someone shows me, maybe."]
ack_resolved = ["Alright, if you show me what to do, I can manage."]
belief_unresolved = "I would be useless in a garden."
belief_resolved = "Newcomers get shown what to do."
desire_unresolved = "I don't want to embarrass myself."

[replies]  # user replies by situation; {concern_voice} and {amount} are filled in
greeting = ["Oh, hello there."]
inquiry_open = ["What is it about?"]
inquiry_concern = ["Hmm. {concern_voice}"]
refuse = ["No, I don't think so."]
refuse_concern = ["No, sorry. {concern_voice}"]
neutral = ["I see."]
positive = ["That sounds nice, maybe."]
agree = ["Okay, count me in for Saturday."]
pushback = ["Please don't push me."]
repetition = ["You already said that."]
offtopic = ["Sorry, what does that have to do with the garden?"]
empty = ["Hello? Are you still there?"]

[[styles]]
id = "friendly"
tone = "friendly and a bit hesitant"
openers = ["", "Well, "]
closers = ["", " Thanks for asking."]

[personas]  # the deterministic persona bank
count = 20
seed = 11
first_names = ["Maya", "Tom", "Inez", "Raj"]
background_templates = ["{name}, {age}, works as a {occupation} and {situation}."]
slots.occupation = ["nurse", "bus driver", "accountant"]
slots.situation = ["has two young kids", "lives alone", "just moved to the street"]

[mind]  # BDI texts when no concern text applies
desire_open = "I want to hear what this is about."
refused = "I will not volunteer."
neutral = "I have not decided whether to volunteer."
positive = "I might volunteer."
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default=None, help="e.g. hashing (fast) or minilm")
    parser.add_argument("--out", type=Path, default=None, help="where to write garden.toml")
    args = parser.parse_args()
    env_kwargs = {} if args.encoder is None else {"encoder": args.encoder}

    with tempfile.TemporaryDirectory() as tmp:
        path = (args.out or Path(tmp)) / "garden.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(GARDEN_CARD, encoding="utf-8")
        card = load_card(str(path))  # validates the card; errors name the offending key
        print(f"loaded card {card.id!r}: strategies {', '.join(card.strategy_names)}")

        # One env per user preset, like the shipped catalog (ids follow Task-user-vN).
        for preset in ("soft", "hard"):
            env_id = f"Garden-{preset}-v0"
            if env_id not in dialogue_gym.registry:
                dialogue_gym.register(
                    env_id,
                    "dialogue_gym.env.dialogue_env:DialogueEnv",
                    description=f"community garden volunteering; {preset} users",
                    card=str(path),
                    user=preset,
                )

        env = dialogue_gym.make("Garden-hard", render_mode="ansi", **env_kwargs)
        _, infos = env.reset(seed=0)
        # A hand-written policy that listens: greet, ask, and answer the concern the user voices
        # (hard users credit an answer in full only once they have raised the concern).
        templates = {s.name: s.templates[0] for s in card.strategies}
        answers = {c: s.name for s in card.strategies for c in s.addresses}
        reply = ""
        for exchange in range(card.max_exchanges):
            if not env.agents:
                break
            raised = [c.id for c in card.concerns if any(v in reply for v in c.voice)]
            strategy = answers[raised[0]] if raised else ("greeting" if exchange == 0 else "ask")
            observations, rewards, _, _, infos = env.step({"system": templates[strategy]})
            reply = observations["system"]["history"][-1]["text"] if env.agents else ""
            info = infos["system"]
            print(
                f"exchange {info['exchange']}: {strategy:<18} r_S={rewards['system']:+.3f} "
                f"label={info['success_label']}"
            )
        print(env.render())
        episode = infos["system"].get("episode")
        print("success:", episode["success"] if episode else "(episode still running)")


if __name__ == "__main__":
    main()
