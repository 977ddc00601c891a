"""The receptor-conditioned molecular GNN of Hladiš et al. (ICLR 2023), in plain torch.

Names follow the official JAX/Flax code (``Receptor2Odorant/main/model/normal_QK.py``):

* :class:`ReceptorEncoder`: the receptor vector ``S`` = LayerNorm(Dense(ReLU(Dense([CLS])))).
  The paper's [CLS] is the frozen ProtBERT embedding of the receptor sequence; here it is a
  **stand-in** (:func:`standin_cls`), ProtBERT being unavailable offline.
* **Injection** (``normal_QK``): ``S`` is concatenated to every atom's numeric features before
  the first layer, ``x_v⁰ = Σ_k Emb_k(a_vk) + W [n_v, S]``, so the whole message passing runs in
  "a protein-specific environment" (abstract).
* **endCLS** (the official ablation ``endCLS_normal_QK``): the molecule is embedded without
  ``S``; ``[pool(h), [CLS]]`` then goes through Dense, ReLU, Dense, LayerNorm and the output.
* :class:`MessagePassing` (``BasicMPNN.py``): edge MLP on ``[h_u, h_v, e_uv]``, sum over
  incoming edges, GRU update, the same weights at every step, the edge state replaced by the
  message (jraph's ``GraphNetwork``), a step count drawn from a truncated normal in training.
* :class:`GraphTransformerLayer` (``MPattns.py``): queries and keys from message passing (values
  reuse the keys' network), masked multi-head attention over the atoms of one graph, residual and
  LayerNorm, feed-forward (×widening), residual and LayerNorm.
* :func:`attention_sum_pool` (``GlobalAttnSumPoolLayer``): softmax over a graph's atoms of a
  learned logit, weighted sum.

torch-geometric is not used: messages are summed with ``index_add_`` on a flat edge list, and
attention runs on a padded ``[graphs, atoms, atoms]`` layout with a mask.

Molecules come from SMILES through RDKit (:func:`mol_graph`). A **mixture** is the disconnected
union of its components' graphs, bond edges only (the official ``mix__concatGraph``): messages
never cross between its molecules, which meet only in the attention over all atoms of the graph.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ODORANTS_FILE = Path(__file__).resolve().parents[3] / "data" / "olfactory_gnn" / "odorants.csv"

# ---------------------------------------------------------------------------------------------
# Molecules: SMILES -> atoms and bonds (RDKit)
# ---------------------------------------------------------------------------------------------

ELEMENTS = (6, 7, 8, 16)  # C, N, O, S; index 0 = padding, len + 1 = any other element
# bond types: 0 padding, 1 single, 2 double, 3 triple, 4 aromatic
BOND_INDEX = {1.0: 1, 2.0: 2, 3.0: 3, 1.5: 4}
N_BOND_TYPES = 5
N_HYBRID = 8  # RDKit's HybridizationType values 0..7
NUMERIC_ATOM_FEATURES = (
    "FormalCharge",
    "NumImplicitHs",
    "ExplicitValence",
    "Mass/100",
    "IsAromatic",
)

# functional groups and anchors of the synthetic receptor rule (SMARTS), in a fixed order. The
# first atom of each pattern is its *site*, the chain carbon that carries the group (both
# carbons for a double bond); the rule measures bond distances between sites.
GROUPS = {
    "alcohol": "[CX4][OX2H]",
    "aldehyde": "[CX3H1](=O)[#6]",
    "ketone": "[CX3](=O)([#6])[#6]",
    "acid": "[CX3](=O)[OX2H1]",
    "ester": "[CX3](=O)([#6])[OX2][#6]",
    "amine": "[CX4][NX3;H2,H1;!$(NC=O)]",
    "thiol": "[CX4][SX2H]",
    "nitrile": "[CX2]#[NX1]",
}
ANCHORS = {  # a second group, a C=C double bond or a methyl branch
    **GROUPS,
    "alkene": "[CX3]=[CX3]",
    "branch": "[CX4H1]([CH3])([#6])[#6]",
}
SITE_ATOMS = {"alkene": 2}  # how many leading atoms of a match are sites (default 1)
# the bifunctional chains: a terminal group X on C1, an anchor Y on carbon k of the chain
TERMINAL = {  # SMILES of C1 with X, written so that the chain continues to the right
    "alcohol": "OC",
    "aldehyde": "O=C",
    "acid": "OC(=O)",
    "amine": "NC",
    "thiol": "SC",
    "nitrile": "N#C",
}
ANCHOR_ON_CHAIN = {  # how carbon k carries Y (alkene: a double bond from k to k + 1)
    "alcohol": "C(O)",
    "amine": "C(N)",
    "thiol": "C(S)",
    "ketone": "C(=O)",
    "branch": "C(C)",
    "alkene": "C=",
}


def positional_isomers(
    lo: int,
    hi: int,
    terminals=tuple(TERMINAL),
    anchors=tuple(ANCHOR_ON_CHAIN),
    n_anchors: int = 1,
) -> list[tuple[str, str, str]]:
    """``(name, SMILES, source)`` of chains of ``lo``..``hi`` carbons: a terminal group X on C1
    and ``n_anchors`` anchors Y (a second group, a methyl branch or a C=C double bond) on
    distinct inner carbons. For one X, set of anchors and chain length, the isomers differ only
    in where the anchors sit: the same groups, the same carbon count, other distances. An
    anchor is never X's own kind nor repeated; a ketone, a branch or a double bond sits on an
    inner carbon (``k < n``); a double bond is not followed by another anchor."""
    import itertools

    out = []
    for n in range(lo, hi + 1):
        for x in terminals:
            kinds = [y for y in anchors if y != x]
            for ys in itertools.combinations(kinds, n_anchors):
                places = []
                for y in ys:
                    inner = y in ("ketone", "branch", "alkene")
                    places.append(range(2, n if inner else n + 1))
                for ks in itertools.product(*places):
                    if len(set(ks)) < len(ks):
                        continue
                    if any(y == "alkene" and k + 1 in ks for y, k in zip(ys, ks)):
                        continue
                    chain = [TERMINAL[x]] + ["C"] * (n - 1)
                    for y, k in zip(ys, ks):
                        chain[k - 1] = ANCHOR_ON_CHAIN[y]
                    where = ", ".join(f"{y} on C{k}" for y, k in zip(ys, ks))
                    out.append((f"C{n} {x} + {where}", "".join(chain), "generated: isomer"))
    return out


def read_odorants(path: str | Path = ODORANTS_FILE) -> list[tuple[str, str, str]]:
    """``(name, SMILES, source)`` rows of the project's odorant list (lines starting with ``#``
    are provenance comments)."""
    with open(path, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return [(r["name"], r["smiles"], r["source"]) for r in rows]


@dataclasses.dataclass
class MolGraph:
    """One molecule or mixture as arrays: atoms (embedded + numeric features), directed edges
    (both directions of every bond), and each atom's component."""

    smiles: str
    atom_z: list[int]  # element index (1..len(ELEMENTS)+1)
    hybrid: list[int]
    numeric: list[list[float]]  # NUMERIC_ATOM_FEATURES
    senders: list[int]
    receivers: list[int]
    bond_type: list[int]
    bond_aromatic: list[float]
    component: list[int]

    @property
    def n_atoms(self) -> int:
        return len(self.atom_z)


