"""The prompt chains: five per task plus the restrictive few-shot baseline.

A *chain* is a format and its own fixed demonstrations (the official ``num_boost`` prompts of
``tasks/RTE_final.py``, ``SST2_final.py``, ``AGNews_final.py``). Each *step* is an instruction,
a few demos, then the item; the LM continues greedily up to the first newline. The demos are
written here (none is copied from the official code), and no demo text appears in the pool.

A step's prompt is ``prefix + suffix``: the prefix (instruction and demos) is the same for every
item, so its key/value cache is computed once (``lm.py``). ``answer_to_label`` turns the last
step's text into a vote: the class index, or ``ABSTAIN`` (−1).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable

ABSTAIN = -1
CHAINS = {
    "claim": ("c1", "c2", "c3", "c4", "c5"),
    "sentiment": ("s1", "s2", "s3", "s4", "s5"),
    "topic": ("t1", "t2", "t3", "t4", "t5"),
}
BASELINE = "fewshot"

# ---------------------------------------------------------------- claim (RTE_final)
QUESTION_INSTR = "Rewrite the statement as a question."
# Frozen on the pilot (pool_seed 99): "Did …?" questions were answered "No" whatever the context;
# "Is it true that …?" questions were answered from the context, so both demo sets ask that way.
QUESTION_DEMOS = {
    "c1": (
        ("Ana went to Lima last spring.", "Is it true that Ana went to Lima last spring?"),
        (
            "The museum in Quito has nine rooms.",
            "Is it true that the museum in Quito has nine rooms?",
        ),
        ("Victor did not sell the boat.", "Is it true that Victor did not sell the boat?"),
    ),
    "c2": (
        ("Walter never learned to swim.", "Is it true that Walter never learned to swim?"),
        ("Gustav owns eleven goats.", "Is it true that Gustav owns eleven goats?"),
        ("The train to Riga left late.", "Is it true that the train to Riga left late?"),
    ),
}
WH_DEMOS = (
    ("Ana travelled to Lima.", "Where did Ana travel? Proposed answer: Lima"),
    ("Victor bought nine hats.", "How many hats did Victor buy? Proposed answer: nine"),
    ("Beatrix works as a chemist.", "What does Beatrix work as? Proposed answer: a chemist"),
    ("Gustav did not sell the boat.", "What did Gustav not sell? Proposed answer: the boat"),
)
ANSWER_INSTR = 'Answer the question. If there is no evidence in the context, return "Unknown".'
ANSWER_DEMOS = {
    "c1": (
        ("Ana spent March in Lima, where she studied Spanish.", "Did Ana go to Lima?", "Yes"),
        ("Victor kept his boat and sailed it every summer.", "Did Victor sell the boat?", "No"),
        ("Beatrix moved to Quito in May.", "Does Beatrix have a dog?", "Unknown"),
    ),
    "c2": (
        ("Gustav keeps cows on a farm near Riga.", "Does Gustav own goats?", "Unknown"),
        (
            "Priya moved to Hanoi in May and still lives there.",
            "Has Priya lived in Hanoi since May?",
            "Yes",
        ),
        ("The train to Riga left on time.", "Did the train to Riga leave late?", "No"),
    ),
    "c4": (
        (
            "Walter swims in the lake every morning.",
            "Is it true that Walter never learned to swim?",
            "No",
        ),
        (
            "Ana spent March in Lima, where she studied Spanish.",
            "Is it true that Ana studied in Lima?",
            "Yes",
        ),
        (
            "Victor bought a boat in June.",
            "Is it true that Victor paid cash for the boat?",
            "Unknown",
        ),
    ),
}
OPEN_DEMOS = (
    ("Ana spent March in Lima, where she studied Spanish.", "Where did Ana travel?", "Lima"),
    ("Victor bought nine hats at the fair.", "How many hats did Victor buy?", "nine"),
    ("Beatrix moved to Quito in May.", "What does Beatrix work as?", "Unknown"),
)
PHRASE_DEMOS = (
    ("Ana spent March in Lima, where she studied Spanish.", "Did Ana go to Lima?", "Yes, in March"),
    (
        "Victor kept his boat and sailed it every summer.",
        "Did Victor sell the boat?",
        "No, he kept it",
    ),
    ("Beatrix moved to Quito in May.", "Did Beatrix move to Lima?", "No, to Quito"),
)
CLAIM_FEWSHOT = (
    ("Walter swims in the lake every morning.", "Walter never learned to swim.", "False"),
    ("Priya moved to Hanoi in May and still lives there.", "Priya lives in Hanoi.", "True"),
    ("Gustav keeps cows on a farm near Riga.", "Gustav owns a tractor.", "False"),
)

# ---------------------------------------------------------------- sentiment (SST2_final)
LIKE_DEMOS = (
    ("The soup was cold and bland.", "No"),
    ("A warm, funny story with a great cast.", "Yes"),
    ("The keyboard feels solid and types well.", "Yes"),
)
FEEL_DEMOS = (
    ("The soup was cold and bland.", "disappointed"),
    ("A warm, funny story with a great cast.", "happy"),
    ("The battery died on the first day.", "angry"),
)
GIST_DEMOS = (
    ("The soup was cold and bland.", "the soup was cold"),
    ("A warm, funny story with a great cast.", "a funny story"),
    ("The keyboard feels solid and types well.", "the keyboard types well"),
)
PHRASE_SENTIMENT_DEMOS = (
    ("the soup was cold", "negative"),
    ("a funny story", "positive"),
    ("the battery died", "negative"),
)
SNIPPET_INSTR = "For each snippet of text, label the sentiment of the text as positive or negative."
SNIPPET_DEMOS = {
    "s4": (
        ("A warm, funny story with a great cast.", "positive"),
        ("The soup was cold and bland.", "negative"),
        ("The keyboard feels solid and types well.", "positive"),
        ("The battery died on the first day.", "negative"),
    ),
    "s5": (
        ("The plot drags and the jokes fall flat.", "negative"),
        ("Lovely colours and a gripping finale.", "positive"),
        ("The straps tore within a month.", "negative"),
        ("Comfortable, quiet and cheap to run.", "positive"),
    ),
    # order chosen on the pilot, like the chains' demos (the order ending "negative" answered
    # "negative" to every pilot item)
    BASELINE: (
        ("The songs are catchy and the singing is strong.", "positive"),
        ("Sharp pictures and a long battery life.", "positive"),
        ("The pages fell out of the binding.", "negative"),
        ("The waiter was rude and the bill was wrong.", "negative"),
    ),
}

# ---------------------------------------------------------------- topic (AGNews_final)
SUMMARY_INSTR = "Summarize the passage."
SUMMARY_DEMOS = {
    "t1": (
        (
            "Rain delays the test match. Play stopped at lunch with the visitors on 120 for two.",
            "a cricket match stopped by rain",
        ),
        (
            "Bank profits slip. The lender said bad loans rose in the second quarter.",
            "the falling profits of a bank",
        ),
        (
            "Rebels seize a town in the north. The army said it would retake the town within days.",
            "a fight between rebels and the army",
        ),
    ),
    "t2": (
        (
            "Telescope spots water on a comet. Astronomers said the ice was older than the sun.",
            "water found on a comet",
        ),
        (
            "Minister resigns after scandal. The cabinet met to choose a successor.",
            "a minister who resigned",
        ),
        (
            "Carmaker recalls vans. The firm said the recall would cost millions.",
            "a costly recall of vans",
        ),
    ),
    "t3": (
        (
            "Cyclist wins the mountain stage. She finished two minutes ahead of the leader.",
            "a cyclist winning a race stage",
        ),
        (
            "New battery charges in minutes. Engineers said it lasts twice as long.",
            "a new fast-charging battery",
        ),
        (
            "Summit ends without a deal. Leaders of both nations left the talks early.",
            "a summit between two nations",
        ),
    ),
}
# Frozen on the pilot: the official 'The summary "Summary" fits "Category":' line with the
# two-word category names was answered "Business" for every item; one-word names work.
CATEGORY_INSTR = "Pick the category of the summary: World, Sports, Business or Science."
CATEGORY_DEMOS = {
    "t1": (
        ("a cricket match stopped by rain", "Sports"),
        ("the falling profits of a bank", "Business"),
        ("a fight between rebels and the army", "World"),
        ("a new fast-charging battery", "Science"),
    ),
    "t2": (
        ("water found on a comet", "Science"),
        ("a minister who resigned", "World"),
        ("a costly recall of vans", "Business"),
        ("a cyclist winning a race stage", "Sports"),
    ),
    "t3": (
        ("a summit between two nations", "World"),
        ("a new fast-charging battery", "Science"),
        ("a cyclist winning a race stage", "Sports"),
        ("the falling profits of a bank", "Business"),
    ),
}
SECTION_DEMOS = (
    (
        "Rain delays the test match. Play stopped at lunch with the visitors on 120 for two.",
        "Sports",
    ),
    (
        "Telescope spots water on a comet. Astronomers said the ice was older than the sun.",
        "Science",
    ),
    ("Bank profits slip. The lender said bad loans rose in the second quarter.", "Business"),
    ("Minister resigns after scandal. The cabinet met to choose a successor.", "World"),
)
PASSAGE_CATEGORY_DEMOS = (
    (
        "Rebels seize a town in the north. The army said it would retake the town within days.",
        "World News",
    ),
    ("Carmaker recalls vans. The firm said the recall would cost millions.", "Business"),
    (
        "New battery charges in minutes. Engineers said it lasts twice as long.",
        "Technology and Science",
    ),
    ("Cyclist wins the mountain stage. She finished two minutes ahead of the leader.", "Sports"),
)
TOPIC_FEWSHOT = (
    ("Striker joins the champions. The club paid a record fee for the forward.", "Sports"),
    (
        "Floods force thousands from homes. The president declared an emergency in the south.",
        "World",
    ),
    ("Chip maker beats forecasts. Sales of its processors rose a fifth.", "Business"),
    ("Robot learns to fold laundry. The lab trained it on videos of people at home.", "Science"),
)


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One LM call: the shared ``prefix`` (instruction + demos), the item's ``suffix``, a cap."""

    step: str
    prefix: str
    suffix: str
    max_new_tokens: int

    @property
    def text(self) -> str:
        return self.prefix + self.suffix

    @property
    def sha1(self) -> str:
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()


