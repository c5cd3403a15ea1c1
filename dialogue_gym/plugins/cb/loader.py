"""CraigslistBargain (He et al., EMNLP 2018): loaders for its dialogue and scenario formats.

Formats:

- ``hf``: the Hugging Face ``craigslist_bargains`` JSON Lines export (``train.jsonl``,
  ``validation.jsonl``, ``test.jsonl``; 597 validation and 838 test dialogues here). Each
  line holds ``agent_info`` (``Role``, ``Target``, ``Bottomline`` per agent), ``agent_turn``,
  ``dialogue_acts`` (``intent``, ``price``), ``utterance`` and ``items`` (per agent). Every
  entry is a turn; offer/accept/reject/quit events have an empty text. The act is the
  rule-based ``intent`` (``None`` where it is empty, as everywhere in the test split).
- ``cocoa``: the original CoCoA ``parsed.json`` release (a JSON list of
  ``{"uuid", "scenario": {"kbs": [...]}, "events": [...]}``), as :func:`fetch
  <dialogue_gym.data.fetch.fetch>` saves it (``train.json``, ``dev.json``, ``test.json``). The
  act is the event's ``metadata.intent`` or, for a non-message event without one, its action
  (``offer``, ``accept``, ``reject``, ``quit``).
- ``ppdpp``: PPDPP's ``cb-{train,valid,test}.txt`` (JSON Lines; 188 valid, 188 test here) with
  ``item_name`` (the category), ``buyer_item_description``, ``buyer_price``,
  ``seller_item_description``, ``seller_price`` and ``dialog`` turns
  ``{"speaker": "sys" (buyer) | "usr" (seller), "text", "strategy"}``; the act is the strategy
  (Zhou et al. 2019 dialogue acts: greet, inquire, inform, propose, counter, counter-noprice,
  confirm, affirm, deny, agree, disagree). It has no title: ``situation["title"]`` is ``None``.
- ``scenarios``: third-party scenario tables ``{train,validation,test}_scenarios.csv`` (no
  dialogues: ``turns`` is empty). They are the only *train* material here (5,202 scenarios)
  and serve as the train pool of episode seeds. Their ``description`` is the *buyer's* view of
  the listing (checked on validation against the HF file), so ``situation["description"]``
  holds that shorter text for this format.

Roles: buyer → system, seller → user. Situation: ``title``, ``description`` (the seller's
listing), ``category``, ``listing_price``, ``buyer_target``, ``seller_target``, plus
``buyer_description`` where the format has a separate buyer view (and the scenario tables'
extra columns under their own names) and, for ``hf`` and ``cocoa``, ``turn_prices``: the
rule-based ``dialogue_acts.price`` (``cocoa``: the event's ``metadata.price``) of each turn
(``None`` where it has none; the price of an ``offer`` event is the offered price).
Profile (the seller): ``role`` (``"seller"``), ``title``, ``description``,
``listing_price``, ``target`` (the seller's target price) and ``bottomline`` (``None`` where
absent).

Ids: ``uuid`` (cocoa), ``scenario_id`` (scenarios), else ``<format>-<split>-<index>`` (the
file stem instead of the split where the name names none). Order:
train, valid, test, each in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dialogue_gym.data._io import (
    as_float,
    as_int,
    as_str,
    canonical_split,
    ensure_not_empty,
    iter_csv,
    iter_json_container,
    iter_jsonl,
    pick_format,
    read_head,
    require,
    walk,
)
from dialogue_gym.data.errors import CorpusError
from dialogue_gym.data.records import Dialogue, Turn
from dialogue_gym.plugins.cb.release import FOLDER_NAMES, RELEASE, TITLE

__all__ = [
    "FOLDER_NAMES",
    "FORMATS",
    "RELEASE",
    "TITLE",
    "detect",
    "load",
    "load_cocoa",
    "load_hf",
    "load_ppdpp",
    "load_scenarios",
]


CORPUS = "cb"
FORMATS = ("cocoa", "hf", "ppdpp", "scenarios")
"""The formats, in the order :func:`load` prefers them."""

SPLIT_ORDER = ("train", "valid", "test")
_ROLES = {"buyer": "system", "seller": "user"}
_SCENARIO_COLUMNS = (
    "scenario_id",
    "split_type",
    "category",
    "list_price",
    "buyer_target",
    "seller_target",
    "title",
    "description",
)


def _situation(
    *,
    title: str | None,
    description: str,
    category: str,
    listing_price: float | None,
    buyer_target: float | None,
    seller_target: float | None,
    bottomline: Any = None,
    buyer_description: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    situation: dict[str, Any] = {
        "title": title,
        "description": description,
        "category": category,
        "listing_price": listing_price,
        "buyer_target": buyer_target,
        "seller_target": seller_target,
    }
    if buyer_description is not None:
        situation["buyer_description"] = buyer_description
    if bottomline in ("None", ""):
        bottomline = None
    profile = {
        "role": "seller",
        "title": title,
        "description": description,
        "listing_price": listing_price,
        "target": seller_target,
        "bottomline": bottomline,
    }
    return profile, situation


def _split_from_name(file: Path, prefixes: Sequence[str] = ()) -> str:
    """The split named by the file or its folder (``cb-valid.txt``: valid), else unknown."""
    stem = file.stem.lower()
    for prefix in prefixes:
        stem = stem.removeprefix(prefix)
    stem = stem.removesuffix("_scenarios")
    return canonical_split(stem) or canonical_split(file.parent.name) or "unknown"


def _make_id(fmt: str, split: str, file: Path, index: int) -> str:
    return f"{fmt}-{split if split != 'unknown' else file.stem}-{index:04d}"


def _split_rank(split: str) -> int:
    return SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER)


def _files(
    path: Path, test: Callable[[Path], bool], what: str, prefixes: Sequence[str] = ()
) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such file or folder ({what})")
    files = [p for p in walk(path) if test(p)]
    if not files:
        raise FileNotFoundError(f"{path}: no {what} found inside")
    return sorted(files, key=lambda p: (_split_rank(_split_from_name(p, prefixes)), str(p)))


def _seat_indices(roles: Any, path: Path, line: int, what: str) -> tuple[int, int]:
    if not isinstance(roles, list) or sorted(roles) != ["buyer", "seller"]:
        raise CorpusError(
            path, line, f"{what}: expected roles ['buyer', 'seller'], found {roles!r}"
        )
    return roles.index("buyer"), roles.index("seller")


def _pick(values: Any, index: int, path: Path, line: int, what: str) -> Any:
    if not isinstance(values, list) or len(values) <= index:
        raise CorpusError(path, line, f"{what}: expected one value per agent, found {values!r:.80}")
    return values[index]


# -- format: hf ------------------------------------------------------------------------------------


def _is_hf(p: Path) -> bool:
    return p.suffix == ".jsonl" and canonical_split(p.stem) is not None


def load_hf(path: str | Path) -> list[Dialogue]:
    """Loads the Hugging Face JSON Lines export.

    Args:
        path: One split file (``validation.jsonl`` …) or a folder holding them.

    Returns:
        The dialogues: train, valid, test, each in file order.
    """
    dialogues = []
    for file in _files(Path(path), _is_hf, "CB HF JSON Lines files (train/validation/test.jsonl)"):
        split = _split_from_name(file)
        for index, (line, record) in enumerate(iter_jsonl(file)):
            what = f"dialogue {index}"
            info = require(record, "agent_info", file, line, what)
            buyer, seller = _seat_indices(require(info, "Role", file, line, what), file, line, what)
            targets = require(info, "Target", file, line, what)
            items = require(record, "items", file, line, what)
            acts = require(record, "dialogue_acts", file, line, what)
            agents = require(record, "agent_turn", file, line, what)
            utterances = require(record, "utterance", file, line, what)
            intents = require(acts, "intent", file, line, what)
            if not (
                isinstance(agents, list)
                and isinstance(utterances, list)
                and isinstance(intents, list)
                and len(agents) == len(utterances) == len(intents)
            ):
                raise CorpusError(
                    file,
                    line,
                    f"{what}: agent_turn, utterance and dialogue_acts.intent must be lists of "
                    f"one length",
                )
            roles = info["Role"]
            turns = []
            for t, (agent, text, intent) in enumerate(
                zip(agents, utterances, intents, strict=True)
            ):
                seat = _pick(
                    roles, as_int(agent, file, line, f"{what}, agent_turn[{t}]"), file, line, what
                )
                turns.append(
                    Turn(
                        _ROLES[seat],
                        as_str(text, file, line, f"{what}, utterance[{t}]").strip(),
                        as_str(intent, file, line, f"{what}, intent[{t}]").strip() or None,
                    )
                )
            profile, situation = _situation(
                title=as_str(
                    _pick(require(items, "Title", file, line, what), seller, file, line, what),
                    file,
                    line,
                    what,
                ),
                description=as_str(
                    _pick(
                        require(items, "Description", file, line, what), seller, file, line, what
                    ),
                    file,
                    line,
                    what,
                ),
                buyer_description=as_str(
                    _pick(items["Description"], buyer, file, line, what), file, line, what
                ),
                category=as_str(
                    _pick(require(items, "Category", file, line, what), seller, file, line, what),
                    file,
                    line,
                    what,
                ),
                listing_price=as_float(
                    _pick(require(items, "Price", file, line, what), seller, file, line, what),
                    file,
                    line,
                    f"{what}, items.Price",
                ),
                buyer_target=as_float(_pick(targets, buyer, file, line, what), file, line, what),
                seller_target=as_float(_pick(targets, seller, file, line, what), file, line, what),
                bottomline=_pick(info.get("Bottomline", [None, None]), seller, file, line, what),
            )
            situation["turn_prices"] = _turn_prices(acts.get("price"), len(turns))
            dialogues.append(
                Dialogue(
                    CORPUS,
                    _make_id("hf", split, file, index),
                    split,
                    tuple(turns),
                    profile,
                    situation,
                )
            )
    return dialogues


def _turn_prices(prices: Any, n_turns: int) -> tuple[float | None, ...]:
    """``dialogue_acts.price`` per turn (``None`` where there is none: -1, missing, bad)."""
    if not isinstance(prices, list) or len(prices) != n_turns:
        return (None,) * n_turns
    return tuple(_price(p) for p in prices)


def _price(value: Any) -> float | None:
    """A non-negative number as a float; ``None`` for -1, NaN, missing or anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value) if value >= 0 else None
    return None


