"""Task cards are validated field by field (issue 16, item 7).

The fuzz test injects bad values (NaN, inf, -1, huge, wrong type, booleans, catastrophic
regexes, unbounded format specs) into every field of the card schema and expects a
:class:`CardError` whose message names the card and the field; a coverage test checks that the
field table below names every field the shipped cards use.
"""

from __future__ import annotations

import copy
import functools
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import dialogue_gym
from dialogue_gym.cards.card import CardError, builtin_cards, load_card, parse_card
from dialogue_gym.env.registry import registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENVS = Path(__file__).resolve().parents[1] / "envs"
NAN, INF = math.nan, math.inf
WRONG_TYPES = ["0.5", True, [0.5], {"x": 1}]


def bad_ints(low: int, high: int) -> list[Any]:
    return [NAN, INF, -INF, low - 1, high + 1, 10**30, 2.5, 3.0, "6", True, False, [3], {}]


def bad_floats(low: float, high: float) -> list[Any]:
    return [NAN, INF, -INF, 1e308, -1e308, 10**400, low - 1, high + 1, *WRONG_TYPES]


BAD_STR = [1, 1.5, True, NAN, [], {}]
BAD_BOOL = [1, 0, "true", 1.0, NAN, [True]]
BAD_CHOICE = ["nope", 1, True, NAN, []]
BAD_TEXTS = ["text", 5, NAN, [1], [True], [NAN], [["x"]], {}]
BAD_TEXTS_NONEMPTY = [*BAD_TEXTS, []]
BAD_TABLE = [1, "x", [1, 2], True, NAN]
BAD_TABLES = [1, "x", [1], {}, True]
BAD_REGEXES = [
    ["^(a+)+$"],
    ["(a*)*"],
    ["(a|a)+"],
    ["(a|ab)+$"],
    ["(\\w+ ?)+$"],
    [".*a.*b"],
    ["\\w+\\s*\\w+x"],
    ["("],
    ["a{99999999999}"],
    ["x" * 5000],
    [5],
    "not a list",
]
BAD_TEMPLATES = [
    ["{name:>2000000000}"],
    ["{name:.5000}"],
    ["{age:09999d}"],
    ["{nope}"],
    ["{name.upper}"],
    ["{name[0]}"],
    ["{0}"],
    ["{}"],
    ["{"],
    ["}"],
    ["{name:{age}}"],
    ["{age:q}"],
    ["{name!z}"],
    [3],
]