def _block(instruction: str | None, demos: list[str]) -> str:
    parts = ([instruction] if instruction else []) + demos
    return "\n\n".join(parts) + "\n\n"


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:]


def _strip_end(s: str) -> str:
    return s.strip().rstrip(".")


# ---- the step builders: item (+ previous outputs) -> Prompt


def _question_step(chain: str, item: dict) -> Prompt:
    demos = [f"Statement: {s}\nQuestion: {q}" for s, q in QUESTION_DEMOS[chain]]
    return Prompt(
        "question", _block(QUESTION_INSTR, demos), f"Statement: {item['statement']}\nQuestion:", 20
    )


def _wh_step(item: dict) -> Prompt:
    demos = [f"Statement: {s}\nQuestion: {q}" for s, q in WH_DEMOS]
    return Prompt(
        "question", _block(QUESTION_INSTR, demos), f"Statement: {item['statement']}\nQuestion:", 24
    )


def _answer_step(
    demos_key: str, item: dict, question: str, instruction=ANSWER_INSTR, demos=None
) -> Prompt:
    demos = demos if demos is not None else ANSWER_DEMOS[demos_key]
    texts = [f"Context: {c}\nQuestion: {q}\nAnswer: {a}" for c, q, a in demos]
    suffix = f"Context: {item['passage']}\nQuestion: {question.strip()}\nAnswer:"
    return Prompt("answer", _block(instruction, texts), suffix, 8)


