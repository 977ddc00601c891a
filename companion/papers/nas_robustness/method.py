"""The NAS-Bench-201 cell space, the attacks and the Jacobian/Hessian proxies of Jung, Lukasik
& Keuper (ICLR 2023), and a reader for their released database.

* The cell (NAS-Bench-201, Dong & Yang 2020): a DAG of 4 nodes; node ``j`` sums one operation
  per earlier node, ``x_j = Σ_{i<j} o_{i→j}(x_i)``, with ``o ∈ OPS``. An architecture is the
  string ``|o~0|+|o~0|o~1|+|o~0|o~1|o~2|`` (as in the official dataset).
* The attacks (paper §3): FGSM, ``x' = clip(x + ε·sign ∇ₓL)``, and PGD,
  ``x^{t+1} = Π_{B∞(x, ε)}(x^t + α·sign ∇ₓL(x^t))``, both L∞ on the [0, 1] pixel scale.
* The proxies (paper §4.1, use case 1): the Frobenius norm of the input-logit Jacobian
  ``‖∂f(x)/∂x‖_F`` and the largest eigenvalue of the input Hessian of the loss
  ``λ_max(∇²ₓL(x))`` (power iteration), each averaged over test points. Which exact variant the
  paper computed is not in the material we could read: reconstructed.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))  # string order: node 1, node 2, node 3
KEYS_ADV = ("aa_apgd-ce@Linf", "aa_square@Linf", "fgsm@Linf", "pgd@Linf")  # official keys
DATASETS = ("cifar10", "cifar100", "ImageNet16-120")


# ---------------------------------------------------------------- architecture strings


def arch_to_edges(arch: str) -> dict[tuple[int, int], str]:
    """``{(i, j): op}`` for the six edges of a NAS-Bench-201 string."""
    edges = {}
    for j, node in enumerate(arch.split("+"), start=1):
        for token in node.strip("|").split("|"):
            op, i = token.split("~")
            if op not in OPS:
                raise ValueError(f"unknown operation {op!r} in {arch!r}")
            edges[(int(i), j)] = op
    if set(edges) != set(EDGES):
        raise ValueError(f"{arch!r} is not a NAS-Bench-201 cell string")
    return edges


def edges_to_arch(edges: dict[tuple[int, int], str]) -> str:
    """The NAS-Bench-201 string of ``{(i, j): op}``."""
    nodes = []
    for j in (1, 2, 3):
        nodes.append("|" + "|".join(f"{edges[(i, j)]}~{i}" for i in range(j)) + "|")
    return "+".join(nodes)


def all_archs() -> list[str]:
    """All 5⁶ = 15,625 strings of the space, in NAS-Bench-201's id order (edge order of the
    string, the first operation varying slowest)."""
    return [edges_to_arch(dict(zip(EDGES, ops))) for ops in itertools.product(OPS, repeat=6)]


def _live_edges(edges: dict[tuple[int, int], str]) -> dict[tuple[int, int], str]:
    """Edges that lie on an input→output path (``none`` is no edge); the others become none."""
    real = {e for e, op in edges.items() if op != "none"}
    reach = {0}
    for i, j in sorted(real, key=lambda e: e[1]):
        if i in reach:
            reach.add(j)
    to_out = {3}
    for i, j in sorted(real, key=lambda e: -e[0]):
        if j in to_out:
            to_out.add(i)
    return {
        e: (op if e in real and e[0] in reach and e[1] in to_out else "none")
        for e, op in edges.items()
    }


def has_path(arch: str) -> bool:
    """Whether the input reaches the output through non-``none`` operations. Without a path the
    cell outputs zeros, the network a constant: it "resists" every attack (the brief's pitfall),
    so such architectures are excluded."""
    return any(op != "none" for op in _live_edges(arch_to_edges(arch)).values())


def canonical(arch: str) -> str:
    """A representative of the architecture's isomorphism class: edges off every input→output
    path are set to ``none`` (they do not change the output), and when node 1 does not feed node
    2 the two intermediate nodes may be swapped (the graph is the same): the lexicographically
    smaller string of the two is kept."""
    return canonical_edges(arch_to_edges(arch))


def canonical_edges(edges: dict[tuple[int, int], str]) -> str:
    """:func:`canonical` of an ``{(i, j): op}`` dict."""
    live = _live_edges(edges)
    candidates = [edges_to_arch(live)]
    if live[(1, 2)] == "none":
        swapped = dict(live)
        swapped[(0, 1)], swapped[(0, 2)] = live[(0, 2)], live[(0, 1)]
        swapped[(1, 3)], swapped[(2, 3)] = live[(2, 3)], live[(1, 3)]
        candidates.append(edges_to_arch(swapped))
    return min(candidates)


def op_counts(arch: str) -> dict[str, int]:
    """How many edges carry each operation."""
    ops = list(arch_to_edges(arch).values())
    return {op: ops.count(op) for op in OPS}


# ---------------------------------------------------------------- the network


class ReLUConvBN(nn.Module):
    """NAS-Bench-201's ``nor_conv_k×k``: ReLU, convolution (no bias), batch norm."""

    def __init__(self, channels: int, kernel: int):
        super().__init__()
        self.op = nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(channels, channels, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x):
        return self.op(x)


class Zero(nn.Module):
    def forward(self, x):
        return x.mul(0.0)


def make_op(op: str, channels: int) -> nn.Module:
    if op == "none":
        return Zero()
    if op == "skip_connect":
        return nn.Identity()
    if op == "avg_pool_3x3":
        return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
    return ReLUConvBN(channels, 1 if op == "nor_conv_1x1" else 3)


class Cell(nn.Module):
    """``x_j = Σ_{i<j} o_{i→j}(x_i)`` for j = 1, 2, 3; the cell returns x₃."""

    def __init__(self, arch: str, channels: int):
        super().__init__()
        self.edges = arch_to_edges(arch)
        self.ops = nn.ModuleDict(
            {f"{i}{j}": make_op(op, channels) for (i, j), op in self.edges.items()}
        )

    def forward(self, x):
        nodes = [x]
        for j in (1, 2, 3):
            nodes.append(sum(self.ops[f"{i}{j}"](nodes[i]) for i in range(j)))
        return nodes[3]


class CellNet(nn.Module):
    """A one-cell NAS-Bench-201 network for small images: stem (3×3 conv + BN), ``cells``
    copies of the searched cell, then NB201's last activation (BN, ReLU), global average pooling
    and a linear classifier (the full NB201 macro skeleton stacks 15 cells with two reduction
    blocks; here the cell is stacked ``cells`` times at one resolution). On 8×8 digits one
    cell sees too little of the image for global pooling, so the features are average-pooled to
    ``pool × pool`` before the classifier (``pool=1``: NB201's global average pooling)."""

    def __init__(
        self,
        arch: str,
        channels: int = 8,
        cells: int = 1,
        in_channels: int = 1,
        classes: int = 10,
        pool: int = 2,
    ):
        super().__init__()
        self.arch = arch
        self.pool = pool
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)
        )
        self.cells = nn.Sequential(*[Cell(arch, channels) for _ in range(cells)])
        self.lastact = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU())
        self.classifier = nn.Linear(channels * pool * pool, classes)

    def forward(self, x):
        h = self.lastact(self.cells(self.stem(x)))
        return self.classifier(F.adaptive_avg_pool2d(h, self.pool).flatten(1))


