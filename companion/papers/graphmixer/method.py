"""GraphMixer's three parts in plain torch, and the temporal sampler that feeds them.

Names follow the paper and the official code (CongWeilin/GraphMixer, ``model.py``):

* :func:`time_frequencies` and :class:`TimeEncode`: the *fixed* time encoding
  ``cos(ω Δt)`` with ``ω_i = 10^{-9(i-1)/(d-1)}`` (official ``TimeEncode``: weights set to
  ``1 / 10 ** linspace(0, 9, d)`` and frozen). ``trainable=True`` is the control arm.
* :class:`FeatEncode`: a token of a link is ``Linear([edge feature ‖ cos(ω Δt)])``.
* :class:`MixerBlock` and :class:`MixerLinkEncoder`: the link encoder, one MLP-Mixer block over
  the ``K`` most recent links (token mixing across links, channel mixing across features, each
  with pre-LayerNorm, GELU and a residual), then LayerNorm, a mean over tokens and a Linear.
* :func:`node_encoding`: the node encoder ``s_i = x_i + mean_{j ∈ N(i; t)} x_j`` over the
  neighbours of ``i`` among the previous ``W`` events (official ``compute_sign_feats``).
* :class:`LinkClassifier`: ``logit = w_outᵀ ReLU(W_src h_u + W_dst h_v)`` (official
  ``EdgePredictor_per_node``).
* the baselines over the same tokens: :class:`AttentionLinkEncoder` (TGAT-style, one attention
  layer whose query is the node itself at Δt = 0) and :class:`GRULinkEncoder` (an RNN over
  the links, oldest first).

The sampler (:class:`TemporalGraph`) is written here in NumPy because torch-geometric is not
part of this environment; the official code does not use PyG either (its sampler is C++).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ----------------------------------------------------------------------------------------------
# the temporal graph and its sampler


class TemporalGraph:
    """A stream of events ``(src[e], dst[e], t[e], edge_feat[e])`` sorted by time, with the two
    look-ups the model needs, both *strictly before* a query event (no leakage):

    * :meth:`recent_links`: a node's ``K`` most recent links, most recent first;
    * :meth:`node_codes`: ``x_i`` plus the mean feature of its neighbours among the previous
      ``W`` events.

    Links are undirected: event ``e`` is a link of both its ends. Node ids index ``node_feat``.
    """

    def __init__(self, src, dst, t, edge_feat, node_feat):
        self.src = np.asarray(src, dtype=np.int64)
        self.dst = np.asarray(dst, dtype=np.int64)
        self.t = np.asarray(t, dtype=np.float64)
        self.edge_feat = np.asarray(edge_feat, dtype=np.float32)
        self.node_feat = np.asarray(node_feat, dtype=np.float32)
        if np.any(np.diff(self.t) < 0):
            raise ValueError("events must be sorted by time")
        n_events = len(self.src)
        self.num_nodes = len(self.node_feat)
        # CSR over (node, event): every event twice, once per end, keyed node*(E+1)+event
        node = np.concatenate([self.src, self.dst])
        other = np.concatenate([self.dst, self.src])
        event = np.concatenate([np.arange(n_events), np.arange(n_events)])
        self._stride = n_events + 1
        keys = node * self._stride + event
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._event = event[order]
        self._node_start = np.searchsorted(self._keys, np.arange(self.num_nodes) * self._stride)
        # prefix sums of the *other* end's features, for windowed means in O(1) per query
        feats = self.node_feat[other[order]].astype(np.float64)
        self._cum = np.concatenate([np.zeros((1, feats.shape[1])), np.cumsum(feats, axis=0)])

    def __len__(self) -> int:
        return len(self.src)

    def recent_links(self, nodes, before, k: int):
        """For each query (``nodes[q]``, event index ``before[q]``): the indices of the node's
        ``k`` most recent events with index < ``before[q]``, most recent first, ``-1`` where
        it has fewer; shape ``[Q, k]``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        before = np.asarray(before, dtype=np.int64)
        end = np.searchsorted(self._keys, nodes * self._stride + before)  # first key ≥ query
        start = self._node_start[nodes]
        pos = end[:, None] - 1 - np.arange(k)[None, :]
        valid = pos >= start[:, None]
        return np.where(valid, self._event[np.clip(pos, 0, None)], -1)

    def node_codes(self, nodes, before, window: int) -> np.ndarray:
        """``s_i = x_i + mean x_j`` over the neighbours of ``i`` in events ``[before-W, before)``
        (each event counts once per link; no neighbour: ``s_i = x_i``)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        before = np.asarray(before, dtype=np.int64)
        hi = np.searchsorted(self._keys, nodes * self._stride + before)
        lo = np.searchsorted(self._keys, nodes * self._stride + np.maximum(before - window, 0))
        count = (hi - lo)[:, None]
        mean = (self._cum[hi] - self._cum[lo]) / np.maximum(count, 1)
        return (self.node_feat[nodes] + mean).astype(np.float32)

    def strictly_before(self, events) -> np.ndarray:
        """For each event, the index of the first event at the same time: the links a query at
        that event may use are the events before it (strictly earlier times, ties excluded)."""
        return np.searchsorted(self.t, self.t[np.asarray(events)], side="left")

    def link_tokens(self, nodes, before, t_query, k: int):
        """The link encoder's inputs for each query: edge features ``[Q, k, F_e]`` (zero where
        padded), time gaps ``Δt = t_query − t_e`` ``[Q, k]`` (zero where padded) and the mask
        of real links ``[Q, k]``."""
        idx = self.recent_links(nodes, before, k)
        mask = idx >= 0
        safe = np.clip(idx, 0, None)
        dt = np.where(mask, np.asarray(t_query)[:, None] - self.t[safe], 0.0)
        feats = np.where(mask[..., None], self.edge_feat[safe], 0.0)
        return feats.astype(np.float32), dt.astype(np.float32), mask


# ----------------------------------------------------------------------------------------------
# time encoding and tokens


def time_frequencies(dim: int) -> torch.Tensor:
    """ω_i = 10^{-9 (i-1)/(d-1)}, i = 1..d: from 1 down to 1e-9 (official ``TimeEncode``)."""
    return 1.0 / 10.0 ** torch.linspace(0, 9, dim, dtype=torch.float64)


class TimeEncode(nn.Module):
    """``cos(ω Δt + b)`` with the fixed ω of :func:`time_frequencies` and b = 0; frozen unless
    ``trainable`` (the control arm: the same start, then learned like TGAT's encoding)."""

    def __init__(self, dim: int, trainable: bool = False):
        super().__init__()
        self.omega = nn.Parameter(time_frequencies(dim).float(), requires_grad=trainable)
        self.bias = nn.Parameter(torch.zeros(dim), requires_grad=trainable)

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return torch.cos(dt.unsqueeze(-1) * self.omega + self.bias)


class FeatEncode(nn.Module):
    """A link's token: ``Linear([edge feature ‖ cos(ω Δt)])`` (official ``FeatEncode``)."""

    def __init__(self, edge_dim: int, time_dim: int, hidden: int, trainable_time: bool = False):
        super().__init__()
        self.time_encoder = TimeEncode(time_dim, trainable_time)
        self.feat_encoder = nn.Linear(edge_dim + time_dim, hidden)

    def forward(self, edge_feats: torch.Tensor, dt: torch.Tensor) -> torch.Tensor:
        return self.feat_encoder(torch.cat([edge_feats, self.time_encoder(dt)], dim=-1))


# ----------------------------------------------------------------------------------------------
# link encoders


class FeedForward(nn.Module):
    """Linear → GELU → dropout → Linear → dropout (the Mixer's MLP)."""

    def __init__(self, dim: int, expansion: float, dropout: float = 0.0):
        super().__init__()
        inner = max(1, int(expansion * dim))
        self.linear_0 = nn.Linear(dim, inner)
        self.linear_1 = nn.Linear(inner, dim)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.dropout(F.gelu(self.linear_0(x)), self.dropout, self.training)
        return F.dropout(self.linear_1(x), self.dropout, self.training)


class MixerBlock(nn.Module):
    """``X ← X + (MLP_token(LN(X)ᵀ))ᵀ``, then ``X ← X + MLP_channel(LN(X))`` on ``[B, K, d]``:
    the token MLP mixes the K links (expansion 0.5), the channel MLP each link's features
    (expansion 4)."""

    def __init__(
        self, tokens: int, dim: int, token_expansion=0.5, channel_expansion=4.0, dropout=0.0
    ):
        super().__init__()
        self.token_layernorm = nn.LayerNorm(dim)
        self.token_forward = FeedForward(tokens, token_expansion, dropout)
        self.channel_layernorm = nn.LayerNorm(dim)
        self.channel_forward = FeedForward(dim, channel_expansion, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_forward(self.token_layernorm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_forward(self.channel_layernorm(x))


class MixerLinkEncoder(nn.Module):
    """GraphMixer's link encoder: tokens of the K most recent links (zero rows where a node has
    fewer), one Mixer block, LayerNorm, mean over the K tokens *including* the padded ones (as
    the official ``MLPMixer``), Linear."""

    def __init__(self, k, edge_dim, time_dim, hidden, out, dropout=0.0, trainable_time=False):
        super().__init__()
        self.tokens = FeatEncode(edge_dim, time_dim, hidden, trainable_time)
        self.mixer = MixerBlock(k, hidden, dropout=dropout)
        self.layernorm = nn.LayerNorm(hidden)
        self.mlp_head = nn.Linear(hidden, out)

    def forward(self, edge_feats, dt, mask):
        x = self.tokens(edge_feats, dt) * mask.unsqueeze(-1)  # padded tokens are zero rows
        x = self.layernorm(self.mixer(x))
        return self.mlp_head(x.mean(dim=1))


class AttentionLinkEncoder(nn.Module):
    """The TGAT-style baseline over the same tokens: one multi-head attention layer whose query
    is the node itself at Δt = 0 (a zero edge feature and ``cos(ω·0)``), whose keys and values
    are the link tokens (padding masked), followed by a residual MLP and a Linear."""

    def __init__(
        self, k, edge_dim, time_dim, hidden, out, dropout=0.0, heads=2, trainable_time=False
    ):
        super().__init__()
        self.tokens = FeatEncode(edge_dim, time_dim, hidden, trainable_time)
        self.edge_dim = edge_dim
        self.attention = nn.MultiheadAttention(hidden, heads, dropout=dropout, batch_first=True)
        self.layernorm = nn.LayerNorm(hidden)
        self.ffn = FeedForward(hidden, 2.0, dropout)
        self.mlp_head = nn.Linear(hidden, out)

    def forward(self, edge_feats, dt, mask):
        b = edge_feats.shape[0]
        kv = self.tokens(edge_feats, dt)
        q = self.tokens(edge_feats.new_zeros(b, 1, self.edge_dim), dt.new_zeros(b, 1))
        # a node without links attends to itself only: its query joins the keys
        keys = torch.cat([q, kv], dim=1)
        pad = torch.cat([mask.new_ones(b, 1), mask], dim=1)
        h, _ = self.attention(q, keys, keys, key_padding_mask=~pad, need_weights=False)
        h = self.layernorm(h[:, 0] + q[:, 0])
        return self.mlp_head(h + self.ffn(h))


class GRULinkEncoder(nn.Module):
    """The RNN baseline over the same tokens: a GRU reads the links oldest → newest (padding
    skipped: padded slots are the oldest and are zero rows) and its last state is projected."""

    def __init__(self, k, edge_dim, time_dim, hidden, out, dropout=0.0, trainable_time=False):
        super().__init__()
        self.tokens = FeatEncode(edge_dim, time_dim, hidden, trainable_time)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.mlp_head = nn.Linear(hidden, out)

    def forward(self, edge_feats, dt, mask):
        x = self.tokens(edge_feats, dt) * mask.unsqueeze(-1)
        _, h = self.gru(x.flip(1))  # oldest first, the most recent link last
        return self.mlp_head(h[0])


# ----------------------------------------------------------------------------------------------
# node encoder and classifier


def node_encoding(x_self: torch.Tensor, x_neighbours: torch.Tensor, mask: torch.Tensor):
    """``s_i = x_i + (1/|N|) Σ_{j∈N} x_j`` (zero mean when N is empty), the reference form of
    :meth:`TemporalGraph.node_codes` on explicit neighbour lists ``[B, n, F]`` with a mask."""
    m = mask.unsqueeze(-1).to(x_neighbours.dtype)
    count = m.sum(dim=1).clamp(min=1)
    return x_self + (x_neighbours * m).sum(dim=1) / count


class LinkClassifier(nn.Module):
    """``logit(u, v) = w_outᵀ ReLU(W_src h_u + W_dst h_v) + b`` with a 100-unit hidden layer in
    the official code (``hidden`` here)."""

    def __init__(self, dim_in: int, hidden: int = 100):
        super().__init__()
        self.src_fc = nn.Linear(dim_in, hidden)
        self.dst_fc = nn.Linear(dim_in, hidden)
        self.out_fc = nn.Linear(hidden, 1)

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        return self.out_fc(F.relu(self.src_fc(h_src) + self.dst_fc(h_dst))).squeeze(-1)


# ----------------------------------------------------------------------------------------------
# the whole model

ENCODERS = {"mixer": MixerLinkEncoder, "attention": AttentionLinkEncoder, "gru": GRULinkEncoder}


class TemporalLinkPredictor(nn.Module):
    """``h = [link code ‖ node code]`` for both ends, then :class:`LinkClassifier`. ``encoder``
    is ``"mixer"`` (GraphMixer), ``"attention"``, ``"gru"`` or ``None`` (node encoder only)."""

    def __init__(
        self, encoder, k, edge_dim, node_dim, time_dim, hidden, dropout=0.0, trainable_time=False
    ):
        super().__init__()
        self.link_encoder = (
            ENCODERS[encoder](
                k,
                edge_dim,
                time_dim,
                hidden,
                hidden,
                dropout=dropout,
                trainable_time=trainable_time,
            )
            if encoder is not None
            else None
        )
        dim_in = node_dim + (hidden if encoder is not None else 0)
        self.classifier = LinkClassifier(dim_in, hidden)

    def code(self, links, node_code):
        if self.link_encoder is None:
            return node_code
        return torch.cat([self.link_encoder(*links), node_code], dim=-1)

    def forward(self, src_links, src_nodes, dst_links, dst_nodes):
        return self.classifier(self.code(src_links, src_nodes), self.code(dst_links, dst_nodes))