def wh_question(output: str) -> tuple[str, str]:
    """Split c3's first-step output into (question, proposed answer)."""
    q, _, proposed = output.partition("Proposed answer:")
    return q.strip(), proposed.strip()


def rule_question(statement: str) -> str:
    """c4's question, built by rule instead of by the LM."""
    return f"Is it true that {_lower_first(_strip_end(statement))}?"


def build_prompt(task: str, chain: str, step: int, item: dict, previous: list[str]) -> Prompt:
    """The prompt of ``step`` (0-based) of ``chain`` for ``item``, given the earlier outputs."""
    if task == "claim":
        if chain == BASELINE:
            demos = [f"{p}\nQuestion: {s} True or False?\nAnswer: {a}" for p, s, a in CLAIM_FEWSHOT]
            suffix = f"{item['passage']}\nQuestion: {item['statement']} True or False?\nAnswer:"
            return Prompt("answer", _block(None, demos), suffix, 3)
        if chain in ("c1", "c2", "c5"):
            if step == 0:
                return _question_step("c1" if chain == "c5" else chain, item)
            if chain == "c5":
                return _answer_step("c5", item, previous[0], "Answer the question.", PHRASE_DEMOS)
            return _answer_step(chain, item, previous[0])
        if chain == "c3":
            if step == 0:
                return _wh_step(item)
            return _answer_step("c3", item, wh_question(previous[0])[0], demos=OPEN_DEMOS)
        if chain == "c4":
            return _answer_step("c4", item, rule_question(item["statement"]))
    if task == "sentiment":
        x = item["text"]
        if chain == "s1":
            demos = [
                f"Passage: {p}\nQuestion: Did the writer like it?\nAnswer: {a}"
                for p, a in LIKE_DEMOS
            ]
            return Prompt(
                "answer",
                _block(None, demos),
                f"Passage: {x}\nQuestion: Did the writer like it?\nAnswer:",
                5,
            )
        if chain == "s2":
            demos = [
                f"Passage: {p}\nQuestion: How does the writer feel about it?\nAnswer: {a}"
                for p, a in FEEL_DEMOS
            ]
            return Prompt(
                "answer",
                _block(None, demos),
                f"Passage: {x}\nQuestion: How does the writer feel about it?\nAnswer:",
                6,
            )
        if chain == "s3":
            if step == 0:
                demos = [f"Passage: {p}\nIn a few words: {a}" for p, a in GIST_DEMOS]
                instr = "Say in a few words what the writer says about it."
                return Prompt("gist", _block(instr, demos), f"Passage: {x}\nIn a few words:", 12)
            demos = [f'Phrase: "{p}"\nSentiment: {a}' for p, a in PHRASE_SENTIMENT_DEMOS]
            phrase = _strip_end(previous[0])
            return Prompt("answer", _block(None, demos), f'Phrase: "{phrase}"\nSentiment:', 3)
        if chain in ("s4", "s5", BASELINE):
            demos = [f"Text: {p}\nSentiment: {a}" for p, a in SNIPPET_DEMOS[chain]]
            instr = None if chain == BASELINE else SNIPPET_INSTR
            return Prompt("answer", _block(instr, demos), f"Text: {x}\nSentiment:", 3)
    if task == "topic":
        x = item["text"]
        if chain in ("t1", "t2", "t3"):
            if step == 0:
                demos = [
                    f"Passage: {p}\nSummary: The passage is about {s}."
                    for p, s in SUMMARY_DEMOS[chain]
                ]
                return Prompt(
                    "summarize",
                    _block(SUMMARY_INSTR, demos),
                    f"Passage: {x}\nSummary: The passage is about",
                    16,
                )
            summary = "The passage is about " + _strip_end(previous[0]) + "."
            return _category_step(chain, summary)
        if chain == "t5":
            return _category_step("t1", x)
        if chain == "t4":
            demos = [f"Passage: {p}\nThis news is about: {a.lower()}" for p, a in SECTION_DEMOS]
            return Prompt("answer", _block(None, demos), f"Passage: {x}\nThis news is about:", 4)
        if chain == BASELINE:
            demos = [f"Passage: {p}\nCategory: {a}" for p, a in TOPIC_FEWSHOT]
            return Prompt("answer", _block(None, demos), f"Passage: {x}\nCategory:", 4)
    raise KeyError(f"no prompt for task={task!r} chain={chain!r} step={step}")


