"""Run every chain on every item and append the LM's answers to a JSONL cache (resumable).

``python -m companion.papers.ama_prompting.generate --out data/ama_prompting/outputs.jsonl``
refreshes the shipped cache (the same code as the ``full`` preset). Line 1 holds the provenance;
then one line per (task, item, chain). Keys already in the file are skipped, so an interrupted
run resumes where it stopped. Items are visited block-interleaved across tasks, so a partial
cache covers all three tasks evenly.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from companion.papers.ama_prompting.items import ITEMS_FILE, load_items
from companion.papers.ama_prompting.prompts import all_chains, build_prompt, num_steps, wh_question

OUTPUTS_FILE = ITEMS_FILE.parent / "outputs.jsonl"
PROMPT_FORMAT = (
    "raw completion (no chat template), instruction + demos + item, greedy, "
    "stop at the first newline"
)
LABEL_WORDS = {
    "claim": ("Yes", "No", "True", "False", "Unknown"),
    "sentiment": ("positive", "negative", "Yes", "No", "good", "bad"),
    "topic": ("World", "Sports", "Business", "Technology", "Science"),
}


def run_chain(lm, task: str, chain: str, item: dict) -> dict:
    """One (item, chain): its steps in order, each step's prompt built from the earlier outputs."""
    previous: list[str] = []
    steps = []
    last = num_steps(task, chain) - 1
    for s in range(last + 1):
        p = build_prompt(task, chain, s, item, previous)
        r = lm.complete(
            p.prefix, p.suffix, p.max_new_tokens, LABEL_WORDS[task] if s == last else ()
        )
        previous.append(r["output"])
        steps.append(
            dict(
                step=p.step,
                prompt_sha1=p.sha1,
                prompt_tokens=r["prompt_tokens"],
                output=r["output"],
                new_tokens=r["new_tokens"],
                ms=r["ms"],
            )
        )
        logprobs = r.get("label_logprobs", {})
    record = dict(task=task, item=item["id"], chain=chain, steps=steps, label_logprobs=logprobs)
    if chain == "c3":
        record["proposed"] = wh_question(previous[0])[1]
    return record


def interleaved(items: list[dict]) -> list[dict]:
    """Items ordered by their index within the task, tasks alternating (a prefix is balanced)."""
    return sorted(items, key=lambda it: (int(it["id"].rsplit("-", 1)[1]), it["task"]))


def read_cache(path: Path) -> tuple[dict | None, list[dict]]:
    if not Path(path).exists():
        return None, []
    provenance, records = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if "provenance" in row:
                provenance = row["provenance"]
            else:
                records.append(row)
    return provenance, records


def _commit() -> str:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                cwd=Path(__file__).parent,
                check=False,
            ).stdout.strip()
            or "unknown"
        )
    except OSError:  # pragma: no cover
        return "unknown"


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return platform.processor() or platform.machine()


def run_chain_batch(lm, task: str, chain: str, items: list[dict]) -> list[dict]:
    """``run_chain`` for several items at once (``lm.complete_batch``; same greedy outputs)."""
    if not hasattr(lm, "complete_batch"):
        return [run_chain(lm, task, chain, item) for item in items]
    previous: list[list[str]] = [[] for _ in items]
    steps: list[list[dict]] = [[] for _ in items]
    logprobs: list[dict] = [{} for _ in items]
    last = num_steps(task, chain) - 1
    for s in range(last + 1):
        prompts = [build_prompt(task, chain, s, item, prev) for item, prev in zip(items, previous)]
        results = lm.complete_batch(
            prompts[0].prefix,
            [p.suffix for p in prompts],
            prompts[0].max_new_tokens,
            LABEL_WORDS[task] if s == last else (),
        )
        for b, (p, r) in enumerate(zip(prompts, results)):
            assert p.prefix == prompts[0].prefix
            previous[b].append(r["output"])
            steps[b].append(
                dict(
                    step=p.step,
                    prompt_sha1=p.sha1,
                    prompt_tokens=r["prompt_tokens"],
                    output=r["output"],
                    new_tokens=r["new_tokens"],
                    ms=r["ms"],
                )
            )
            logprobs[b] = r.get("label_logprobs", {})
    records = []
    for b, item in enumerate(items):
        record = dict(
            task=task, item=item["id"], chain=chain, steps=steps[b], label_logprobs=logprobs[b]
        )
        if chain == "c3":
            record["proposed"] = wh_question(previous[b][0])[1]
        records.append(record)
    return records