def mol_graph(smiles: str) -> MolGraph:
    """RDKit atoms and bonds of ``smiles``; components separated by ``.`` form a mixture.

    Atom features as in the official config (AtomicNum, Hybridization embedded; FormalCharge,
    NumImplicitHs, ExplicitValence, Mass, IsAromatic numeric; ChiralTag dropped: no stereo here),
    bond features BondType (embedded) and IsAromatic. Every bond gives two directed edges
    (jraph's ``senders = begin + end``). A mixture is the disconnected graph of the dot-joined
    SMILES with bond edges only, as in the official code (``mix__concatGraph``,
    ``mol2graph/jraph/convert.py``): its molecules meet only in the attention, which spans all
    atoms of a graph."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"RDKit cannot parse SMILES {smiles!r}")
    comp = [0] * mol.GetNumAtoms()
    for c, atoms in enumerate(Chem.GetMolFrags(mol)):
        for a in atoms:
            comp[a] = c
    z, hyb, num = [], [], []
    for atom in mol.GetAtoms():
        an = atom.GetAtomicNum()
        z.append(ELEMENTS.index(an) + 1 if an in ELEMENTS else len(ELEMENTS) + 1)
        hyb.append(min(int(atom.GetHybridization()), N_HYBRID - 1))
        num.append(
            [
                float(atom.GetFormalCharge()),
                float(atom.GetNumImplicitHs()),
                float(atom.GetValence(Chem.ValenceType.EXPLICIT)),
                atom.GetMass() / 100.0,
                float(atom.GetIsAromatic()),
            ]
        )
    begin, end, btype, barom = [], [], [], []
    for bond in mol.GetBonds():
        begin.append(bond.GetBeginAtomIdx())
        end.append(bond.GetEndAtomIdx())
        btype.append(BOND_INDEX.get(bond.GetBondTypeAsDouble(), 1))
        barom.append(float(bond.GetIsAromatic()))
    senders, receivers = begin + end, end + begin
    btype, barom = btype + btype, barom + barom
    return MolGraph(smiles, z, hyb, num, senders, receivers, btype, barom, comp)


@dataclasses.dataclass
class GraphBank:
    """Every molecule of a run, featurised once (RDKit is called once per SMILES per run) and
    stored padded: atoms to ``max_atoms``, edges as one flat list with a graph index."""

    atom_z: torch.Tensor  # [M, N] long, 0 = padding
    hybrid: torch.Tensor  # [M, N] long
    numeric: torch.Tensor  # [M, N, F]
    node_mask: torch.Tensor  # [M, N] bool
    edge_graph: torch.Tensor  # [E] which molecule each edge belongs to
    senders: torch.Tensor  # [E] atom index within its molecule
    receivers: torch.Tensor  # [E]
    bond_type: torch.Tensor  # [E] long
    bond_aromatic: torch.Tensor  # [E]
    edge_start: torch.Tensor  # [M + 1] edges of molecule m: edge_start[m]:edge_start[m+1]


def build_bank(graphs: list[MolGraph]) -> GraphBank:
    m, n = len(graphs), max(g.n_atoms for g in graphs)
    z = torch.zeros(m, n, dtype=torch.long)
    hyb = torch.zeros(m, n, dtype=torch.long)
    num = torch.zeros(m, n, len(NUMERIC_ATOM_FEATURES))
    mask = torch.zeros(m, n, dtype=torch.bool)
    eg, s, r, bt, ba, start = [], [], [], [], [], [0]
    for i, g in enumerate(graphs):
        k = g.n_atoms
        z[i, :k] = torch.tensor(g.atom_z)
        hyb[i, :k] = torch.tensor(g.hybrid)
        num[i, :k] = torch.tensor(g.numeric)
        mask[i, :k] = True
        eg += [i] * len(g.senders)
        s += g.senders
        r += g.receivers
        bt += g.bond_type
        ba += g.bond_aromatic
        start.append(start[-1] + len(g.senders))
    t = torch.tensor
    return GraphBank(
        z, hyb, num, mask, t(eg), t(s), t(r), t(bt), t(ba, dtype=torch.float32), t(start)
    )


@dataclasses.dataclass
class GraphBatch:
    """A batch of graphs, padded atoms ``[B, N]`` and a flat edge list over ``B·N`` atoms."""

    atom_z: torch.Tensor
    hybrid: torch.Tensor
    numeric: torch.Tensor
    node_mask: torch.Tensor
    senders: torch.Tensor  # flat atom index b·N + i
    receivers: torch.Tensor
    bond_type: torch.Tensor
    bond_aromatic: torch.Tensor


def gather_batch(bank: GraphBank, index: torch.Tensor) -> GraphBatch:
    """The graphs ``bank[index]`` as one batch: atoms stay padded, edges are concatenated with
    offsets ``b·N`` (a disconnected union, as jraph.batch)."""
    index = index.cpu()
    n = bank.atom_z.shape[1]
    starts, ends = bank.edge_start[index], bank.edge_start[index + 1]
    counts = ends - starts
    rows = torch.repeat_interleave(torch.arange(len(index)), counts)
    within = torch.arange(int(counts.sum())) - torch.repeat_interleave(
        torch.cumsum(counts, 0) - counts, counts
    )
    edges = torch.repeat_interleave(starts, counts) + within
    offset = rows * n
    return GraphBatch(
        bank.atom_z[index],
        bank.hybrid[index],
        bank.numeric[index],
        bank.node_mask[index],
        bank.senders[edges] + offset,
        bank.receivers[edges] + offset,
        bank.bond_type[edges],
        bank.bond_aromatic[edges],
    )


# ---------------------------------------------------------------------------------------------
# The synthetic receptors: a known ground truth
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Receptor:
    """A synthetic receptor: it responds to a molecule in which a site of group ``group`` lies
    ``lo``..``hi`` bonds from a site of anchor ``anchor`` (in one component of a mixture)."""

    group: str
    anchor: str
    lo: int
    hi: int


@dataclasses.dataclass(frozen=True)
class MolFacts:
    """What the rule reads of a molecule, per component: its groups and anchors (names), its
    carbon count, and the bond distances between the sites of every (group, anchor) pair."""

    components: tuple[tuple[frozenset, int, tuple], ...]  # (names, carbons, ((g, h, d), ...))

    def names(self) -> frozenset:
        return frozenset().union(*(c[0] for c in self.components))

    def carbons(self) -> int:
        return sum(c[1] for c in self.components)


def _sites(mol, name: str) -> list[int]:
    k = SITE_ATOMS.get(name, 1)
    return sorted(
        {a for match in mol.GetSubstructMatches(_smarts(ANCHORS[name])) for a in match[:k]}
    )


def mol_facts(smiles: str) -> MolFacts:
    """Per component: the groups and anchors present (SMARTS matches of :data:`ANCHORS`), the
    carbon count, and every bond distance (RDKit's topological distance matrix) between a site
    of a group and a different site of an anchor."""
    from rdkit import Chem

    out = []
    for part in smiles.split("."):
        mol = Chem.MolFromSmiles(part)
        dist = Chem.GetDistanceMatrix(mol)
        sites = {name: _sites(mol, name) for name in ANCHORS}
        sites = {name: v for name, v in sites.items() if v}
        pairs = []
        for g in GROUPS:
            for h in ANCHORS:
                if g == h or g not in sites or h not in sites:
                    continue
                ds = {int(dist[u, v]) for u in sites[g] for v in sites[h] if u != v}
                pairs += [(g, h, d) for d in sorted(ds)]
        carbons = sum(1 for a in mol.GetAtoms() if a.GetAtomicNum() == 6)
        out.append((frozenset(sites), carbons, tuple(pairs)))
    return MolFacts(tuple(out))


_SMARTS: dict = {}


def _smarts(text: str):
    from rdkit import Chem

    if text not in _SMARTS:
        _SMARTS[text] = Chem.MolFromSmarts(text)
    return _SMARTS[text]


def responds(receptor: Receptor, facts: MolFacts) -> bool:
    """The ground truth: some site of the receptor's group lies ``lo``..``hi`` bonds from a site
    of its anchor, within one molecule (a mixture responds when one of its molecules does)."""
    return any(
        g == receptor.group and h == receptor.anchor and receptor.lo <= d <= receptor.hi
        for _, _, pairs in facts.components
        for g, h, d in pairs
    )


MAX_DISTANCE = 10  # distances 1..MAX_DISTANCE take one bit each in the receptor code
MAX_CARBONS = 16  # carbon counts 1..MAX_CARBONS in the descriptor control


def receptor_code(receptor: Receptor) -> np.ndarray:
    """The rule as a vector: one-hot group, one-hot anchor, one bit per bond distance
    1..MAX_DISTANCE inside the window."""
    g = np.zeros(len(GROUPS))
    g[list(GROUPS).index(receptor.group)] = 1.0
    h = np.zeros(len(ANCHORS))
    h[list(ANCHORS).index(receptor.anchor)] = 1.0
    window = np.array([receptor.lo <= d <= receptor.hi for d in range(1, MAX_DISTANCE + 1)], float)
    return np.concatenate([g, h, window])


def descriptors(facts: MolFacts) -> np.ndarray:
    """Whole-molecule descriptors for the control: which groups and anchors are present
    (multi-hot over :data:`ANCHORS`) and the carbon count (one-hot 1..MAX_CARBONS). They hold
    everything about a molecule except *where* its groups sit."""
    names = facts.names()
    present = np.array([name in names for name in ANCHORS], float)
    carbons = np.zeros(MAX_CARBONS)
    carbons[min(facts.carbons(), MAX_CARBONS) - 1] = 1.0
    return np.concatenate([present, carbons])


def standin_cls(codes: np.ndarray, dim: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """The **stand-in** for ProtBERT's [CLS] vector: a fixed random projection of the receptors'
    rule codes to ``dim`` dimensions plus Gaussian noise of std ``noise`` per receptor. (The
    real [CLS] is a 1024-d embedding of the amino-acid sequence; what matters here is only that
    similar receptors get similar vectors and that the rule is not handed over in plain form.)"""
    w = rng.standard_normal((codes.shape[1], dim)) / math.sqrt(codes.shape[1])
    return codes @ w + noise * rng.standard_normal((codes.shape[0], dim))


def sequence_standin_cls(sequence: str, dim: int, seed: int = 0) -> np.ndarray:
    """Stand-in [CLS] for a real receptor sequence (the full preset): counts of amino-acid
    3-mers, hashed into 4,096 buckets, normalised, and projected to ``dim`` by a fixed random
    matrix. Similar sequences get similar vectors; nothing here is learned."""
    buckets = 4096
    counts = np.zeros(buckets)
    seq = sequence.strip().upper()
    for i in range(len(seq) - 2):
        kmer = seq[i : i + 3]
        h = 0
        for ch in kmer:  # a fixed polynomial hash (Python's hash() is salted per process)
            h = (h * 131 + ord(ch)) % buckets
        counts[h] += 1.0
    counts /= max(1.0, np.linalg.norm(counts))
    w = np.random.default_rng(seed + 12345).standard_normal((buckets, dim))
    return counts @ w


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


def draw_steps(mean: float, sd: float, lo: int, hi: int, generator: torch.Generator | None) -> int:
    """Number of message-passing steps: in training a truncated normal (mean, sd) on ``[lo, hi]``,
    rounded (official: mean 6, sd 1, range [3, 9]); ``generator=None`` (evaluation): the
    rounded mean. Drawn by rejection from torch's generator, so checkpoints keep its state."""
    if generator is None or sd == 0:
        return int(round(mean))
    while True:
        x = mean + sd * torch.randn((), generator=generator).item()
        if lo <= x <= hi:
            return int(round(x))


class MessagePassing(nn.Module):
    """Gilmer-style MPNN step, repeated ``steps`` times with shared weights (``BasicMPNN.py``):

        m_uv^{t+1} = ReLU(W [h_u^t, h_v^t, e_uv^t]),  M_v = Σ_{u→v} m_uv,
        h_v^{t+1} = GRU(M_v, h_v^t),

    and the edge state becomes the message, ``e_uv^{t+1} = m_uv^{t+1}`` (jraph's GraphNetwork
    replaces edges by ``update_edge_fn``'s output). ``u`` is the sender, ``v`` the receiver."""

    def __init__(self, dim: int, edge_dim: int):
        super().__init__()
        self.edge = nn.Linear(2 * dim + edge_dim, edge_dim)
        self.gru = nn.GRUCell(edge_dim, dim)

    def forward(self, h, senders, receivers, e, steps: int):
        for _ in range(steps):
            m = F.relu(self.edge(torch.cat([h[senders], h[receivers], e], dim=-1)))
            agg = torch.zeros(h.shape[0], m.shape[1], dtype=h.dtype, device=h.device)
            agg.index_add_(0, receivers, m)  # sum aggregation over incoming edges
            h = self.gru(agg, h)
            e = m
        return h


def masked_attention(q, k, v, mask, heads: int):
    """Multi-head scaled dot-product attention within each graph: ``q, k, v`` are ``[B, N, d]``,
    ``mask`` ``[B, N]`` marks real atoms; a padding atom is never attended to.

        A = softmax(q_h k_hᵀ / √d_h + log mask),   out_h = A v_h."""
    b, n, d = q.shape
    dh = d // heads

    def split(x):
        return x.view(b, n, heads, dh).transpose(1, 2)

    scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(dh)
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return (attn @ split(v)).transpose(1, 2).reshape(b, n, d)


class GraphTransformerLayer(nn.Module):
    """``GraphProcessingEncoderLayer`` (``MPattns.py``): Q and K from two message-passing
    networks, V from K's (the official code passes ``_mpnn_V = mpnn_K``), then

        x' = LN(x + W_o MHA(W_q Q, W_k K, W_v V)),   x'' = LN(x' + FFN(x')),

    with FFN = Dense(widening·d), ReLU, Dense(d). Attention is masked to the atoms of a graph
    (for a mixture: the atoms of all its components)."""

    def __init__(self, dim: int, edge_dim: int, heads: int, widening: int):
        super().__init__()
        self.heads = heads
        self.mpnn_q = MessagePassing(dim, edge_dim)
        self.mpnn_k = MessagePassing(dim, edge_dim)
        self.w_q, self.w_k = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.w_v, self.w_o = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(
            nn.Linear(dim, widening * dim), nn.ReLU(), nn.Linear(widening * dim, dim)
        )

    def forward(self, x, mask, senders, receivers, e, steps_q: int, steps_k: int):
        b, n, d = x.shape
        flat = x.reshape(b * n, d)
        q = self.mpnn_q(flat, senders, receivers, e, steps_q).view(b, n, d)
        k = self.mpnn_k(flat, senders, receivers, e, steps_k).view(b, n, d)
        v = k  # V reuses K's message-passing network on the same input
        att = masked_attention(self.w_q(q), self.w_k(k), self.w_v(v), mask, self.heads)
        x = self.ln1(x + self.w_o(att))
        x = self.ln2(x + self.ffn(x))
        return x * mask[..., None]


def attention_sum_pool(x, mask, logit: nn.Linear):
    """``GlobalAttnSumPoolLayer``: ``g = Σ_v softmax_v(w·x_v) x_v`` over the atoms of a graph."""
    a = logit(x).squeeze(-1).masked_fill(~mask, float("-inf"))
    a = torch.softmax(a, dim=-1)
    return (a[..., None] * x).sum(1)


class ReceptorEncoder(nn.Module):
    """``S = LayerNorm(Dense_d(ReLU(Dense_h([CLS]))))`` (official: h = 256, d = 72)."""

    def __init__(self, cls_dim: int, hidden: int, dim: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(cls_dim, hidden), nn.ReLU(), nn.Linear(hidden, dim), nn.LayerNorm(dim)
        )

    def forward(self, cls):
        return self.net(cls)


MODES = ("inject", "endcls")


class OdorantReceptorModel(nn.Module):
    """Receptor–odorant activation logit. ``mode="inject"`` is the paper's model (``normal_QK``):
    ``S`` enters every atom's input features. ``mode="endcls"`` is the official ablation
    (``endCLS_normal_QK``): the graph is processed without the receptor and ``[CLS]`` is
    concatenated to the pooled molecule vector before a Dense–ReLU–Dense–LayerNorm head.
    Everything else (embeddings, layers, pooling, output) is the same module in both modes."""

    def __init__(
        self,
        mode: str,
        cls_dim: int,
        dim: int = 32,
        edge_dim: int = 16,
        layers: int = 2,
        heads: int = 4,
        widening: int = 2,
        receptor_hidden: int = 64,
        steps_mean: float = 3.0,
        steps_sd: float = 1.0,
        steps_range: tuple[int, int] = (2, 4),
    ):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.steps = (steps_mean, steps_sd, *steps_range)
        self.atom_embed = nn.Embedding(len(ELEMENTS) + 2, dim)
        self.hybrid_embed = nn.Embedding(N_HYBRID, dim)
        extra = dim if mode == "inject" else 0
        self.x_proj = nn.Linear(len(NUMERIC_ATOM_FEATURES) + extra, dim)
        self.bond_embed = nn.Embedding(N_BOND_TYPES, edge_dim)
        self.e_proj = nn.Linear(1, edge_dim)
        self.layers = nn.ModuleList(
            GraphTransformerLayer(dim, edge_dim, heads, widening) for _ in range(layers)
        )
        self.pool_logit = nn.Linear(dim, 1, bias=False)
        if mode == "inject":
            self.receptor = ReceptorEncoder(cls_dim, receptor_hidden, dim)
        else:  # endCLS head: Dense, ReLU, Dense, LayerNorm on [pooled molecule, CLS]
            self.head = nn.Sequential(
                nn.Linear(dim + cls_dim, receptor_hidden),
                nn.ReLU(),
                nn.Linear(receptor_hidden, dim),
                nn.LayerNorm(dim),
            )
        self.out = nn.Linear(dim, 1)

    def embed_atoms(self, g: GraphBatch, s: torch.Tensor | None):
        """``x_v⁰ = Emb(AtomicNum) + Emb(Hybridization) + W [numeric, S]`` (``S`` only when
        injecting), zero on padding atoms."""
        numeric = g.numeric
        if s is not None:
            numeric = torch.cat([numeric, s[:, None, :].expand(-1, numeric.shape[1], -1)], -1)
        x = self.atom_embed(g.atom_z) + self.hybrid_embed(g.hybrid) + self.x_proj(numeric)
        return x * g.node_mask[..., None]

    def forward(self, g: GraphBatch, cls: torch.Tensor, generator: torch.Generator | None = None):
        s = self.receptor(cls) if self.mode == "inject" else None
        x = self.embed_atoms(g, s)
        e = self.bond_embed(g.bond_type) + self.e_proj(g.bond_aromatic[:, None])
        for layer in self.layers:
            nq = draw_steps(*self.steps, generator)
            nk = draw_steps(*self.steps, generator)
            x = layer(x, g.node_mask, g.senders, g.receivers, e, nq, nk)
        pooled = attention_sum_pool(x, g.node_mask, self.pool_logit)
        if self.mode == "endcls":
            pooled = self.head(torch.cat([pooled, cls], dim=-1))
        return self.out(pooled).squeeze(-1)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