# -- format: cocoa ---------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _is_cocoa(p: Path) -> bool:
    if p.suffix != ".json" or not (canonical_split(p.stem) is not None or p.name == "parsed.json"):
        return False
    try:
        with p.open(encoding="utf-8-sig", errors="replace") as handle:
            return handle.read(256).lstrip().startswith("[")
    except OSError:
        return False


def load_cocoa(path: str | Path) -> list[Dialogue]:
    """Loads the original CoCoA ``parsed.json`` release.

    Args:
        path: One file (``train.json``, ``dev.json``, ``test.json``, or ``parsed.json`` in a
            folder named after its split) or a folder holding them.

    Returns:
        The dialogues: train, valid, test, each in file order.
    """
    dialogues = []
    for file in _files(Path(path), _is_cocoa, "CoCoA parsed JSON files (train/dev/test.json)"):
        split = _split_from_name(file)
        for line, index, record in iter_json_container(file, expect="list"):
            what = f"dialogue {index}"
            scenario = require(record, "scenario", file, line, what)
            kbs = require(scenario, "kbs", file, line, f"{what}, scenario")
            if not isinstance(kbs, list) or len(kbs) != 2:
                raise CorpusError(file, line, f"{what}: scenario.kbs must list the two agents")
            personal = [require(kb, "personal", file, line, f"{what}, kb") for kb in kbs]
            items = [require(kb, "item", file, line, f"{what}, kb") for kb in kbs]
            roles = [require(p, "Role", file, line, f"{what}, kb.personal") for p in personal]
            buyer, seller = _seat_indices(roles, file, line, what)
            events = require(record, "events", file, line, what)
            if not isinstance(events, list):
                raise CorpusError(file, line, f"{what}: 'events' must be a list")
            turns = []
            prices: list[float | None] = []
            for e, event in enumerate(events):
                agent = as_int(
                    require(event, "agent", file, line, f"{what}, event {e}"),
                    file,
                    line,
                    f"{what}, event {e}, agent",
                )
                if agent not in (0, 1):
                    raise CorpusError(file, line, f"{what}, event {e}: agent must be 0 or 1")
                data = event.get("data")
                metadata = event.get("metadata") or {}
                intent = metadata.get("intent") if isinstance(metadata, dict) else None
                action = event.get("action")
                act = intent or (action if action not in (None, "message") else None)
                turns.append(
                    Turn(_ROLES[roles[agent]], data.strip() if isinstance(data, str) else "", act)
                )
                # An offer event carries its price in data; a message its parsed price (as the
                # HF export's dialogue_acts.price).
                price = data.get("price") if isinstance(data, dict) else None
                if price is None and isinstance(metadata, dict):
                    price = metadata.get("price")
                prices.append(_price(price))
            seller_item = items[seller]
            profile, situation = _situation(
                title=_text(seller_item.get("Title")),
                description=_text(seller_item.get("Description")),
                buyer_description=_text(items[buyer].get("Description")),
                category=_text(seller_item.get("Category") or scenario.get("category")),
                listing_price=as_float(seller_item.get("Price"), file, line, f"{what}, Price"),
                buyer_target=as_float(personal[buyer].get("Target"), file, line, what),
                seller_target=as_float(personal[seller].get("Target"), file, line, what),
                bottomline=personal[seller].get("Bottomline"),
            )
            situation["turn_prices"] = tuple(prices)
            uuid = record.get("uuid") or _make_id("cocoa", split, file, int(index))
            dialogues.append(Dialogue(CORPUS, str(uuid), split, tuple(turns), profile, situation))
    return dialogues


