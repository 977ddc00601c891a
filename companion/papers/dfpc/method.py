"""DFPC's method: data-flow couplings found by tracing, a data-free saliency, and pruning.

Narshana, Murti, Bhattacharyya, "DFPC: Data flow driven pruning of coupled channels without
data", ICLR 2023. Official code: TanayNarshana/DFPC-Pruning, ``Data-Free/ResNet/pruner/genthin.py``
(``ResnetGeometricConstraints``, ``ResNetSaliencyScores``, ``Prune``).

* A *data flow coupling* (DFC) is a set of producing layers A, a set of consuming layers B and the
  channel-preserving operations between them (BatchNorm, ReLU, residual additions, pooling).
  Pruning channel c of a DFC removes output c of every layer in A and input c of every layer in
  B at once. A DFC is *coupled* when more than one layer sits on a side (a residual addition
  ties the outputs of several convolutions; or one output feeds two layers). The official code
  lists the DFCs of a torchvision bottleneck ResNet by hand; here they are found by tracing the
  network with ``torch.fx`` (``trace_dfcs``), which also works for other residual networks
  built from Conv2d/Linear/BatchNorm2d/ReLU/add/pooling.
* The data-free saliency of channel c (the paper's upper bound on the reconstruction error of
  the next layers when c is removed) is, as in ``genthin.py``,

      s(c) = Σ_{(a, b): a's output reaches b}  1ᵀ |M_b|[:, F_c] · |D_a M_a|[F_c, :] 1,

  where M_a is the matrix of layer a (a convolution unrolled to a Toeplitz/im2col matrix at its
  input size), D_a = diag(|γ|/√(σ²+ε)) the BatchNorm right after a, F_c the features (positions)
  of channel c, and for a Linear consumer after global average pooling M_b = W·P with P the
  averaging matrix. Because 1ᵀXY1 = (1ᵀX)(Y1), s(c) only needs the column sums of |M_b| and the
  row sums of |D_a M_a|, which convolutions of all-ones inputs give without forming M
  (``column_sums`` / ``row_sums``); ``conv_matrix`` builds M by loops for the tests.
* Pruning (official ``Prune``): the scores are computed once; the globally lowest channels are
  removed (never the last channel of a DFC), by slicing A's outputs, B's inputs and the BatchNorms
  in between. No fine-tuning. ``prune_coupled=False`` restricts pruning to DFCs with one layer on
  each side (the official ``--prune-coupled 0``).

Pitfalls of the official code not copied: (A, B) pairs are chosen by string comparison of
layer names ('layer3.10' < 'layer3.9'); here the traced data flow decides which A reaches which B.
"""

from __future__ import annotations

import copy
import dataclasses
import operator

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from companion.errors import CompanionError, unknown

SCORINGS = ("dfpc", "l1", "l1_fanin", "random")


# ---------------------------------------------------------------- a small bottleneck ResNet
class Bottleneck(nn.Module):
    """torchvision's ResNet bottleneck (1×1 → 3×3 → 1×1, expansion 4), same layer names."""

    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int = 1):
        super().__init__()
        out = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or in_channels != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + identity)