# Every field of the schema: normalized path -> (card to inject into, bad values). "[]" is an
# entry of an array (the first is used), "*" any key of a table (the first is used).
FIELDS: dict[str, tuple[str, list[Any]]] = {
    "schema_version": ("p4g", [True, 2, 0, "1", 1.0, NAN, None]),
    "task": ("p4g", BAD_TABLE),
    "task.id": ("p4g", [*BAD_STR, "", "  "]),
    "task.title": ("p4g", BAD_STR),
    "task.description": ("p4g", BAD_STR),
    "task.system_role": ("p4g", [*BAD_STR, ""]),
    "task.user_role": ("p4g", [*BAD_STR, ""]),
    "task.goal": ("p4g", BAD_STR),
    "task.user_goal": ("p4g", BAD_STR),
    "task.user_model": ("cb", [*BAD_STR, ""]),
    "task.decision_trigger": ("ed", BAD_CHOICE),
    "task.plugin": ("p4g", [*BAD_STR, "", "not a module", "a..b", "mod:", "mod:a:b"]),
    "task.max_exchanges": ("p4g", bad_ints(1, 1000)),
    "task.domain": ("p4g", BAD_TEXTS_NONEMPTY),
    "target": ("p4g", BAD_TABLE),
    "target.belief": ("p4g", BAD_STR),
    "target.desire": ("p4g", BAD_STR),
    "target.intention": ("p4g", BAD_STR),
    "target.receptivity": ("p4g", bad_floats(0, 1)),
    "target.confidence": ("p4g", bad_floats(0, 1)),
    "target.valence": ("p4g", bad_floats(-1, 1)),
    "judge": ("p4g", BAD_TABLE),
    "judge.success": ("p4g", BAD_TABLE),
    "judge.success.labels": ("p4g", [*BAD_TABLE, {}]),
    "judge.success.labels.*": ("p4g", bad_floats(-1000, 1000)),
    "judge.success.threshold": ("p4g", bad_floats(-1, 1)),
    "judge.success.n": ("p4g", bad_ints(1, 64)),
    "judge.success.question": ("p4g", BAD_STR),
    "judge.success.kind": ("cb", [*BAD_STR, ""]),
    "judge.success.rule": ("ed", BAD_CHOICE),
    "judge.success.success_label": ("ed", [*BAD_STR, "no_such_label"]),
    "judge.success.decision_labels": ("esconv", [*BAD_TABLE, {"agree": "resolved"}]),
    "judge.success.decision_labels.*": ("esconv", [*BAD_STR, "no_such_label"]),
    "judge.success.inclusive": ("cb", BAD_BOOL),
    "cues": ("p4g", BAD_TABLE),
    "cues.*": ("p4g", BAD_REGEXES),
    "strategies": ("p4g", [*BAD_TABLES, []]),
    "strategies[].name": ("p4g", [*BAD_STR, ""]),
    "strategies[].description": ("p4g", BAD_STR),
    "strategies[].templates": ("p4g", BAD_TEXTS_NONEMPTY),
    "strategies[].addresses": ("p4g", [*BAD_TEXTS, ["no_such_concern"]]),
    "strategies[].asks": ("p4g", BAD_BOOL),
    "concerns": ("p4g", BAD_TABLES),
    "concerns[].id": ("p4g", [*BAD_STR, ""]),
    "concerns[].facet": ("p4g", BAD_CHOICE),
    "concerns[].description": ("p4g", BAD_STR),
    "concerns[].resistance": ("p4g", bad_ints(1, 100)),
    "concerns[].blocking_weight": ("p4g", bad_floats(0, 1)),
    "concerns[].situational": ("ed", bad_floats(-1, 1)),
    "concerns[].answered_with": ("p4g", [*BAD_TEXTS, ["no_such_concern"], ["affordability"]]),
    "concerns[].met_by_ask": ("esconv", BAD_BOOL),
    "concerns[].answered_by_meaning": ("ed", BAD_BOOL),
    "concerns[].voice": ("p4g", BAD_TEXTS_NONEMPTY),
    "concerns[].unlock": ("p4g", BAD_TEXTS_NONEMPTY),
    "concerns[].unlock_cues": ("p4g", BAD_REGEXES),
    "concerns[].anti": ("p4g", BAD_TEXTS_NONEMPTY),
    "concerns[].anti_cues": ("p4g", BAD_REGEXES),
    "concerns[].ack_partial": ("p4g", BAD_TEXTS_NONEMPTY),
    "concerns[].ack_resolved": ("p4g", BAD_TEXTS_NONEMPTY),
    "concerns[].belief_unresolved": ("p4g", BAD_STR),
    "concerns[].belief_resolved": ("p4g", BAD_STR),
    "concerns[].desire_unresolved": ("p4g", BAD_STR),
    "replies": ("p4g", BAD_TABLE),
    "replies.*": ("p4g", BAD_TEXTS_NONEMPTY),
    "styles": ("p4g", [*BAD_TABLES, []]),
    "styles[].id": ("p4g", [*BAD_STR, ""]),
    "styles[].tone": ("p4g", BAD_STR),
    "styles[].openers": ("p4g", BAD_TEXTS),
    "styles[].closers": ("p4g", BAD_TEXTS),
    "styles[].sign_offs": ("p4g", BAD_TEXTS),
    "styles[].lowercase": ("p4g", BAD_BOOL),
    "styles[].verbosity": ("p4g", bad_floats(0, 10)),
    "personas": ("p4g", BAD_TABLE),
    "personas.count": ("p4g", [*bad_ints(1, 10_000), 10**9]),
    "personas.seed": ("p4g", bad_ints(0, 2**63 - 1)),
    "personas.first_names": ("p4g", BAD_TEXTS_NONEMPTY),
    "personas.background_templates": ("p4g", [*BAD_TEXTS_NONEMPTY, *BAD_TEMPLATES]),
    "personas.ages": ("merchant", ["19-71", 5, [19], [19, 71, 80], [71, 19], {}]),
    "personas.ages[]": ("merchant", bad_ints(0, 150)),
    "personas.occupations": ("p4g", BAD_TEXTS_NONEMPTY),
    "personas.life_situations": ("p4g", BAD_TEXTS_NONEMPTY),
    "personas.giving_histories": ("p4g", BAD_TEXTS_NONEMPTY),
    "personas.slots": ("merchant", BAD_TABLE),
    "personas.slots.*": ("merchant", BAD_TEXTS_NONEMPTY),
    "personas.unfit": ("ed", BAD_TABLES),
    "personas.unfit[].fact": ("ed", [*BAD_STR, "", "no_such_slot"]),
    "personas.unfit[].when": ("ed", [*BAD_REGEXES, []]),
    "personas.unfit[].lines": ("ed", [*BAD_REGEXES, []]),
    "personas.paired": ("ed", BAD_TABLE),
    # Not a slot, the slot itself, or a slot of another length (first_names is no slot).
    "personas.paired.*": ("ed", [*BAD_STR, "", "no_such_slot", "rest", "first_names"]),
    "mind": ("p4g", BAD_TABLE),
    "mind.*": ("p4g", BAD_STR),
    "presets": ("merchant", BAD_TABLE),
    "presets.*": ("merchant", BAD_TABLE),
    "presets.*.*": ("merchant", [NAN, INF, -INF, 1e308, 10**400, "0.5", {}, [NAN]]),
    "listings": ("cb", BAD_TABLE),
    "listings.count": ("cb", [*bad_ints(1, 10_000), 10**9]),
    "listings.seed": ("cb", bad_ints(0, 2**63 - 1)),
    "listings.buyer_target_fraction": ("cb", [*bad_floats(0, 1), 0, 1]),
    "listings.categories": ("cb", [*BAD_TABLES, []]),
    "listings.categories[].id": ("cb", [*BAD_STR, ""]),
    "listings.categories[].unit": ("cb", BAD_STR),
    "listings.categories[].highlights": ("cb", BAD_TEXTS_NONEMPTY),
    "listings.categories[].flaws": ("cb", BAD_TEXTS_NONEMPTY),
    "listings.categories[].items": ("cb", [*BAD_TABLES, []]),
    "listings.categories[].items[].title": ("cb", [*BAD_STR, ""]),
    "listings.categories[].items[].low": ("cb", [*bad_floats(0, 1e9), 0, 10**12]),
    "listings.categories[].items[].high": ("cb", [*bad_floats(0, 1e9), 0, 1]),
    "listings.categories[].items[].flaws": ("cb", BAD_TEXTS_NONEMPTY),
    "seller": ("cb", BAD_TABLE),
    "seller.presets": ("cb", BAD_TABLE),
    "seller.presets.*": ("cb", BAD_TABLE),
    "seller.mind": ("cb", BAD_TABLE),
    "seller.mind.*": ("cb", BAD_STR),
    "seller.replies": ("cb", BAD_TABLE),
    "seller.replies.*": ("cb", BAD_TEXTS_NONEMPTY),
    "seller.unfit": ("cb", BAD_TABLE),
    "seller.unfit.*": ("cb", BAD_REGEXES),
    "catalog": ("p4g", BAD_TABLE),
    "catalog.soft": ("p4g", [*BAD_STR, "", "  "]),
    "catalog.hard": ("p4g", [*BAD_STR, "", "  "]),
    "brief": ("p4g", BAD_TABLE),
    "brief.facts": ("p4g", [*BAD_TEXTS, [""], ["  "]]),
    "agents": ("p4g", BAD_TABLE),
    "agents.family": ("p4g", BAD_CHOICE),
    "corpus": ("p4g", BAD_TABLE),
    "corpus.name": ("p4g", [*BAD_STR, "", "no_such_corpus"]),
    "corpus.train_split": ("cb", BAD_CHOICE),
    "corpus.sft_format": ("p4g", [*BAD_STR, "no_such_format"]),
    "corpus.planner_format": ("p4g", [*BAD_STR, "no_such_format"]),
    "corpus.label_aliases": ("p4g", BAD_TABLE),
    "corpus.label_aliases.*": ("p4g", [*BAD_STR, "no_such_strategy"]),
    "corpus.ask_reader": ("p4g", [*BAD_STR, "", "  ", "no_such_table"]),
    "corpus.appeal_reader": ("p4g", [*BAD_STR, "", "  ", "no_such_table"]),
    "llm": ("p4g", BAD_TABLE),
    "llm.judge_speakers": ("p4g", [*BAD_TEXTS_NONEMPTY, ["one"], ["a", "b", "c"], ["", "x"]]),
    "llm.judge_prompt": ("p4g", [*BAD_CHOICE, "deal", "support"]),
    "llm.annotator_hints": ("p4g", [5, NAN, [1], [True], [NAN], [["x"]], {}]),
    "llm.stance_meanings": ("p4g", [*BAD_TABLE, {"agree": "x"}]),
    "llm.stance_meanings.*": ("p4g", [*BAD_STR, "", "{nope}", "{user:>99999}"]),
}
_WILDCARDS = (
    "judge.success.labels",
    "judge.success.decision_labels",
    "cues",
    "replies",
    "mind",
    "personas.slots",
    "personas.paired",
    "presets",
    "presets.*",
    "seller.presets",
    "seller.mind",
    "seller.replies",
    "seller.unfit",
    "corpus.label_aliases",
    "llm.stance_meanings",
)


