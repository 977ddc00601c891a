"""LiGO: a learned linear growth operator from a small transformer's weights to a large one's.

Paper (Wang et al., ICLR 2023), Sec. 3: the large model's parameters are a linear function of the
small model's, Θ_large = M Θ_small, with M factorized as M = L_depth · R_width (Eq. 6-8). Both
factors are Kronecker-structured: the width factor applies the same pair of maps to every weight
matrix, W ↦ A W Bᵀ (A expands the outputs, B the inputs), and the depth factor writes each large
layer as a learned combination of the small layers, W̃_l = Σ_j w_lj W_j (the Kronecker factor
acting on the layer axis). Only these coefficients are trained, on the large model's own task
loss, for a small number of steps (100 in the official code); then the large weights are
materialized, the operator is discarded, and the large model trains normally.

Parametrization and tying follow the official code (``ligo.py`` of VITA-Group/LiGO:
``FusedWidthParams``, ``FusedDepthParams``, ``FusedLinear``, ``FusedLayeredNorm``,
``create_ligo_from_model``):

* width: old units are kept and new units are learned combinations of them, so A = [I; B_out]
  and the input map is [I; B_in]: W ↦ [[W, W B_inᵀ], [B_out W, B_out W B_inᵀ]]; biases and
  LayerNorm parameters expand like outputs;
* tying (bert2BERT style): one residual-stream B shared by the embedding, every LayerNorm, the
  inputs of Q, K, V and the first MLP layer, and the outputs of the attention projection and the
  second MLP layer; one B per layer for each of Q, K, V outputs (the projection's input is tied
  to V's); one B per layer for the MLP hidden units;
* depth: every module of every large layer has its own coefficient vector over the small
  layers (the official ``depth_tie`` is always None), one for weights and one for biases.

The small weights are frozen buffers; the large ViT serves only as the architecture through
:func:`torch.func.functional_call`.

The baseline :func:`copy_grow` is bert2BERT's width expansion (new units copy randomly chosen
old units; the weights reading a copied unit are divided by its number of copies; with AKI the
new units of a layer take the layer above's weights, which breaks the symmetry between copies)
with StackBERT's depth stacking (large layer l copies small layer l mod L₁).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call

from companion.errors import unknown
from companion.nn import ViT

DEPTH_INITS = ("stackbert_noisy", "stackbert", "rand")
WIDTH_INITS = ("rand", "sel_noisy", "sel")
COPY_INITS = ("fpi", "aki")  # bert2BERT's two copy rules (see copy_grow)

# the parameters of one ViT block, by kind of module (names of companion.nn.vit.Block)
BLOCK_LINEARS = ("attn.q", "attn.k", "attn.v", "attn.proj", "mlp.0", "mlp.3")
BLOCK_NORMS = ("norm1", "norm2")


def expand_out(weight: torch.Tensor, B: torch.Tensor | None) -> torch.Tensor:
    """New output units as combinations of the old ones: W ↦ [W; B W] (along dim 0).

    Works for linear weights ``[out, in]``, biases and LayerNorm parameters ``[out]`` and
    convolution kernels ``[out, in, k, k]`` (official ``FusedLinear.get_params``)."""
    if B is None:
        return weight
    new = (B @ weight.reshape(weight.shape[0], -1)).reshape(B.shape[0], *weight.shape[1:])
    return torch.cat([weight, new], 0)


def expand_in(weight: torch.Tensor, B: torch.Tensor | None) -> torch.Tensor:
    """New input units: W ↦ [W, W Bᵀ] along the last dimension (a linear layer's inputs, or the
    feature axis of an embedding such as the class token and positions)."""
    if B is None:
        return weight
    return torch.cat([weight, weight @ B.T], -1)


def _normalized_uniform(shape, generator) -> torch.Tensor:
    w = torch.rand(shape, generator=generator)
    return w / w.sum(-1, keepdim=True)


def width_init(small: int, large: int, scheme: str, noise: float, generator) -> torch.Tensor:
    """B ∈ R^{(D₂−D₁)×D₁} (official ``FusedWidthParams``): ``rand`` rows are uniform and sum to
    one; ``sel`` rows are one-hot on a random old unit (``sel_noisy`` adds U(0, noise))."""
    if scheme not in WIDTH_INITS:
        raise unknown("width init", scheme, WIDTH_INITS)
    rows = large - small
    if scheme == "rand":
        return _normalized_uniform((rows, small), generator)
    B = torch.zeros(rows, small)
    if scheme == "sel_noisy":
        B.uniform_(0.0, noise, generator=generator)
    pick = torch.randint(0, small, (rows,), generator=generator)
    B[torch.arange(rows), pick] = 1.0
    return B


def depth_init(layer: int, small_layers: int, scheme: str, noise: float, generator) -> torch.Tensor:
    """w ∈ R^{L₁} for large layer ``layer`` (official ``FusedDepthParams``): ``stackbert`` is
    one-hot at l mod L₁ (``stackbert_noisy`` adds U(0, noise)), ``rand`` is uniform; all are
    normalized to sum to one."""
    if scheme not in DEPTH_INITS:
        raise unknown("depth init", scheme, DEPTH_INITS)
    if scheme == "rand":
        return _normalized_uniform((small_layers,), generator)
    w = torch.zeros(small_layers)
    if scheme == "stackbert_noisy":
        w.uniform_(0.0, noise, generator=generator)
    w[layer % small_layers] = 1.0
    return w / w.sum()


def _key(name: str) -> str:
    return name.replace(".", "_")


class LiGO(nn.Module):
    """The growth operator M = L_depth · R_width from ``small`` to ``large`` (two ViTs).

    ``grown_state()`` is the large model's state dict as a differentiable function of the
    operator's coefficients; ``forward(x)`` runs the large architecture with it, so the task
    loss trains the coefficients (and only them: the small weights are buffers).
    """

    def __init__(
        self,
        small: ViT,
        large: ViT,
        depth_scheme: str = "stackbert_noisy",
        width_scheme: str = "rand",
        noise: float = 0.03,
        seed: int = 0,
    ):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        d1, d2 = small.cls_token.shape[-1], large.cls_token.shape[-1]
        self.small_depth, self.large_depth = len(small.blocks), len(large.blocks)
        h1 = small.blocks[0].mlp[0].out_features
        h2 = large.blocks[0].mlp[0].out_features
        self.large = large
        for p in self.large.parameters():
            p.requires_grad_(False)

        state = {k: v.detach().clone() for k, v in small.state_dict().items()}
        # frozen small weights: shared modules as they are, block modules stacked on a last
        # axis of length L₁ (official create_ligo_from_model)
        for name, value in state.items():
            if not name.startswith("blocks."):
                self.register_buffer("small_" + _key(name), value)
        for name in small.blocks[0].state_dict():
            stacked = torch.stack(
                [state[f"blocks.{j}.{name}"] for j in range(self.small_depth)], -1
            )
            self.register_buffer("stack_" + _key(name), stacked)

        def width(a, b):
            return nn.Parameter(width_init(a, b, width_scheme, noise, g)) if b > a else None

        self.B_emb = width(d1, d2)  # the residual stream (tied everywhere)
        self.B_q = nn.ParameterList(width(d1, d2) for _ in range(self.large_depth))
        self.B_k = nn.ParameterList(width(d1, d2) for _ in range(self.large_depth))
        self.B_v = nn.ParameterList(width(d1, d2) for _ in range(self.large_depth))
        self.B_ffn = nn.ParameterList(width(h1, h2) for _ in range(self.large_depth))
        self.depth_coeffs = nn.ParameterDict()
        for layer in range(self.large_depth):
            for module in BLOCK_LINEARS + BLOCK_NORMS:
                for kind in ("weight", "bias"):
                    w = depth_init(layer, self.small_depth, depth_scheme, noise, g)
                    self.depth_coeffs[f"{layer}_{_key(module)}_{kind}"] = nn.Parameter(w)

    def small_param(self, name: str) -> torch.Tensor:
        return getattr(self, "small_" + _key(name))

    def mixed(self, layer: int, module: str, kind: str) -> torch.Tensor:
        """L_depth: W̃_l = Σ_j w_lj W_j for one module of large layer ``layer``."""
        stacked = getattr(self, "stack_" + _key(f"{module}.{kind}"))
        return stacked @ self.depth_coeffs[f"{layer}_{_key(module)}_{kind}"]

    def grown_state(self) -> dict[str, torch.Tensor]:
        """The large model's parameters, Θ_large = L_depth · R_width · Θ_small."""
        Be = self.B_emb
        sd = {
            "patch_embed.weight": expand_out(self.small_param("patch_embed.weight"), Be),
            "patch_embed.bias": expand_out(self.small_param("patch_embed.bias"), Be),
            "cls_token": expand_in(self.small_param("cls_token"), Be),
            "pos_embed": expand_in(self.small_param("pos_embed"), Be),
            "norm.weight": expand_out(self.small_param("norm.weight"), Be),
            "norm.bias": expand_out(self.small_param("norm.bias"), Be),
            "head.weight": expand_in(self.small_param("head.weight"), Be),
            "head.bias": self.small_param("head.bias"),
        }
        for l in range(self.large_depth):
            # (input B, output B) of every linear map of the block: the bert2BERT tying
            io = {
                "attn.q": (Be, self.B_q[l]),
                "attn.k": (Be, self.B_k[l]),
                "attn.v": (Be, self.B_v[l]),
                "attn.proj": (self.B_v[l], Be),
                "mlp.0": (Be, self.B_ffn[l]),
                "mlp.3": (self.B_ffn[l], Be),
            }
            for module, (b_in, b_out) in io.items():
                w = expand_out(expand_in(self.mixed(l, module, "weight"), b_in), b_out)
                sd[f"blocks.{l}.{module}.weight"] = w
                sd[f"blocks.{l}.{module}.bias"] = expand_out(self.mixed(l, module, "bias"), b_out)
            for module in BLOCK_NORMS:
                for kind in ("weight", "bias"):
                    sd[f"blocks.{l}.{module}.{kind}"] = expand_out(self.mixed(l, module, kind), Be)
        return sd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the weights are built in float32 even under mixed precision (autocast would round
        # the products B W to bf16 and hand LayerNorm bf16 parameters); the model's own
        # forward then runs under whatever autocast is active
        with torch.autocast(x.device.type, enabled=False):
            state = self.grown_state()
        return functional_call(self.large, state, (x,))

    @torch.no_grad()
    def depth_matrix(self) -> list[list[float]]:
        """[large layer][small layer]: each large layer's depth coefficients, averaged over its
        modules' weight coefficient vectors (a summary of L_depth)."""
        rows = []
        for l in range(self.large_depth):
            ws = [self.depth_coeffs[f"{l}_{_key(m)}_weight"] for m in BLOCK_LINEARS + BLOCK_NORMS]
            rows.append([round(v, 5) for v in torch.stack(ws).mean(0).tolist()])
        return rows

    def operator_parameters(self) -> list[nn.Parameter]:
        """What LiGO trains: the width Bs and the depth coefficients."""
        return [p for p in self.parameters() if p.requires_grad]

    @torch.no_grad()
    def materialize(self) -> ViT:
        """Write the grown weights into the large ViT and return it, trainable
        (official ``initialize_model_with_ligo``); the operator is no longer needed."""
        self.large.load_state_dict({k: v.detach() for k, v in self.grown_state().items()})
        for p in self.large.parameters():
            p.requires_grad_(True)
        return self.large


def _selection(small: int, large: int, generator, group: int = 1) -> torch.Tensor:
    """bert2BERT's map g: [0, D₂) → [0, D₁), the identity on old units; new units copy old ones
    chosen at random in groups of ``group`` (a head's units move together), as evenly as
    possible (each old group once before any twice)."""
    n_small, n_new = small // group, (large - small) // group
    order = torch.cat(
        [torch.randperm(n_small, generator=generator) for _ in range(-(-n_new // n_small))]
    )[:n_new]
    groups = torch.cat([torch.arange(n_small), order])
    return (groups[:, None] * group + torch.arange(group)).flatten()


def _copy_out(w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return w[g]


def _copy_in(w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(g).to(w.dtype)
    return w[..., g] / counts[g]


@torch.no_grad()
def copy_grow(small: ViT, large: ViT, seed: int = 0, init: str = "fpi") -> ViT:
    """bert2BERT-style growth without learning, with StackBERT depth (large layer l copies small
    layer l mod L₁). Writes into and returns ``large``.

    ``init="fpi"``: function-preserving width expansion: new units copy old units, and the
    weights that read a copied unit are divided by its number of copies. Attention heads are
    copied whole (one map for Q, K and V of a layer), so a new head attends exactly like the
    head it copies. With D₂ = 2·D₁ every residual unit is copied once, LayerNorm's mean and
    variance are unchanged, and a width-only growth computes the same function as the small
    model. But a copy and its original then receive equal gradients and stay equal forever:
    the grown model keeps the small model's capacity.

    ``init="aki"`` (bert2BERT's advanced knowledge initialization, Chen et al. 2022, Sec. 3.3):
    the in-dimensions are expanded as in FPI, but every new out-dimension of a layer comes from
    the layer above (the top layer from itself): the new attention heads and MLP hidden units
    (with the weights that read them), and also the new residual units that ``attn.proj`` and
    ``mlp.3`` write. The last part matters: if the residual writes were plain copies, each
    residual copy would hold the same values and receive the same gradients forever (the
    embeddings and LayerNorms are copied) and the grown model would keep the small model's
    residual width. Writing the new residual rows from the layer above makes a residual unit
    and its copy differ after the first layer whose upper layer differs, so their gradients
    differ and they drift apart in training. We follow bert2BERT's rule rather than adding
    Net2Net-style noise, so no free noise scale enters. AKI no longer preserves the function
    exactly (bert2BERT accepts this); ``init="fpi"`` does."""
    if init not in COPY_INITS:
        raise unknown("copy init", init, COPY_INITS)
    g = torch.Generator().manual_seed(seed)
    s = small.state_dict()
    d1, d2 = small.cls_token.shape[-1], large.cls_token.shape[-1]
    h1 = small.blocks[0].mlp[0].out_features
    h2 = large.blocks[0].mlp[0].out_features
    head_dim = small.blocks[0].attn.head_dim
    if large.blocks[0].attn.head_dim != head_dim:
        raise ValueError(
            f"head_dim differs ({head_dim} vs {large.blocks[0].attn.head_dim}): "
            "choose the large model's heads so that dim / heads stays the same"
        )
    ge = _selection(d1, d2, g)
    sd = {
        "patch_embed.weight": _copy_out(s["patch_embed.weight"], ge),
        "patch_embed.bias": _copy_out(s["patch_embed.bias"], ge),
        "cls_token": s["cls_token"][..., ge],
        "pos_embed": s["pos_embed"][..., ge],
        "norm.weight": _copy_out(s["norm.weight"], ge),
        "norm.bias": _copy_out(s["norm.bias"], ge),
        "head.weight": _copy_in(s["head.weight"], ge),
        "head.bias": s["head.bias"],
    }
    depth1 = len(small.blocks)
    for l in range(len(large.blocks)):
        j = l % depth1
        upper = min(j + 1, depth1 - 1) if init == "aki" else j  # where new units come from
        gh = _selection(d1, d2, g, group=head_dim)
        gf = _selection(h1, h2, g)
        io = {
            "attn.q": (ge, gh),
            "attn.k": (ge, gh),
            "attn.v": (ge, gh),
            "attn.proj": (gh, ge),
            "mlp.0": (ge, gf),
            "mlp.3": (gf, ge),
        }
        # the expanded out-dimensions taken from the layer above: heads, hidden units and
        # (as out-dimension of proj / mlp.3) the residual stream; in-dims that read the residual
        # stay FPI copies (divided), as in bert2BERT
        inner = {id(gh): d1, id(gf): h1}  # the expanded dimensions that are per layer
        outer = {**inner, id(ge): d1}
        for module, (g_in, g_out) in io.items():
            grown = {}
            for src in {j, upper}:
                w = s[f"blocks.{src}.{module}.weight"]
                b = s[f"blocks.{src}.{module}.bias"]
                grown[src] = (_copy_out(_copy_in(w, g_in), g_out), _copy_out(b, g_out))
            w, b = (t.clone() for t in grown[j])
            if id(g_out) in outer:  # new output units from the layer above
                w[outer[id(g_out)] :] = grown[upper][0][outer[id(g_out)] :]
                b[outer[id(g_out)] :] = grown[upper][1][outer[id(g_out)] :]
            if id(g_in) in inner:  # ... and the weights that read them
                w[:, inner[id(g_in)] :] = grown[upper][0][:, inner[id(g_in)] :]
            sd[f"blocks.{l}.{module}.weight"] = w
            sd[f"blocks.{l}.{module}.bias"] = b
        for module in BLOCK_NORMS:
            for kind in ("weight", "bias"):
                sd[f"blocks.{l}.{module}.{kind}"] = _copy_out(s[f"blocks.{j}.{module}.{kind}"], ge)
    large.load_state_dict(sd)
    return large