class BottleneckResNet(nn.Module):
    """A CIFAR-style bottleneck ResNet (3×3 stem, no max-pool), torchvision layer names.

    ``widths[i]`` is the bottleneck width of stage i+1; its blocks output ``4·widths[i]``
    channels. Stage 1 keeps the resolution, later stages halve it.
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 10,
        widths: tuple[int, ...] = (8, 16, 32),
        blocks: int = 2,
        stem: int = 16,
    ):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, stem, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        self.relu = nn.ReLU()
        channels = stem
        for i, w in enumerate(widths):
            layers = []
            for j in range(blocks):
                layers.append(Bottleneck(channels, w, stride=2 if (i > 0 and j == 0) else 1))
                channels = w * Bottleneck.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        self.stages = len(widths)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        for i in range(self.stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---------------------------------------------------------------- data flow couplings
@dataclasses.dataclass
class DFC:
    """One data flow coupling: producers A, consumers B, BatchNorms in between (by module name).

    ``pairs``: (a, b) with a's output reaching b's input (the terms of the saliency sum).
    ``bn_after``: the BatchNorm applied directly to each producer's output (D_a).
    ``pooled``: consumers that read the channels through global average pooling (fc∘avgpool).
    """

    producers: list[str]
    consumers: list[str]
    batchnorms: list[str]
    pairs: list[tuple[str, str]]
    bn_after: dict[str, str]
    pooled: list[str]
    channels: int
    input_shapes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)

    @property
    def coupled(self) -> bool:
        """More than one layer on a side: pruning a channel touches several layers at once."""
        return len(self.producers) > 1 or len(self.consumers) > 1


_PASS_MODULES = (nn.BatchNorm2d, nn.ReLU, nn.Identity, nn.Dropout, nn.AdaptiveAvgPool2d)
_PASS_FUNCTIONS = (torch.relu, F.relu, torch.flatten)
_ADD = (operator.add, torch.add, operator.iadd)


def trace_dfcs(model: nn.Module, example: torch.Tensor) -> list[DFC]:
    """Find the prunable data flow couplings of ``model`` by tracing it with torch.fx.

    Every Conv2d/Linear output starts a channel group; channel-preserving operations pass the
    group on; a residual addition merges the groups of its inputs (union-find). Each Conv2d/Linear
    input names its group's consumers. Groups fed by the network input or reaching its output are
    not prunable and left out. Returns the DFCs in the order their first producer runs.
    """
    gm = fx.symbolic_trace(model)
    modules = dict(gm.named_modules())
    ShapeProp(gm).propagate(example)
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    group: dict[fx.Node, str] = {}  # tensor -> a key of its channel group
    reach: dict[fx.Node, frozenset] = {}  # tensor -> producers whose outputs flow into it
    pooled: dict[fx.Node, bool] = {}
    consumers: list[tuple[str, str, frozenset, bool]] = []  # (key, name, reach, pooled)
    batchnorms: list[tuple[str, str]] = []
    bn_after: dict[str, str] = {}
    producers: list[str] = []
    blocked: set[str] = set()
    channels: dict[str, int] = {}

    def passthrough(node, src):
        group[node], reach[node], pooled[node] = group[src], reach[src], pooled[src]

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            key = f"<input {node.name}>"
            parent[key] = key
            blocked.add(key)
            group[node], reach[node], pooled[node] = key, frozenset(), False
        elif node.op == "call_module":
            mod, src = modules[node.target], node.args[0]
            if isinstance(mod, (nn.Conv2d, nn.Linear)):
                if isinstance(mod, nn.Conv2d) and mod.groups != 1:
                    raise CompanionError(f"grouped convolution {node.target!r} is not supported")
                consumers.append((group[src], node.target, reach[src], pooled[src]))
                parent[node.target] = node.target
                producers.append(node.target)
                channels[node.target] = mod.weight.shape[0]
                group[node], pooled[node] = node.target, False
                reach[node] = frozenset([node.target])
            elif isinstance(mod, _PASS_MODULES):
                passthrough(node, src)
                if isinstance(mod, nn.BatchNorm2d):
                    batchnorms.append((group[src], node.target))
                    if src.op == "call_module" and isinstance(modules[src.target], nn.Conv2d):
                        bn_after[src.target] = node.target
                if isinstance(mod, nn.AdaptiveAvgPool2d):
                    if tuple(node.meta["tensor_meta"].shape[2:]) != (1, 1):
                        raise CompanionError(f"{node.target!r}: only global average pooling")
                    pooled[node] = True
            else:
                raise CompanionError(
                    f"cannot trace channels through module {node.target!r} "
                    f"({type(mod).__name__}); supported: Conv2d, Linear, BatchNorm2d, ReLU, "
                    "AdaptiveAvgPool2d(1), residual additions"
                )
        elif node.op in ("call_function", "call_method"):
            tensors = [a for a in node.args if isinstance(a, fx.Node)]
            if node.target in _ADD or node.target == "add":
                keys = [find(group[a]) for a in tensors]
                for k in keys[1:]:
                    parent[k] = keys[0]
                group[node] = keys[0]
                reach[node] = frozenset().union(*(reach[a] for a in tensors))
                pooled[node] = any(pooled[a] for a in tensors)
            elif node.target in _PASS_FUNCTIONS or node.target in ("relu", "flatten"):
                passthrough(node, tensors[0])
            else:
                raise CompanionError(f"cannot trace channels through {node.op} {node.target!r}")
        elif node.op == "output":
            for a in node.all_input_nodes:
                blocked.add(find(group[a]))
        else:  # get_attr
            raise CompanionError(f"cannot trace channels through {node.op} {node.target!r}")

    blocked = {find(k) for k in blocked}
    out: dict[str, DFC] = {}
    for p in producers:
        root = find(p)
        if root in blocked:
            continue
        if root not in out:
            out[root] = DFC([], [], [], [], {}, [], channels[p])
        out[root].producers.append(p)
        if p in bn_after:
            out[root].bn_after[p] = bn_after[p]
    for key, name, rch, pool in consumers:
        dfc = out.get(find(key))
        if dfc is not None:
            dfc.consumers.append(name)
            dfc.pairs.extend((a, name) for a in dfc.producers if a in rch)
            if pool:
                dfc.pooled.append(name)
    for key, name in batchnorms:
        dfc = out.get(find(key))
        if dfc is not None:
            dfc.batchnorms.append(name)
    shapes = {
        n.target: tuple(n.args[0].meta["tensor_meta"].shape[1:])
        for n in gm.graph.nodes
        if n.op == "call_module"
    }
    result = list(out.values())
    for dfc in result:
        dfc.input_shapes.update({n: shapes[n] for n in dfc.producers + dfc.consumers})
    return result


# ---------------------------------------------------------------- the data-free saliency
def conv_matrix(
    weight: torch.Tensor, height: int, width: int, stride: int = 1, padding: int = 0
) -> torch.Tensor:
    """The dense matrix M with M @ x.flatten() = conv2d(x, weight).flatten() (loops, for tests).

    Rows: output (channel, row, column); columns: input (channel, row, column), as the official
    ``_get_conv_matrix``.
    """
    n_out, n_in, k, _ = weight.shape
    ho = (height + 2 * padding - k) // stride + 1
    wo = (width + 2 * padding - k) // stride + 1
    m = torch.zeros(n_out * ho * wo, n_in * height * width, dtype=weight.dtype)
    for o in range(n_out):
        for i in range(n_in):
            for h in range(ho):
                for w in range(wo):
                    for di in range(k):
                        for dj in range(k):
                            r, c = h * stride + di - padding, w * stride + dj - padding
                            if 0 <= r < height and 0 <= c < width:
                                m[o * ho * wo + h * wo + w, i * height * width + r * width + c] = (
                                    weight[o, i, di, dj]
                                )
    return m


def row_sums(layer: nn.Module, input_shape: tuple[int, ...]) -> torch.Tensor:
    """Row sums of |M| for a layer, shaped like its output (C_out, H, W) or (C_out,).

    A convolution of an all-ones input with |W| sums each row of the unrolled matrix.
    """
    w = layer.weight.detach().abs()
    if isinstance(layer, nn.Linear):
        return w.sum(1)
    ones = torch.ones((1, *input_shape), dtype=w.dtype)
    return F.conv2d(ones, w, None, layer.stride, layer.padding, layer.dilation)[0]


def column_sums(
    layer: nn.Module, input_shape: tuple[int, ...], pooled_hw: tuple[int, int] | None = None
) -> torch.Tensor:
    """Column sums of |M| for a consumer, shaped like its input (C_in, H, W).

    For a convolution: the gradient of Σ conv(x, |W|) with respect to x. For a Linear layer after
    global average pooling of a (C, H, W) tensor (``pooled_hw``): Σ_o |W[o, c]| / (H·W) at every
    position.
    """
    w = layer.weight.detach().abs()
    if isinstance(layer, nn.Linear):
        col = w.sum(0)
        if pooled_hw is None:
            return col
        h, wd = pooled_hw
        return (col / (h * wd))[:, None, None].expand(-1, h, wd)
    x = torch.ones((1, *input_shape), dtype=w.dtype, requires_grad=True)
    with torch.enable_grad():
        y = F.conv2d(x, w, None, layer.stride, layer.padding, layer.dilation)
        (g,) = torch.autograd.grad(y.sum(), x)
    return g[0]


def bn_scale(bn: nn.BatchNorm2d) -> torch.Tensor:
    """D's diagonal per channel: |γ| / √(σ² + ε) (β is ignored, as in the official code)."""
    gamma = bn.weight.detach() if bn.affine else torch.ones_like(bn.running_var)
    return gamma.abs() / torch.sqrt(bn.running_var + bn.eps)


