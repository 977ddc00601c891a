"""GraphMixer's full preset (Wikipedia in the JODIE / TGL CSV format) without its real data:
a CSV fixture in that format on CPU, a bounded check on GPUs."""

from __future__ import annotations

from pathlib import Path

import torch

from companion.core.fullscale import FullCheck, count_flops

DATA = (
    "Wikipedia (JODIE / TGL release: wikipedia.csv with user_id,item_id,timestamp,state_label "
    "and 172 edge-feature columns; 157,474 events), read from data_path (default "
    "data/wikipedia.csv)"
)
HARDWARE = "one GPU (estimate: a one-block MLP-Mixer of width 100 over 30 links, batch 600)"
REPORTED = (
    "GraphMixer reaches higher average precision than JODIE, DySAT, TGAT, TGN and other RNN- or "
    "attention-based temporal graph models on the link prediction benchmarks, converging faster "
    "(abstract)"
)
STEPS_KEY = "epochs"
WIKI_EVENTS, WIKI_FEATURES = 157_474, 172


def flops_per_step(cfg) -> float:
    """FLOPs of one epoch of every arm on Wikipedia's size: forward and backward of one batch
    (positives and negatives) counted on the preset's model, times the training batches of an
    epoch (70% of the events), times the arms. Evaluation passes are left out."""
    from companion.papers.graphmixer.experiment import ENCODER
    from companion.papers.graphmixer.method import TemporalLinkPredictor

    b, k = cfg.batch_size, cfg.k
    total = 0.0
    for arm in cfg.arms:
        model = TemporalLinkPredictor(
            ENCODER[arm],
            k,
            WIKI_FEATURES,
            cfg.node_dim,
            cfg.time_dim,
            cfg.hidden,
            cfg.dropout,
            arm == "trainable_time",
        )
        links = (torch.randn(b, k, WIKI_FEATURES), torch.rand(b, k), torch.ones(b, k, dtype=bool))
        nodes = torch.randn(b, cfg.node_dim)

        def step(model=model, links=links, nodes=nodes):
            (model(links, nodes, links, nodes).sum() * 2).backward()

        total += 2 * count_flops(step)  # the positive and the negative pass
    return total * int(0.7 * WIKI_EVENTS / b)


def optimizer_steps(cfg) -> int:
    return len(cfg.arms) * cfg.epochs * int(0.7 * WIKI_EVENTS / cfg.batch_size)


def full_check(data_dir: Path, scale: str) -> FullCheck:
    """``tiny``: a 60-event CSV fixture (6 users, 5 items, 4 features), the preset's model at
    width 8, K = 4, 2 epochs of batches of 16. ``gpu``: a random CSV of Wikipedia's size
    (157,474 events, 172 features), the preset's model, 1 epoch."""
    from companion.papers.graphmixer.data import write_jodie_fixture

    if scale == "tiny":
        path = write_jodie_fixture(Path(data_dir) / "wikipedia.csv")
        overrides = dict(
            data_path=str(path),
            k=4,
            window=20,
            hidden=8,
            time_dim=4,
            node_dim=4,
            epochs=2,
            batch_size=16,
        )
        return FullCheck(overrides, STEPS_KEY, "JODIE-format CSV fixture: 60 events")
    path = Path(data_dir) / "wikipedia-random.csv"
    if not path.exists():
        write_jodie_fixture(
            path, events=WIKI_EVENTS, users=8_227, items=1_000, feat_dim=WIKI_FEATURES
        )
    return FullCheck(
        dict(data_path=str(path), epochs=1),
        STEPS_KEY,
        f"random JODIE-format CSV: {WIKI_EVENTS:,} events, {WIKI_FEATURES} features",
    )