def _category_step(chain: str, summary: str) -> Prompt:
    demos = [f"Summary: The passage is about {s}.\nCategory: {c}" for s, c in CATEGORY_DEMOS[chain]]
    return Prompt("categorize", _block(CATEGORY_INSTR, demos), f"Summary: {summary}\nCategory:", 4)


def num_steps(task: str, chain: str) -> int:
    if chain == BASELINE or chain in ("c4", "s1", "s2", "s4", "s5", "t4", "t5"):
        return 1
    return 2


def all_chains(task: str) -> tuple[str, ...]:
    return CHAINS[task] + (BASELINE,)


def demo_texts() -> set[str]:
    """Every text used in a demo (the pool never contains one)."""
    texts: set[str] = set()
    for group in (QUESTION_DEMOS, ANSWER_DEMOS, SNIPPET_DEMOS, SUMMARY_DEMOS, CATEGORY_DEMOS):
        for demos in group.values():
            for d in demos:
                texts.update(d)
    for demos in (
        WH_DEMOS,
        OPEN_DEMOS,
        PHRASE_DEMOS,
        CLAIM_FEWSHOT,
        LIKE_DEMOS,
        FEEL_DEMOS,
        GIST_DEMOS,
        PHRASE_SENTIMENT_DEMOS,
        SECTION_DEMOS,
        PASSAGE_CATEGORY_DEMOS,
        TOPIC_FEWSHOT,
    ):
        for d in demos:
            texts.update(d)
    return texts