def dfpc_saliency(model: nn.Module, dfc: DFC) -> torch.Tensor:
    """The data-free saliency s(c) of every channel of a DFC (module docstring's formula)."""
    mods = dict(model.named_modules())
    score = torch.zeros(dfc.channels, dtype=torch.float64)
    for a, b in dfc.pairs:
        rows = row_sums(mods[a], dfc.input_shapes[a]).double()
        if a in dfc.bn_after:
            rows = rows * bn_scale(mods[dfc.bn_after[a]]).double().view(-1, *[1] * (rows.dim() - 1))
        pooled = rows.shape[1:] if b in dfc.pooled else None
        cols = column_sums(mods[b], dfc.input_shapes[b], pooled).double()
        score += (cols * rows).reshape(dfc.channels, -1).sum(1)
    return score


def l1_saliency(model: nn.Module, dfc: DFC) -> torch.Tensor:
    """The L1 baseline (official ``strategy='l1'``): Σ over producers of each filter's L1 norm."""
    mods = dict(model.named_modules())
    return sum(
        mods[a].weight.detach().abs().reshape(dfc.channels, -1).sum(1).double()
        for a in dfc.producers
    )


def l1_fanin_saliency(model: nn.Module, dfc: DFC) -> torch.Tensor:
    """A fan-in-normalised L1 baseline (ours, not the official code's): Σ over producers of each
    filter's L1 norm divided by its number of weights (its fan-in), i.e. the mean |w| of the
    filter. The official global L1 compares filters of 9 weights (a 3×3 stem on one input
    channel) with filters of hundreds, so it removes the stem first; this one does not."""
    mods = dict(model.named_modules())
    total = torch.zeros(dfc.channels, dtype=torch.float64)
    for a in dfc.producers:
        w = mods[a].weight.detach().abs().reshape(dfc.channels, -1).double()
        total += w.mean(1)
    return total


