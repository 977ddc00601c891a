"""Temporal graphs for GraphMixer: a synthetic stream with real temporal patterns, and a reader
of the JODIE / TGL CSV format (``wikipedia.csv``, ``reddit.csv``, ``mooc.csv``, ``lastfm.csv``).

The synthetic stream (:func:`synthetic_stream`): users and items, items grouped into taste
clusters. A user's taste *drifts* (it jumps to another cluster from time to time), and a user
often *repeats* an item it used recently (the more recent, the likelier). Both patterns live in
the order and timing of a node's recent links: a model that only sees a long-window average of
its neighbours blurs the current taste with the old one, and one that ignores which link is the
most recent cannot favour the repeat.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from companion.papers.graphmixer.method import TemporalGraph


def synthetic_stream(
    users: int = 200,
    items: int = 120,
    events: int = 6000,
    clusters: int = 6,
    feat_dim: int = 8,
    p_repeat: float = 0.5,
    p_switch: float = 0.08,
    recent: int = 4,
    noise: float = 0.6,
    seed: int = 0,
) -> TemporalGraph:
    """A user–item stream sorted by time. Node ids: users ``0..users-1``, items after them.

    * item ``i`` belongs to cluster ``i % clusters``; its feature is the cluster's random centre
      plus ``noise``·N(0, I) (so items of one cluster are alike but distinguishable); a user's
      feature is N(0, I) (it says nothing about its taste);
    * each event: a uniformly random user; with probability ``p_switch`` its current cluster
      jumps to a random one; then with probability ``p_repeat`` it repeats one of its
      ``recent`` last items (weights 1/rank: the most recent first), else it picks a uniformly
      random item of its current cluster;
    * gaps between events are Exp(1); an event's edge feature is ``[x_user ‖ x_item]``.
    """
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, feat_dim))
    item_cluster = np.arange(items) % clusters
    x_item = centres[item_cluster] + noise * rng.normal(size=(items, feat_dim))
    x_user = rng.normal(size=(users, feat_dim))
    taste = rng.integers(clusters, size=users)
    by_cluster = [np.flatnonzero(item_cluster == c) for c in range(clusters)]
    history: list[list[int]] = [[] for _ in range(users)]
    weights = 1.0 / np.arange(1, recent + 1)
    src = rng.integers(users, size=events)
    dst = np.empty(events, dtype=np.int64)
    for e, u in enumerate(src):
        if rng.random() < p_switch:
            taste[u] = rng.integers(clusters)
        h = history[u]
        if h and rng.random() < p_repeat:
            last = h[-recent:][::-1]
            w = weights[: len(last)] / weights[: len(last)].sum()
            item = last[rng.choice(len(last), p=w)]
        else:
            item = rng.choice(by_cluster[taste[u]])
        h.append(int(item))
        dst[e] = item
    t = np.cumsum(rng.exponential(1.0, size=events))
    node_feat = np.concatenate([x_user, x_item]).astype(np.float32)
    edge_feat = np.concatenate([x_user[src], x_item[dst]], axis=1).astype(np.float32)
    return TemporalGraph(src, dst + users, t, edge_feat, node_feat)


def read_jodie_csv(path, node_dim: int = 32, seed: int = 0) -> TemporalGraph:
    """A JODIE / TGL CSV (``user_id,item_id,timestamp,state_label,features...``, one header
    line) as a :class:`TemporalGraph`: items are renumbered after the users (bipartite ids),
    events are sorted by time (stable), the feature columns become edge features (a single zero
    column when there are none). These datasets have no node features; the official code then
    uses none (``dim_in_node = 0``) or one-hot ids: here each node gets a fixed random
    N(0, I/node_dim) vector of ``node_dim`` entries (a random projection of its one-hot id)."""
    users, items, times, feats = [], [], [], []
    with open(Path(path), newline="") as f:
        reader = csv.reader(f)
        next(reader)  # header
        for row in reader:
            if not row:
                continue
            users.append(int(row[0]))
            items.append(int(row[1]))
            times.append(float(row[2]))
            feats.append([float(v) for v in row[4:]])
    users, items, times = np.array(users), np.array(items), np.array(times)
    width = max((len(r) for r in feats), default=0)
    edge = np.zeros((len(users), max(width, 1)), dtype=np.float32)
    for e, r in enumerate(feats):
        edge[e, : len(r)] = r
    order = np.argsort(times, kind="stable")
    n_users = int(users.max()) + 1
    n_nodes = n_users + int(items.max()) + 1
    rng = np.random.default_rng(seed)
    node_feat = rng.normal(scale=node_dim**-0.5, size=(n_nodes, node_dim)).astype(np.float32)
    return TemporalGraph(users[order], items[order] + n_users, times[order], edge[order], node_feat)


def write_jodie_fixture(
    path, events: int = 60, users: int = 6, items: int = 5, feat_dim: int = 4, seed: int = 0
) -> Path:
    """A tiny CSV in the JODIE / TGL format (header, then ``user,item,ts,label,f...``)."""
    rng = np.random.default_rng(seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.cumsum(rng.integers(1, 50, size=events))
    header = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features"
    lines = [header]
    for e in range(events):
        f = ",".join(f"{v:.4f}" for v in rng.normal(size=feat_dim))
        lines.append(f"{rng.integers(users)},{rng.integers(items)},{float(t[e])},0,{f}")
    path.write_text("\n".join(lines) + "\n")
    return path