@functools.cache
def shipped(name: str) -> dict[str, Any]:
    return tomllib.loads((ENVS / f"{name}.toml").read_text("utf-8"))


def normalized(path: tuple[Any, ...]) -> str:
    """``("cues", "ask")`` -> ``"cues.*"``, ``("concerns", 0, "id")`` -> ``"concerns[].id"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += "[]"
        elif text in _WILDCARDS:
            text += ".*"  # a key of a table whose keys are free
        else:
            text = f"{text}.{part}" if text else part
    return text


def leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in a parsed card, sections and lists included."""
    entry = bool(path) and isinstance(path[-1], int) and isinstance(data, dict)
    found = [path] if path and not entry else []  # entries of arrays of tables are not fields
    if isinstance(data, dict):
        for key, value in data.items():
            found += leaves(value, (*path, key))
    elif isinstance(data, list) and data and isinstance(data[0], dict | int):
        for index, value in enumerate(data):  # every entry: optional fields may be in any
            found += leaves(value, (*path, index))
    return found


def concrete(data: dict[str, Any], field: str) -> tuple[Any, ...]:
    """The path of the first place in ``data`` matching the normalized ``field``."""
    for path in leaves(data):
        if normalized(path) == field:
            return path
    raise AssertionError(f"no {field} in the card")  # pragma: no cover - the table is checked