def num_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- attacks


def fgsm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    """Fast gradient sign method: ``x' = clip_[0,1](x + ε·sign ∇ₓ CE(f(x), y))``."""
    x = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.cross_entropy(model(x), y), x)
    return (x + eps * grad.sign()).clamp(0, 1).detach()


def pgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    eps: float,
    steps: int,
    step_size: float | None = None,
) -> torch.Tensor:
    """Projected gradient ascent on the loss in the L∞ ball of radius ε,
    ``x^{t+1} = clip_[0,1] Π_{B∞(x, ε)}(x^t + α·sign ∇ₓ CE(f(x^t), y))``, from the clean point
    (no random start), step size ``α = 2.5 ε / steps`` by default (Madry et al.'s rule). A
    point is frozen at the first iterate the model misclassifies (the attack keeps its success,
    as AutoAttack's APGD keeps its best point): with the same α, more steps then can only
    fool more points."""
    alpha = 2.5 * eps / steps if step_size is None else step_size
    adv = x.clone()
    for _ in range(steps):
        with torch.no_grad():
            active = model(adv).argmax(-1) == y
        if not active.any():
            break
        adv.requires_grad_(True)
        (grad,) = torch.autograd.grad(F.cross_entropy(model(adv), y, reduction="sum"), adv)
        step = torch.where(active.view(-1, *[1] * (x.dim() - 1)), alpha * grad.sign(), 0.0)
        adv = adv.detach() + step
        adv = torch.min(torch.max(adv, x - eps), x + eps).clamp(0, 1)
    return adv.detach()


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return (model(x).argmax(-1) == y).float().mean().item()


# ---------------------------------------------------------------- corruptions