# ---------------------------------------------------------------- answers -> votes
STOP_WORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been it its this that "
    "he she they his her their did does do has have had not no".split()
)
POSITIVE_FEELINGS = frozenset(
    "happy pleased loves love impressed delighted satisfied glad excited thrilled".split()
)
NEGATIVE_FEELINGS = frozenset(
    "disappointed angry bored hates hate annoyed sad frustrated upset unhappy".split()
)
TOPIC_WORDS = (  # t4's free answers ("politics", "economy") seen on the pilot map too
    ("world", 0),
    ("politics", 0),
    ("sports", 1),
    ("sport", 1),
    ("business", 2),
    ("economy", 2),
    ("finance", 2),
    ("technology", 3),
    ("science", 3),
    ("tech", 3),
)


def words(text: str) -> list[str]:
    """Lower-case words, punctuation removed."""
    return re.findall(r"[a-z0-9]+", text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOP_WORDS}


def _yes_no(text: str, default: int) -> int:
    """The official ``resolve_pred``: the first yes/true or no/false word decides."""
    for w in words(text):
        if w in ("yes", "true"):
            return 1
        if w in ("no", "false"):
            return 0
    return default


def answer_to_label(task: str, chain: str, text: str, proposed: str | None = None) -> int:
    """Map the last step's output to a class index, or ``ABSTAIN`` (−1).

    claim (RTE rules): yes/true → 1, anything else (no, false, "Unknown", empty) → 0; c3 votes 1
    iff the proposed answer's content words are contained in the open answer's or vice versa.
    sentiment: s1 yes/no, s2 a feeling lexicon, s3/s4/s5/fewshot positive/negative;
    other text abstains. topic: the first category word found, else abstain."""
    ws = words(text)
    if task == "claim":
        if chain == "c3":
            if proposed is None:
                raise ValueError("c3 needs the proposed answer of its first step")
            a, b = content_words(proposed), content_words(text)
            if not a or not b or "unknown" in b:
                return 0
            return int(a <= b or b <= a)
        return _yes_no(text, 0)
    if task == "sentiment":
        if chain == "s1":
            return _yes_no(text, ABSTAIN)
        if chain == "s2":
            for w in ws:
                if w in POSITIVE_FEELINGS:
                    return 1
                if w in NEGATIVE_FEELINGS:
                    return 0
            return ABSTAIN
        for w in ws:
            if w == "positive":
                return 1
            if w == "negative":
                return 0
        return ABSTAIN
    if task == "topic":
        lookup = dict(TOPIC_WORDS)
        for w in ws:
            if w in lookup:
                return lookup[w]
        return ABSTAIN
    raise KeyError(task)


StepBuilder = Callable[[dict, list], Prompt]