def field_name(data: dict[str, Any], path: tuple[Any, ...]) -> str:
    """The name the parser gives the field at ``path``.

    Entries of ``concerns``/``styles``/``strategies`` are named by their id (``concerns.price``)
    except for the id itself (``concerns[0].id``); other array entries by index.
    """
    parts: list[str] = []
    node: Any = data
    for i, part in enumerate(path):
        if isinstance(part, int):
            key = {"concerns": "id", "styles": "id", "strategies": "name"}.get(str(path[i - 1]))
            if i == 1 and key and i + 1 < len(path) and path[i + 1] != key:
                parts[-1] = f"{parts[-1]}.{node[part][key]}"
            else:
                parts[-1] += f"[{part}]"
        else:
            parts.append(str(part))
        node = node[part]
    return ".".join(parts)


def inject(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return data


def test_the_field_table_covers_every_field_of_the_shipped_cards() -> None:
    used = {normalized(path) for name in builtin_cards() for path in leaves(shipped(name))}
    assert used - set(FIELDS) == set()
    assert set(FIELDS) - used == set()  # and names no field that does not exist


def test_every_builtin_card_loads_and_every_env_builds() -> None:
    for name in builtin_cards():
        assert load_card(name).id
    assert len(registry) == 12
    for env_id in registry:
        dialogue_gym.make(env_id, encoder="hashing").close()


CASES = [(field, card, value) for field, (card, values) in FIELDS.items() for value in values]


@pytest.mark.parametrize(
    ("field", "card", "value"), CASES, ids=[f"{f}={v!r:.30}" for f, _, v in CASES]
)
def test_fuzz_every_field_gives_a_card_error_naming_it(field: str, card: str, value: Any) -> None:
    data = shipped(card)
    path = concrete(data, field)
    name = field_name(data, path)
    broken = inject(data, path, value)
    start = time.perf_counter()
    with pytest.raises(CardError) as info:
        parse_card(broken, source=f"envs/{card}.toml")
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert type(info.value) is CardError
    assert message.startswith(f"envs/{card}.toml: ")
    assert f" {name}" in message or f" {name}[" in message, (name, message)


@pytest.mark.parametrize(
    "value", [True, 2.9, "6", 0, -3, NAN, 10**9], ids=lambda v: f"max_exchanges={v!r}"
)
def test_max_exchanges_must_be_a_true_int(value: Any) -> None:
    with pytest.raises(
        CardError, match=r"task\.max_exchanges: expected a whole number in \[1, 1000\]"
    ):
        parse_card(inject(shipped("p4g"), ("task", "max_exchanges"), value))


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8", 10**6])
def test_make_refuses_a_bad_max_exchanges(value: Any) -> None:
    with pytest.raises(
        ValueError, match=f"max_exchanges must be a whole number.*got {re.escape(repr(value))}"
    ):
        dialogue_gym.make("P4G-hard", encoder="hashing", max_exchanges=value)
    assert dialogue_gym.make("P4G-hard", encoder="hashing", max_exchanges=1).max_exchanges == 1


def test_a_cue_regex_that_would_backtrack_forever_is_refused_before_it_runs() -> None:
    data = inject(shipped("p4g"), ("cues", "ask"), ["^(a+)+$"])
    with pytest.raises(CardError, match=r"cues\.ask\[0\]: regex '\^\(a\+\)\+\$' refused"):
        parse_card(data)
    data = inject(shipped("p4g"), ("concerns", 0, "anti_cues"), ["ok", "(x|x)+y"])
    concern = shipped("p4g")["concerns"][0]["id"]
    with pytest.raises(CardError, match=rf"concerns\.{concern}\.anti_cues\[1\]"):
        parse_card(data)


def test_a_huge_format_width_is_a_card_error_not_memory_error() -> None:
    data = inject(shipped("p4g"), ("personas", "background_templates"), ["{name:>2000000000}"])
    with pytest.raises(CardError, match=r"personas\.background_templates\[0\].*width/precision"):
        parse_card(data)
    ok = inject(shipped("p4g"), ("personas", "background_templates"), ["{name:>12} ({age:03d})"])
    assert parse_card(ok).personas.background_templates == ("{name:>12} ({age:03d})",)


def test_card_files_with_bad_toml_or_encoding_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("schema_version = 1\n[task\n", encoding="utf-8")
    with pytest.raises(CardError, match=f"{re.escape(str(broken))}: invalid TOML"):
        load_card(broken)
    latin = tmp_path / "latin.toml"
    latin.write_bytes("schema_version = 1\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(CardError, match=f"{re.escape(str(latin))}: not UTF-8"):
        load_card(latin)
    nan_card = tmp_path / "nan.toml"
    text = (ENVS / "p4g.toml").read_text("utf-8").replace("threshold = 0.6", "threshold = nan")
    nan_card.write_text(text, encoding="utf-8")
    with pytest.raises(CardError, match=f"{re.escape(str(nan_card))}: judge.success.threshold"):
        load_card(nan_card)


def test_seller_preset_values_are_finite_numbers() -> None:
    data = inject(shipped("cb"), ("seller", "presets", "hard"), {"arg_gain": NAN})
    with pytest.raises(CardError, match=r"seller\.presets\.hard\.arg_gain: expected a finite"):
        parse_card(data)
    data = inject(shipped("cb"), ("seller", "presets", "soft"), {"floor_range": [0.5, INF]})
    with pytest.raises(CardError, match=r"seller\.presets\.soft\.floor_range\[1\]"):
        parse_card(data)


def every_path(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in a parsed card, down to each entry of every list."""
    found = [path] if path else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += every_path(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += every_path(value, (*path, index))
    return found


@pytest.mark.parametrize("name", ["p4g", "cb", "ed", "merchant"])
def test_random_damage_anywhere_is_a_card_error_or_a_valid_card(name: str) -> None:
    import random

    rng = random.Random(16)
    paths = every_path(shipped(name))
    pool = [NAN, INF, -1, 10**40, True, "", "{", "(a+)+$", [], {}, [NAN], {"x": NAN}, None, 0.5]
    for _ in range(400):
        path, value = rng.choice(paths), rng.choice(pool)
        try:
            parse_card(inject(shipped(name), path, value), source="fuzz.toml")
        except CardError as exc:
            assert str(exc).startswith("fuzz.toml: ")
            assert "invalid card (" not in str(exc), (path, value, exc)  # not the safety net


def test_only_a_situational_concern_can_be_answered_by_meaning() -> None:
    data = shipped("p4g")
    data["concerns"][0]["answered_by_meaning"] = True
    concern = data["concerns"][0]["id"]
    with pytest.raises(CardError, match=rf"concerns\.{concern}\.answered_by_meaning: only a situ"):
        parse_card(data)
    validated = next(c for c in load_card("ed").concerns if c.id == "feeling_validated")
    assert validated.answered_by_meaning and validated.situational is not None


def test_a_persona_whose_story_a_line_does_not_fit_never_says_it() -> None:
    """Blind play round 16 (ED): "it's a relief ... I feel a lot lighter" about booking a trip,
    "how it felt right then" about a job that starts on Monday. ``[[personas.unfit]]`` leaves
    such lines out for the personas whose fact matches, and only for them."""
    import dialogue_gym

    card = load_card("ed")
    happy, coming = card.personas.unfit
    trip = next(s for s in card.personas.slots["situation"] if "trip to Japan" in s)
    dog = next(s for s in card.personas.slots["situation"] if "dog of fourteen years" in s)
    assert happy.applies({"situation": trip}) and coming.applies({"situation": trip})
    assert not happy.applies({"situation": dog}) and not coming.applies({"situation": dog})
    env = dialogue_gym.make("ED-hard")
    for seed in range(60):
        env.reset(seed=seed)
        wording = env.unwrapped.user.wording
        facts = env.unwrapped.user.persona.facts
        lines = [line for line in card.replies["agree"] if "lighter" in line]
        said = {wording._pick("agree", card.replies["agree"]) for _ in range(12)}
        if happy.applies(facts):
            assert not said & set(lines), (facts, said)
            return
    raise AssertionError("no happy speaker in 60 seeds")


def test_a_paired_slot_is_the_rest_of_its_leads_value() -> None:
    """``[personas.paired]``: an ED speaker's ``rest`` goes with *its* ``situation`` (the same
    index), and a card without pairs draws the same bank as before the field existed."""
    from dialogue_gym.users.persona import persona_bank

    card = load_card("ed")
    assert card.personas.paired == {"rest": "situation"}
    slots = card.personas.slots
    for persona in persona_bank(card)[:40]:
        index = slots["situation"].index(persona.facts["situation"])
        assert persona.facts["rest"] == slots["rest"][index]
    data = shipped("ed")
    short = inject(data, ("personas", "slots", "rest"), slots["rest"][:-1])
    with pytest.raises(CardError, match=r"personas\.paired\.rest: 63 values for the 64"):
        parse_card(short)