def corrupt(x: torch.Tensor, kind: str, severity: float, generator) -> torch.Tensor:
    """Three of the common corruptions (Hendrycks & Dietterich 2019) for [0, 1] images:
    ``gaussian_noise`` (σ = severity), ``contrast`` (pixels pulled to their image mean by the
    factor 1 − severity) and ``defocus_blur`` (a 3×3 mean filter mixed in with weight severity)."""
    if kind == "gaussian_noise":
        # ``generator``: a NumPy Generator (the same draws on every CPU)
        noise = torch.from_numpy(generator.standard_normal(tuple(x.shape))).to(x.dtype)
        return (x + severity * noise).clamp(0, 1)
    if kind == "contrast":
        mean = x.mean((1, 2, 3), keepdim=True)
        return (mean + (1 - severity) * (x - mean)).clamp(0, 1)
    if kind == "defocus_blur":
        blurred = F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        return (1 - severity) * x + severity * blurred
    raise ValueError(f"unknown corruption {kind!r}")


CORRUPTIONS = ("gaussian_noise", "contrast", "defocus_blur")


# ---------------------------------------------------------------- proxies


def jacobian_norm(model: nn.Module, x: torch.Tensor) -> float:
    """Mean over points of ``‖∂f(x)/∂x‖_F``, the Frobenius norm of the logits' input Jacobian
    (one backward pass per class: ``‖J‖_F² = Σ_k ‖∇ₓ f_k(x)‖²``)."""
    x = x.clone().requires_grad_(True)
    logits = model(x)
    squares = torch.zeros(len(x), dtype=x.dtype)
    for k in range(logits.shape[1]):
        (g,) = torch.autograd.grad(logits[:, k].sum(), x, retain_graph=True)
        squares += g.flatten(1).pow(2).sum(1)
    return squares.sqrt().mean().item()


def hessian_top_eigenvalue(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    iters: int = 10,
    generator=None,
) -> float:
    """Mean over points of ``λ_max(∇²ₓ CE(f(x), y))`` by power iteration on Hessian-vector
    products. The loss is summed over the batch, so its input Hessian is block diagonal (one
    block per point) and one batched iteration, normalized per point, runs every point's power
    iteration at once. Returns the mean Rayleigh quotient ``vᵀHv`` after ``iters`` steps."""
    x = x.clone().requires_grad_(True)
    loss = F.cross_entropy(model(x), y, reduction="sum")
    (grad,) = torch.autograd.grad(loss, x, create_graph=True)
    rng = np.random.default_rng(0) if generator is None else generator  # NumPy: portable
    v = torch.from_numpy(rng.standard_normal(tuple(x.shape))).to(x.dtype)
    v = v / v.flatten(1).norm(dim=1).view(-1, *[1] * (x.dim() - 1))
    rayleigh = torch.zeros(len(x))
    for _ in range(iters):
        (hv,) = torch.autograd.grad(grad, x, grad_outputs=v, retain_graph=True)
        rayleigh = (hv * v).flatten(1).sum(1)
        norm = hv.flatten(1).norm(dim=1).clamp_min(1e-12)
        v = (hv / norm.view(-1, *[1] * (x.dim() - 1))).detach()
    return rayleigh.mean().item()


# ---------------------------------------------------------------- the released database


class RobustnessDatabase:
    """The released database (robustness.vision) read from ``path``, in the layout of the
    official ``robustness_dataset.RobustnessDataset``: ``meta.json`` holds
    ``{"ids": {id: {"nb201-string": s, "isomorph": id'}}, "epsilons": {attack: [ε, ...]}}`` and
    ``<dataset>/<key>_<measure>.json`` holds ``{dataset: {key: {measure: {id: value}}}}``, where
    for an attack key the value is a list over ε (ε = 0 excluded: prepend the clean value).
    Evaluated ids are the representatives (``isomorph == id``); others map through
    :meth:`get_uid`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = json.loads((self.path / "meta.json").read_text())
        ids = self.meta["ids"]
        self.map_str_to_id = {m["nb201-string"]: k for k, m in ids.items()}
        self.non_isomorph_ids = [i for i, d in ids.items() if d["isomorph"] == i]

    def get_uid(self, i) -> str:
        return self.meta["ids"][str(i)]["isomorph"]

    def id_to_string(self, i) -> str:
        return self.meta["ids"][str(i)]["nb201-string"]

    def epsilons(self, key: str) -> list[float]:
        return list(self.meta["epsilons"][key])

    def query(self, dataset: str, key: str, measure: str = "accuracy") -> dict[str, object]:
        """``{id: value}`` for one dataset, key (``clean``, an attack or a corruption) and
        measure; ``{}`` where the file is missing (ImageNet16-120 has no corruption keys)."""
        file = self.path / dataset / f"{key}_{measure}.json"
        if not os.path.isfile(file):
            return {}
        return json.loads(file.read_text())[dataset][key][measure]