# -- format: ppdpp ---------------------------------------------------------------------------------


def _is_ppdpp(p: Path) -> bool:
    return (
        p.suffix == ".txt" and p.name.startswith("cb-") and canonical_split(p.stem[3:]) is not None
    )


def load_ppdpp(path: str | Path) -> list[Dialogue]:
    """Loads PPDPP's ``cb-{train,valid,test}.txt``.

    Args:
        path: One split file or a folder holding them.

    Returns:
        The dialogues: train, valid, test, each in file order.
    """
    dialogues = []
    for file in _files(Path(path), _is_ppdpp, "PPDPP cb-*.txt files", prefixes=("cb-",)):
        split = _split_from_name(file, ("cb-",))
        for index, (line, record) in enumerate(iter_jsonl(file)):
            what = f"dialogue {index}"
            dialog = require(record, "dialog", file, line, what)
            if not isinstance(dialog, list):
                raise CorpusError(file, line, f"{what}: 'dialog' must be a list of turns")
            turns = []
            for t, item in enumerate(dialog):
                where = f"{what}, turn {t}"
                speaker = require(item, "speaker", file, line, where)
                if speaker not in ("sys", "usr"):
                    raise CorpusError(
                        file, line, f"{where}: speaker must be 'sys' (buyer) or 'usr' (seller)"
                    )
                text = as_str(require(item, "text", file, line, where), file, line, where)
                strategy = item.get("strategy")
                act = strategy.strip() or None if isinstance(strategy, str) else None
                turns.append(Turn("system" if speaker == "sys" else "user", text.strip(), act))
            seller_price = as_float(
                require(record, "seller_price", file, line, what),
                file,
                line,
                f"{what}, seller_price",
            )
            profile, situation = _situation(
                title=None,
                description=as_str(
                    require(record, "seller_item_description", file, line, what), file, line, what
                ),
                buyer_description=as_str(
                    require(record, "buyer_item_description", file, line, what), file, line, what
                ),
                category=as_str(require(record, "item_name", file, line, what), file, line, what),
                listing_price=seller_price,
                buyer_target=as_float(
                    require(record, "buyer_price", file, line, what),
                    file,
                    line,
                    f"{what}, buyer_price",
                ),
                seller_target=seller_price,
            )
            dialogues.append(
                Dialogue(
                    CORPUS,
                    _make_id("ppdpp", split, file, index),
                    split,
                    tuple(turns),
                    profile,
                    situation,
                )
            )
    return dialogues