def saliencies(
    model: nn.Module,
    dfcs: list[DFC],
    scoring: str = "dfpc",
    generator: torch.Generator | None = None,
) -> list[torch.Tensor]:
    """Scores of every channel of every DFC under ``scoring`` (dfpc | l1 | l1_fanin | random)."""
    if scoring == "dfpc":
        return [dfpc_saliency(model, d) for d in dfcs]
    if scoring == "l1":
        return [l1_saliency(model, d) for d in dfcs]
    if scoring == "l1_fanin":
        return [l1_fanin_saliency(model, d) for d in dfcs]
    if scoring == "random":
        return [torch.rand(d.channels, generator=generator, dtype=torch.float64) for d in dfcs]
    raise unknown("scoring", scoring, SCORINGS)


# ---------------------------------------------------------------- pruning
def select_channels(
    scores: list[torch.Tensor], dfcs: list[DFC], count: int, prune_coupled: bool = True
) -> list[list[int]]:
    """The ``count`` globally lowest-scored channels to remove, per DFC.

    Repeats the official ``Prune`` step ``count`` times with fixed scores: take the lowest
    channel among allowed DFCs that still have more than one channel. Without ``prune_coupled``
    only DFCs with one producer and one consumer are allowed.
    """
    allowed = [prune_coupled or not d.coupled for d in dfcs]
    order = sorted(
        ((float(s[c]), i, c) for i, s in enumerate(scores) if allowed[i] for c in range(len(s))),
    )
    left = [d.channels for d in dfcs]
    removed: list[list[int]] = [[] for _ in dfcs]
    for _, i, c in order:
        if count <= 0:
            break
        if left[i] > 1:
            removed[i].append(c)
            left[i] -= 1
            count -= 1
    return [sorted(r) for r in removed]


def select_matched(scores: list[torch.Tensor], counts: list[int]) -> list[list[int]]:
    """An allocation-matched control: remove ``counts[i]`` channels from DFC i (another
    selection's per-DFC counts), the lowest-scored within each DFC under ``scores``. Only the
    ranking inside each DFC differs from the selection whose counts are copied."""
    removed = []
    for s, k in zip(scores, counts, strict=True):
        if k >= len(s):
            raise CompanionError("cannot remove every channel of a data flow coupling")
        removed.append(sorted(torch.argsort(s, stable=True)[:k].tolist()))
    return removed


def _slice(module: nn.Module, keep: torch.Tensor, dim: int) -> nn.Module:
    new = copy.deepcopy(module)
    for name, t in list(module.named_parameters(recurse=False)) + list(
        module.named_buffers(recurse=False)
    ):
        if t.dim() == 0 or (dim == 1 and name != "weight"):
            continue
        sliced = torch.index_select(t.detach(), dim, keep).clone()
        if isinstance(t, nn.Parameter):
            setattr(new, name, nn.Parameter(sliced, requires_grad=t.requires_grad))
        else:
            setattr(new, name, sliced)
    if isinstance(new, nn.Conv2d):
        if dim == 0:
            new.out_channels = len(keep)
        else:
            new.in_channels = len(keep)
    elif isinstance(new, nn.Linear):
        if dim == 0:
            new.out_features = len(keep)
        else:
            new.in_features = len(keep)
    elif isinstance(new, nn.BatchNorm2d):
        new.num_features = len(keep)
    return new


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def prune(model: nn.Module, dfcs: list[DFC], removed: list[list[int]]) -> nn.Module:
    """A copy of ``model`` with channels ``removed[i]`` of DFC i cut out of every layer touched."""
    model = copy.deepcopy(model)
    for dfc, rem in zip(dfcs, removed, strict=True):
        if not rem:
            continue
        if len(rem) >= dfc.channels:
            raise CompanionError("cannot remove every channel of a data flow coupling")
        drop = set(rem)
        keep = torch.tensor([c for c in range(dfc.channels) if c not in drop], dtype=torch.long)
        for name in dfc.producers + dfc.batchnorms:
            _set(model, name, _slice(model.get_submodule(name), keep, 0))
        for name in dfc.consumers:
            _set(model, name, _slice(model.get_submodule(name), keep, 1))
    return model
