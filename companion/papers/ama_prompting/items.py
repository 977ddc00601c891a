"""The three generated tasks: short texts with labels correct by construction.

``python -m companion.papers.ama_prompting.items --pool-seed 0 --n-per-task 112``
writes the shipped pool. Every text comes from the hand-written lexicons and templates below
(project licence); nothing is downloaded. Each item carries a ``kind`` (the construction it was
built with), so that prompts can fail on different constructions: that is what keeps the
prompts' errors from being perfectly correlated.

* ``claim`` (RTE-like, K = 2): a passage of one or two sentences and a statement; gold 1 (True)
  iff the passage entails the statement. Kinds: ``entailed`` (a paraphrase, ½), ``contradicted``
  (a negation or a swapped attribute, ¼), ``unmentioned`` (¼).
* ``sentiment`` (SST-2-like, K = 2): a one-sentence review; gold 1 = positive. Kinds: ``plain``
  (½), ``negated`` ("not bad" is positive, "not great" negative, ¼), ``contrast`` ("X, but Y":
  the label follows Y, ¼).
* ``topic`` (AG-News-like, K = 4): a headline and one sentence; gold 0 world, 1 sports,
  2 business, 3 science/tech. Kinds: ``plain`` (¾), ``mixed`` (a cue of another topic in a
  subordinate clause, ¼).

Items come in blocks (4 claims, 8 reviews, 16 headlines) that are balanced in gold and kind, so
any prefix of whole blocks is balanced too: the cache generator works item by item and a
partly generated pool is still usable.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

TASKS = ("claim", "sentiment", "topic")
NUM_CLASSES = {"claim": 2, "sentiment": 2, "topic": 4}
BLOCK = {"claim": 4, "sentiment": 8, "topic": 16}
CLASS_NAMES = {
    "claim": ("False", "True"),
    "sentiment": ("negative", "positive"),
    "topic": ("World", "Sports", "Business", "Science"),
}
ITEMS_FILE = Path(__file__).resolve().parents[3] / "data" / "ama_prompting" / "items.jsonl"

# ---------------------------------------------------------------- claim
NAMES = (
    "Maria",
    "Tomas",
    "Aisha",
    "Kenji",
    "Lucia",
    "Omar",
    "Greta",
    "Pavel",
    "Nadia",
    "Hugo",
    "Ingrid",
    "Rafael",
    "Sofia",
    "Malik",
    "Elena",
    "Yusuf",
    "Clara",
    "Dmitri",
    "Leila",
    "Bruno",
)
CITIES = (
    "Paris",
    "Cairo",
    "Oslo",
    "Madrid",
    "Tokyo",
    "Nairobi",
    "Vienna",
    "Lisbon",
    "Dublin",
    "Warsaw",
    "Athens",
    "Toronto",
    "Seoul",
    "Prague",
    "Berlin",
    "Chicago",
)
MONTHS = (
    "January",
    "February",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
NUMBERS = ("two", "three", "four", "five", "six", "seven", "eight", "ten", "twelve")
OBJECTS = ("books", "chairs", "paintings", "bicycles", "lamps", "clocks", "boxes", "kites")
JOBS = ("teacher", "doctor", "pilot", "baker", "lawyer", "nurse", "farmer", "painter")
INSTRUMENTS = ("the piano", "the violin", "the guitar", "the drums", "the flute", "the cello")

# Each fact: (passage, entailed paraphrases, contradiction by negation, swapped-attribute
# statement, unmentioned statements). Fields in braces are filled from the lexicons; ``{c2}``,
# ``{n2}`` etc. are a different value of the same field.
CLAIM_TEMPLATES = (
    (
        "{name} travelled to {city} in {month} to visit an old friend.",
        (
            "{name} went to {city}.",
            "{name} visited {city} in {month}.",
            "{name} made a trip to {city}.",
        ),
        "{name} did not travel to {city}.",
        "{name} travelled to {c2} in {month}.",
        (
            "{name} lives in {city}.",
            "{name} travelled to {city} for work.",
            "{name} flew to {city} with a sister.",
        ),
    ),
    (
        "{name} bought {num} {obj} at a market in {city}.",
        (
            "{name} purchased {num} {obj}.",
            "{name} got {num} {obj} in {city}.",
            "{name} bought some {obj} at a market.",
        ),
        "{name} did not buy any {obj}.",
        "{name} bought {n2} {obj} at a market in {city}.",
        (
            "{name} sold {num} {obj} in {city}.",
            "{name} paid a lot for the {obj}.",
            "{name} owns a market in {city}.",
        ),
    ),
    (
        "{name} has worked as a {job} in {city} since {month} last year.",
        ("{name} is a {job}.", "{name} works in {city}.", "{name} has a job as a {job} in {city}."),
        "{name} has never worked as a {job}.",
        "{name} has worked as a {job} in {c2} since {month} last year.",
        (
            "{name} was born in {city}.",
            "{name} wants to quit the job.",
            "{name} trained as a {job} in {city}.",
        ),
    ),
    (
        "In {month}, {name} played {instr} at a concert in {city}. The hall was full.",
        (
            "{name} performed at a concert in {city}.",
            "{name} played {instr} in {month}.",
            "The concert in {city} had a full hall.",
        ),
        "{name} did not play at the concert in {city}.",
        "In {month}, {name} played {instr} at a concert in {c2}.",
        (
            "{name} teaches {instr} in {city}.",
            "{name} won a prize for the concert.",
            "{name} wrote the music for the concert.",
        ),
    ),
    (
        "{name} opened a small bakery in {city}. It sells {num} kinds of bread.",
        (
            "{name} runs a bakery.",
            "The bakery of {name} is in {city}.",
            "{name} opened a bakery in {city}.",
        ),
        "{name} has not opened a bakery.",
        "{name} opened a small bakery in {c2}.",
        (
            "{name} learned to bake in {city}.",
            "The bakery of {name} is very popular.",
            "{name} opened a second bakery.",
        ),
    ),
    (
        "{name} finished a marathon in {city} in {month}, after training for {num} months.",
        (
            "{name} ran a marathon.",
            "{name} completed the marathon in {city}.",
            "{name} trained for {num} months before the race.",
        ),
        "{name} did not finish the marathon in {city}.",
        "{name} finished a marathon in {c2} in {month}.",
        (
            "{name} won the marathon in {city}.",
            "{name} was injured during the marathon.",
            "{name} runs a marathon every year.",
        ),
    ),
)

# ---------------------------------------------------------------- sentiment
SUBJECTS = (
    "The film",
    "This movie",
    "The new phone",
    "This blender",
    "The novel",
    "The hotel",
    "This laptop",
    "The sequel",
    "The restaurant",
    "This camera",
    "The album",
    "The documentary",
    "This backpack",
    "The series",
    "The speaker",
    "This game",
)
POS_ADJ = (
    "wonderful",
    "delightful",
    "excellent",
    "superb",
    "charming",
    "brilliant",
    "fantastic",
    "a real pleasure",
    "worth every penny",
    "a joy to use",
    "moving",
    "great fun",
)
NEG_ADJ = (
    "awful",
    "dreadful",
    "terrible",
    "boring",
    "a waste of money",
    "disappointing",
    "clumsy",
    "a mess",
    "painfully slow",
    "cheap and flimsy",
    "tedious",
    "a letdown",
)
POS_CLAUSE = (
    "in the end it won me over",
    "overall I loved it",
    "I would gladly buy it again",
    "the ending made it all worthwhile",
    "I still recommend it to everyone",
    "it is a gem",
)
NEG_CLAUSE = (
    "in the end I regretted it",
    "overall it was a letdown",
    "I would never buy it again",
    "the ending ruined everything",
    "I cannot recommend it",
    "it broke after a week",
)
POS_OPENER = ("The start is slow", "The price is high", "It looks plain", "The first hour drags")
NEG_OPENER = ("The design is pretty", "It starts well", "The box looks nice", "The cast is famous")
NEGATED_POS = (
    "not bad at all",
    "not boring for a second",
    "not a waste of money",
    "not disappointing",
)
NEGATED_NEG = ("not great", "not worth the price", "not very good", "not as fun as promised")

# ---------------------------------------------------------------- topic
TOPIC_LEX = {
    0: dict(  # world
        head=(
            "Leaders meet in {city} over border dispute",
            "Elections held in {country}",
            "Peace talks resume in {city}",
            "{country} recalls its ambassador",
            "Protests grow in the capital of {country}",
            "Ceasefire agreed after weeks of fighting",
        ),
        sent=(
            "The prime minister of {country} met foreign ministers to discuss the treaty.",
            "Voters in {country} chose a new parliament after a tense campaign.",
            "Diplomats said the government of {country} would sign the accord.",
            "Thousands marched in {city} to demand the president resign.",
        ),
        cue="as the government of {country} debated a new treaty",
    ),
    1: dict(  # sports
        head=(
            "{team} win the cup final",
            "Striker scores twice as {team} beat rivals",
            "{team} sign a new coach",
            "Record broken at the {city} marathon",
            "Tennis champion reaches the semifinal",
            "{team} lose at home after late goal",
        ),
        sent=(
            "The coach praised the players after the match in {city}.",
            "The goalkeeper saved a penalty in the final minute of the game.",
            "Fans cheered as the team lifted the trophy in {city}.",
            "The league said the season will start with a derby against {team}.",
        ),
        cue="while fans of {team} watched the final",
    ),
    2: dict(  # business
        head=(
            "Shares of {company} jump after strong profits",
            "{company} to cut jobs",
            "Oil prices fall as demand slows",
            "{company} agrees to buy a rival",
            "Central bank raises interest rates",
            "Retail sales rise in {country}",
        ),
        sent=(
            "Investors welcomed the quarterly earnings report of {company}.",
            "The company said revenue grew and it would pay a larger dividend.",
            "Analysts expect the stock market to stay volatile this quarter.",
            "{company} said the merger would save costs and raise its profit.",
        ),
        cue="as shares of {company} rose on the stock market",
    ),
    3: dict(  # science / tech
        head=(
            "Scientists discover a new planet",
            "{company} unveils a faster chip",
            "Study links sleep to memory",
            "Space probe lands on a distant moon",
            "New software fixes security flaw",
            "Researchers build a quantum computer",
        ),
        sent=(
            "Researchers published the results of the experiment in a journal.",
            "The new processor uses less power and runs the software faster.",
            "Astronomers used a telescope to observe the distant galaxy.",
            "Engineers said the robot can learn new tasks from a few examples.",
        ),
        cue="while scientists tested a new telescope",
    ),
}
COUNTRIES = (
    "France",
    "Kenya",
    "Brazil",
    "India",
    "Peru",
    "Norway",
    "Egypt",
    "Chile",
    "Japan",
    "Poland",
)
TEAMS = ("United", "the Rovers", "the Eagles", "City", "the Lions", "the Falcons")
COMPANIES = ("Acme Corp", "Globex", "Initech", "Vandelay", "Hooli", "Stark Industries")
MIXED_TEMPLATES = ("{sent_main} This came {cue}.", "{cue_cap}, {sent_main_low}")


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def _claim_item(rng: np.random.Generator, kind: str) -> dict:
    passage, entailed, negation, swapped, unmentioned = CLAIM_TEMPLATES[
        int(rng.integers(len(CLAIM_TEMPLATES)))
    ]
    city, c2 = rng.choice(CITIES, size=2, replace=False)
    num, n2 = rng.choice(NUMBERS, size=2, replace=False)
    fill = dict(
        name=_pick(rng, NAMES),
        city=str(city),
        c2=str(c2),
        month=_pick(rng, MONTHS),
        num=str(num),
        n2=str(n2),
        obj=_pick(rng, OBJECTS),
        job=_pick(rng, JOBS),
        instr=_pick(rng, INSTRUMENTS),
    )
    if kind == "entailed":
        statement = _pick(rng, entailed)
    elif kind == "contradicted":
        statement = negation if rng.random() < 0.5 else swapped
    else:
        statement = _pick(rng, unmentioned)
    return dict(
        passage=passage.format(**fill),
        statement=statement.format(**fill),
        gold=int(kind == "entailed"),
    )


def _sentiment_item(rng: np.random.Generator, kind: str, gold: int) -> dict:
    subject = _pick(rng, SUBJECTS)
    if kind == "plain":
        adj = _pick(rng, POS_ADJ if gold else NEG_ADJ)
        text = f"{subject} is {adj}."
    elif kind == "negated":
        text = f"{subject} is {_pick(rng, NEGATED_POS if gold else NEGATED_NEG)}."
    else:
        opener = _pick(rng, POS_OPENER if gold else NEG_OPENER)
        clause = _pick(rng, POS_CLAUSE if gold else NEG_CLAUSE)
        text = f"{opener}, but {clause}."
        text = text.replace("It ", subject + " ", 1) if text.startswith("It ") else text
    return dict(text=text, gold=gold)


def _topic_item(rng: np.random.Generator, kind: str, gold: int) -> dict:
    fill = dict(
        city=_pick(rng, CITIES),
        country=_pick(rng, COUNTRIES),
        team=_pick(rng, TEAMS),
        company=_pick(rng, COMPANIES),
    )
    lex = TOPIC_LEX[gold]
    head = _pick(rng, lex["head"]).format(**fill)
    sent = _pick(rng, lex["sent"]).format(**fill)
    if kind == "mixed":
        other = _pick(rng, [k for k in TOPIC_LEX if k != gold])
        cue = TOPIC_LEX[other]["cue"].format(**fill)
        if rng.random() < 0.5:
            sent = f"{sent[:-1]}, {cue}."
        else:
            sent = f"{cue[0].upper()}{cue[1:]}, {sent[0].lower()}{sent[1:]}"
    head = head[0].upper() + head[1:]
    return dict(text=f"{head}. {sent}", gold=gold)


def _block(task: str) -> list[tuple[str, int]]:
    """(kind, gold) of one balanced block."""
    if task == "claim":
        return [("entailed", 1), ("entailed", 1), ("contradicted", 0), ("unmentioned", 0)]
    if task == "sentiment":
        return [
            ("plain", 1),
            ("plain", 0),
            ("plain", 1),
            ("plain", 0),
            ("negated", 1),
            ("negated", 0),
            ("contrast", 1),
            ("contrast", 0),
        ]
    return [("plain", y) for y in range(4)] * 3 + [("mixed", y) for y in range(4)]


def _key(item: dict) -> str:
    return item.get("passage", "") + "|" + item.get("statement", item.get("text", ""))


def generate_items(
    pool_seed: int = 0, n_per_task: int = 112, exclude: set[str] | None = None
) -> list[dict]:
    """The pool: ``n_per_task`` items per task (a multiple of 16), blocks shuffled within.

    ``exclude`` holds texts never to emit (the prompts' demos); duplicates are redrawn."""
    if n_per_task % 16:
        raise ValueError(f"n_per_task must be a multiple of 16, got {n_per_task}")
    rng = np.random.default_rng([pool_seed, 2023])
    exclude = set(exclude or ())
    items: list[dict] = []
    for task in TASKS:
        seen: set[str] = set()
        block = _block(task)
        for _ in range(n_per_task // len(block)):
            order = rng.permutation(len(block))
            for j in order:
                kind, gold = block[j]
                for _ in range(1000):
                    if task == "claim":
                        item = _claim_item(rng, kind)
                    elif task == "sentiment":
                        item = _sentiment_item(rng, kind, gold)
                    else:
                        item = _topic_item(rng, kind, gold)
                    key = _key(item)
                    texts = {item.get("passage"), item.get("statement"), item.get("text")}
                    if key not in seen and not (texts & exclude):
                        break
                else:  # pragma: no cover - the lexicons are large enough
                    raise RuntimeError(f"could not draw a new {task} item")
                seen.add(key)
                index = sum(1 for it in items if it["task"] == task)
                items.append(
                    dict(id=f"{task}-{pool_seed}-{index:03d}", task=task, kind=kind, **item)
                )
    return items


def write_items(path: Path, pool_seed: int = 0, n_per_task: int = 112) -> list[dict]:
    from companion.papers.ama_prompting.prompts import demo_texts

    items = generate_items(pool_seed, n_per_task, exclude=demo_texts())
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, sort_keys=True) + "\n")
    return items


def load_items(path: Path = ITEMS_FILE) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool-seed", type=int, default=0)
    parser.add_argument("--n-per-task", type=int, default=112)
    parser.add_argument("--out", type=Path, default=ITEMS_FILE)
    args = parser.parse_args(argv)
    items = write_items(args.out, args.pool_seed, args.n_per_task)
    print(f"wrote {len(items)} items to {args.out}")


if __name__ == "__main__":
    main()