# -- format: scenarios -----------------------------------------------------------------------------


def _is_scenarios(p: Path) -> bool:
    return p.suffix == ".csv" and p.stem.endswith("_scenarios")


def _typed(value: str) -> Any:
    text = value.strip()
    if text in ("True", "False"):
        return text == "True"
    if text == "":
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text else number


def load_scenarios(path: str | Path) -> list[Dialogue]:
    """Loads the derived scenario tables (``{train,validation,test}_scenarios.csv``).

    Args:
        path: One table or a folder holding them.

    Returns:
        One turn-less :class:`~dialogue_gym.data.Dialogue` per scenario: train, valid, test.
    """
    dialogues = []
    for file in _files(Path(path), _is_scenarios, "*_scenarios.csv tables"):
        for line, row in iter_csv(file, _SCENARIO_COLUMNS):
            split = canonical_split(row["split_type"])
            if split is None:
                raise CorpusError(
                    file,
                    line,
                    f"split_type must be train/validation/test, found {row['split_type']!r}",
                )
            profile, situation = _situation(
                title=row["title"].strip(),
                description=row["description"].strip(),
                category=row["category"].strip(),
                listing_price=as_float(row["list_price"], file, line, "list_price"),
                buyer_target=as_float(row["buyer_target"], file, line, "buyer_target"),
                seller_target=as_float(row["seller_target"], file, line, "seller_target"),
            )
            for column, value in row.items():
                if column not in _SCENARIO_COLUMNS:
                    situation[column] = _typed(value)
            dialogues.append(
                Dialogue(CORPUS, row["scenario_id"].strip(), split, (), profile, situation)
            )
    return dialogues