def generate(
    lm,
    items: list[dict],
    out: Path,
    command: str = "",
    max_items: int | None = None,
    stop_after: int | None = None,
    log=None,
    batch_size: int = 16,
) -> dict:
    """Append the missing (task, item, chain) records of ``items`` to ``out``; rewrite line 1.

    Rounds of ``batch_size`` items per task (tasks alternating), one batch per chain.
    ``stop_after`` (tests) stops after that many new records, as an interruption would."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    provenance, records = read_cache(out)
    done = {(r["task"], r["item"], r["chain"]) for r in records}
    if provenance is None:
        with open(out, "w", encoding="utf-8") as f:
            f.write(json.dumps({"provenance": {}}) + "\n")
    start = time.perf_counter()
    written = 0
    index = {it["id"]: int(it["id"].rsplit("-", 1)[1]) for it in items}
    if max_items is not None:
        items = [it for it in items if index[it["id"]] < max_items]
    rounds = sorted({index[it["id"]] // batch_size for it in items})
    with open(out, "a", encoding="utf-8") as f:
        for r in rounds:
            for task in ("claim", "sentiment", "topic"):
                group = [
                    it for it in items if it["task"] == task and index[it["id"]] // batch_size == r
                ]
                for chain in all_chains(task):
                    todo = [it for it in group if (task, it["id"], chain) not in done]
                    if not todo:
                        continue
                    if stop_after is not None:
                        if written >= stop_after:
                            return dict(written=written, interrupted=True)
                        todo = todo[: stop_after - written]
                    for record in run_chain_batch(lm, task, chain, todo):
                        f.write(json.dumps(record, sort_keys=True) + "\n")
                        written += 1
                    f.flush()
                if log:
                    log(
                        f"round {r} {task} done ({written} new records, "
                        f"{time.perf_counter() - start:.0f} s)"
                    )
    _rewrite_provenance(out, lm, command, time.perf_counter() - start, batch_size)
    return dict(written=written, interrupted=False)


def _rewrite_provenance(out: Path, lm, command: str, seconds: float, batch_size: int = 1) -> None:
    old, records = read_cache(out)
    old = old or {}
    info = dict(getattr(lm, "info", {}))
    provenance = dict(
        command=command or old.get("command", ""),
        commit=_commit(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%MZ"),
        machine=f"{platform.machine()}, {_cpu()}, {os.cpu_count()} CPUs (shared)",
        python=sys.version.split()[0],
        prompt_format=PROMPT_FORMAT,
        token_caps={k: v for k, v in sorted(_caps().items())},
        batch_size=batch_size,
        prefix_kv_cache=True,
        generation_seconds=round(old.get("generation_seconds", 0.0) + seconds, 1),
        sessions=old.get("sessions", 0) + 1,
        records=len(records),
        **info,
    )
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps({"provenance": provenance}, sort_keys=True) + "\n")
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    tmp.replace(out)


def _caps() -> dict[str, int]:
    from companion.papers.ama_prompting.items import generate_items

    caps = {}
    for item in generate_items(99, 16):
        task = item["task"]
        for chain in all_chains(task):
            prev: list[str] = []
            for s in range(num_steps(task, chain)):
                p = build_prompt(task, chain, s, item, prev)
                caps[f"{task}/{chain}/{p.step}"] = p.max_new_tokens
                prev.append("x Proposed answer: y")
    return caps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUTPUTS_FILE)
    parser.add_argument("--items", type=Path, default=ITEMS_FILE)
    parser.add_argument(
        "--pool-seed", type=int, default=None, help="generate a new pool instead of --items"
    )
    parser.add_argument(
        "--max-items", type=int, default=None, help="items per task (a prefix of the pool)"
    )
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--gguf-file", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)
    from companion.papers.ama_prompting.items import generate_items
    from companion.papers.ama_prompting.lm import GGUF_FILE, load_lm
    from companion.papers.ama_prompting.prompts import demo_texts

    if args.pool_seed is not None:
        items = generate_items(args.pool_seed, exclude=demo_texts())
    else:
        items = load_items(args.items)
    lm = load_lm(
        args.model_dir,
        args.gguf_file or (GGUF_FILE if args.model_dir is None else None),
        args.threads,
    )
    command = "python -m companion.papers.ama_prompting.generate " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    result = generate(
        lm,
        items,
        args.out,
        command,
        args.max_items,
        log=lambda m: print(m, flush=True),
        batch_size=args.batch_size,
    )
    print(
        f"{result['written']} new records in {args.out}; "
        f"prefix cache hits {lm.prefix_hits}, misses {lm.prefix_misses}"
    )


if __name__ == "__main__":
    main()