# -- detection and dispatch ------------------------------------------------------------------------


def detect(folder: str | Path) -> dict[str, list[Path]]:
    """The CB files under ``folder``, by format."""
    found: dict[str, list[Path]] = {}
    tests = (
        ("cocoa", _is_cocoa),
        ("hf", _is_hf),
        ("ppdpp", _is_ppdpp),
        ("scenarios", _is_scenarios),
    )
    for p in walk(Path(folder)):
        for fmt, test in tests:
            if test(p):
                found.setdefault(fmt, []).append(p)
                break
    return found


def notes(folder: str | Path) -> list[str]:
    """Remarks on the CB files under ``folder``."""
    found = detect(folder)
    if "scenarios" in found and not {"cocoa", "hf", "ppdpp"} & set(found):
        return ["only scenario tables: no dialogues (turns are empty)"]
    return []


LOADERS: dict[str, Callable[..., list[Dialogue]]] = {
    "cocoa": load_cocoa,
    "hf": load_hf,
    "ppdpp": load_ppdpp,
    "scenarios": load_scenarios,
}


def format_of(file: Path) -> str:
    """The format of one CB file, from its name or its first bytes."""
    ensure_not_empty(file)
    if _is_scenarios(file):
        return "scenarios"
    if _is_ppdpp(file):
        return "ppdpp"
    if file.suffix == ".json":
        if file.name in ("dataset_info.json", "craigslist-schema.json"):
            raise CorpusError(file, None, "this is metadata, not dialogues")
        return "cocoa"
    if file.suffix in (".jsonl", ".txt"):
        first = read_head(file, 4096, "JSON Lines").lstrip()[:200]
        return "ppdpp" if '"dialog"' in first or '"item_name"' in first else "hf"
    raise CorpusError(
        file,
        None,
        "not a recognised CB file; expected train/validation/test.jsonl, cb-*.txt, "
        "*_scenarios.csv or CoCoA train/dev/test.json",
    )


def load(path: str | Path, format: str | None = None) -> list[Dialogue]:
    """Loads CraigslistBargain from a file or a folder.

    Args:
        path: One CB file, or a folder (searched recursively).
        format: ``"cocoa"``, ``"hf"``, ``"ppdpp"`` or ``"scenarios"``; default: the file's own
            format, or for a folder the first of :data:`FORMATS` found in it.

    Returns:
        The dialogues (train, valid, test, each in file order).
    """
    path = Path(path)
    format = pick_format(
        path,
        format,
        corpus="CB",
        formats=FORMATS,
        format_of=format_of,
        detect=detect,
        expected="validation/test.jsonl, cb-*.txt, *_scenarios.csv",
    )
    if path.is_file():
        return LOADERS[format](path)
    return LOADERS[format](path)
