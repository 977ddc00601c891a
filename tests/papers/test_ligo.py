"""ligo against independent computations (loops, Kronecker products, function preservation)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.nn import ViT
from companion.papers import ligo as paper
from companion.papers.ligo.experiment import PhaseResult


def _vit(dim, depth, heads, seed=0):
    torch.manual_seed(seed)
    model = ViT(
        image_size=8,
        patch_size=4,
        in_channels=1,
        num_classes=5,
        dim=dim,
        depth=depth,
        heads=heads,
        mlp_ratio=2.0,
    )
    with torch.no_grad():  # weights far from init so that every term matters
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


def test_width_expansion_is_the_kronecker_map():
    """[I; B_out] W [I; B_in]ᵀ, and vec(A W Cᵀ) = (C ⊗ A) vec(W) (the paper's R_width)."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3, 4, generator=g)
    b_in, b_out = torch.randn(2, 4, generator=g), torch.randn(5, 3, generator=g)
    grown = paper.expand_out(paper.expand_in(w, b_in), b_out)
    a = torch.cat([torch.eye(3), b_out])
    c = torch.cat([torch.eye(4), b_in])
    torch.testing.assert_close(grown, a @ w @ c.T)
    vec = torch.kron(c, a) @ w.T.reshape(-1)  # column-major vec
    torch.testing.assert_close(grown.T.reshape(-1), vec)
    # a new output unit, by a loop: row i = Σ_j B_ij W_j
    loop = sum(b_out[1, j] * w[j] for j in range(3))
    torch.testing.assert_close(paper.expand_out(w, b_out)[4], loop)


def test_depth_mixing_and_official_linear_formula():
    """One grown linear map against the official FusedLinear.get_params order, written as
    loops: depth sum, then inputs [W, W B_inᵀ], then outputs [W; B_out W]."""
    small, large = _vit(8, 3, 1), _vit(16, 4, 2, seed=1)
    op = paper.LiGO(small, large, depth_scheme="rand", width_scheme="rand", seed=3)
    grown = op.grown_state()
    layer = 2
    w = op.depth_coeffs[f"{layer}_attn_q_weight"]
    mixed = sum(w[j] * small.blocks[j].attn.q.weight for j in range(3))
    b_in, b_out = op.B_emb, op.B_q[layer]
    expected = torch.zeros(16, 16)
    for r in range(16):
        for c in range(16):
            row = mixed[r] if r < 8 else sum(b_out[r - 8, i] * mixed[i] for i in range(8))
            expected[r, c] = row[c] if c < 8 else sum(b_in[c - 8, k] * row[k] for k in range(8))
    torch.testing.assert_close(grown[f"blocks.{layer}.attn.q.weight"], expected)
    # the projection reads V's units: its input map is V's B (tying)
    proj = grown[f"blocks.{layer}.attn.proj.weight"][:8, 8:]
    mixed_p = sum(
        op.depth_coeffs[f"{layer}_attn_proj_weight"][j] * small.blocks[j].attn.proj.weight
        for j in range(3)
    )
    torch.testing.assert_close(proj, mixed_p @ op.B_v[layer].T)


def test_stackbert_init_without_noise_copies_layers():
    small, large = _vit(8, 2, 1), _vit(8, 4, 1, seed=1)
    op = paper.LiGO(small, large, depth_scheme="stackbert", width_scheme="rand")
    grown = op.grown_state()
    for l in range(4):
        torch.testing.assert_close(
            grown[f"blocks.{l}.mlp.0.weight"], small.blocks[l % 2].mlp[0].weight
        )
    x = torch.rand(3, 1, 8, 8)
    same_depth = paper.LiGO(small, _vit(8, 2, 1, seed=2), depth_scheme="stackbert")
    torch.testing.assert_close(same_depth(x), small(x))


@pytest.mark.parametrize("factor", [2, 3])
def test_copy_growth_in_width_preserves_the_function(factor):
    small = _vit(8, 2, 1)
    large = paper.copy_grow(small, _vit(8 * factor, 2, factor, seed=1), seed=4)
    x = torch.rand(6, 1, 8, 8)
    torch.testing.assert_close(large(x), small(x), rtol=1e-4, atol=1e-4)


def test_aki_takes_new_units_from_the_layer_above_and_breaks_the_symmetry():
    small = _vit(8, 3, 1)
    fpi = paper.copy_grow(small, _vit(16, 3, 2, seed=1), seed=5, init="fpi")
    aki = paper.copy_grow(small, _vit(16, 3, 2, seed=1), seed=5, init="aki")
    for l in range(3):
        upper = min(l + 1, 2)
        # old units: as FPI; the new head's rows of Q and the new hidden units of the MLP come
        # from the layer above, and so do the projection's columns that read the new head
        torch.testing.assert_close(aki.blocks[l].attn.q.weight[:8], fpi.blocks[l].attn.q.weight[:8])
        a, b = aki.blocks[l].mlp[0].weight, fpi.blocks[l].mlp[0].weight
        torch.testing.assert_close(a[:16], b[:16])
        ref = paper.copy_grow(small, _vit(16, 3, 2, seed=1), seed=5, init="fpi")
        if upper != l:
            # the new rows are the upper layer's rows, selected by the same random map
            src = small.blocks[upper].mlp[0].weight
            rows = a[16:, :8] * 2  # inputs read residual units copied once: divided by 2
            assert all(any(torch.allclose(r, s) for s in src) for r in rows)
            assert not torch.allclose(a[16:], ref.blocks[l].mlp[0].weight[16:])
        proj_a, proj_f = aki.blocks[l].attn.proj.weight, fpi.blocks[l].attn.proj.weight
        # the old residual rows read the old heads as FPI; the new residual rows (the projection's
        # out-dimension) come from the layer above too, so residual copies are not written alike
        torch.testing.assert_close(proj_a[:8, :8], proj_f[:8, :8])
        out_a, out_f = aki.blocks[l].mlp[3].weight, fpi.blocks[l].mlp[3].weight
        torch.testing.assert_close(out_a[:8, :16], out_f[:8, :16])
        if upper != l:
            assert not torch.allclose(proj_a[8:], proj_f[8:])
            assert not torch.allclose(out_a[8:], out_f[8:])
        else:  # the top layer has no layer above: it stays a copy
            torch.testing.assert_close(proj_a, proj_f)
    x = torch.rand(6, 1, 8, 8)
    assert not torch.allclose(aki(x), small(x), atol=1e-3)  # AKI does not preserve the function
    with pytest.raises(CompanionError, match="valid"):
        paper.copy_grow(small, _vit(16, 3, 2, seed=1), init="net2net")


def _residual_duplicates(model, d1):
    """Rows of the patch embedding that still equal another row (residual copies)."""
    w = model.patch_embed.weight.detach().flatten(1)
    return sum(any(torch.allclose(w[i], w[k]) for k in range(len(w)) if k != i) for i in range(d1))


def test_aki_residual_copies_diverge_in_training_and_fpi_ones_do_not():
    small = _vit(8, 2, 1)
    x, y = torch.rand(16, 1, 8, 8), torch.randint(0, 5, (16,))
    dup = {}
    for init in ("fpi", "aki"):
        large = paper.copy_grow(small, _vit(16, 4, 2, seed=1), seed=3, init=init)
        assert _residual_duplicates(large, 8) == 8  # D₂ = 2·D₁: every unit starts copied once
        opt = torch.optim.SGD(large.parameters(), lr=0.5)
        for _ in range(3):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(large(x), y).backward()
            opt.step()
        dup[init] = _residual_duplicates(large, 8)
    assert dup["fpi"] == 8  # copies get equal gradients: the symmetry never breaks
    assert dup["aki"] == 0  # new residual rows written from the layer above: copies drift apart


def test_the_control_row_is_not_tested_when_the_operator_did_not_learn():
    phases = {
        "scratch": _phase("scratch", [0, 10, 20], [2.0, 1.0, 0.5]),
        "ligo": _phase("ligo", [0, 10, 20], [1.0, 0.5, 0.4]),
        "ligo_init": _phase("ligo_init", [0, 10, 20], [2.0, 1.0, 0.5]),
        "ligo_operator": _phase("ligo_operator", [0, 2], [1.0, 0.95]),  # barely learned
    }
    result = paper.LiGOResult(
        config={"ligo_steps": 2, "steps": 20, "small_steps": 10},
        flops={"small": 1.0, "large": 10.0, "ligo_operator": 5.0},
        phases=phases,
    )
    rows = paper.check_claims(result).rows
    premise = next(r for r in rows if r.claim.startswith("premise: "))
    control = next(r for r in rows if "untrained initialization" in r.claim)
    assert not premise.holds and not control.premise_ok
    phases["ligo_operator"] = _phase("ligo_operator", [0, 2], [1.0, 0.5])
    rows = paper.check_claims(result).rows
    assert next(r for r in rows if "untrained initialization" in r.claim).premise_ok


def test_copy_growth_stacks_layers():
    small = _vit(8, 2, 1)
    large = paper.copy_grow(small, _vit(16, 4, 2, seed=1), seed=0)
    # old units of the old heads are untouched; layer 3 copies small layer 1
    torch.testing.assert_close(
        large.blocks[3].attn.k.weight[:8, :8] * 2, small.blocks[1].attn.k.weight
    )
    with pytest.raises(ValueError, match="head_dim"):
        paper.copy_grow(small, _vit(16, 2, 1), seed=0)


def test_only_the_operator_trains_and_materialize_matches():
    small, large = _vit(8, 2, 1), _vit(16, 4, 2, seed=1)
    op = paper.LiGO(small, large, seed=0)
    before = {k: v.clone() for k, v in op.named_buffers()}
    opt = torch.optim.Adam(op.operator_parameters(), lr=1e-2)
    x, y = torch.rand(8, 1, 8, 8), torch.randint(0, 5, (8,))
    torch.nn.functional.cross_entropy(op(x), y).backward()
    opt.step()
    assert all(p.grad is None for p in op.large.parameters())
    for k, v in op.named_buffers():
        assert torch.equal(v, before[k]), k
    n_width = (16 - 8) * 8 * (1 + 3 * 4) + 4 * (32 - 16) * 16  # B_emb, B_q/k/v per layer, B_ffn
    n_depth = 4 * 8 * 2 * 2  # layers × modules × (weight, bias) × small layers
    assert sum(p.numel() for p in op.operator_parameters()) == n_width + n_depth
    with torch.no_grad():
        expected = op(x)
    torch.testing.assert_close(op.materialize()(x), expected)


def test_init_schemes():
    g = torch.Generator().manual_seed(0)
    w = paper.depth_init(5, 3, "stackbert_noisy", 0.03, g)
    assert w.sum().item() == pytest.approx(1.0) and w.argmax().item() == 5 % 3
    b = paper.width_init(4, 10, "sel", 0.0, g)
    assert b.shape == (6, 4) and torch.equal(b.sum(1), torch.ones(6))
    assert paper.width_init(4, 10, "rand", 0.0, g).sum(1).allclose(torch.ones(6))
    with pytest.raises(CompanionError, match="valid"):
        paper.width_init(4, 10, "bogus", 0.0, g)


def test_config_errors_name_the_bad_value():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="nope"):
        cfg.replace(arms=("scratch", "nope"))
    with pytest.raises(CompanionError, match="head size"):
        cfg.replace(heads=2)
    with pytest.raises(CompanionError, match="stackbert"):
        cfg.replace(depth_init="interlaced")


def _phase(name, steps, losses):
    return PhaseResult(name, [], [], steps, losses, losses, [0.9] * len(losses), 0.0)


def test_compute_fraction_interpolates_and_charges_the_operator():
    phases = {
        "scratch": _phase("scratch", [0, 10, 20], [2.0, 1.0, 0.5]),
        "copy": _phase("copy", [0, 10, 20], [0.9, 0.7, 0.4]),
        "ligo": _phase("ligo", [0, 10, 20], [0.8, 0.3, 0.2]),
        "ligo_operator": _phase("ligo_operator", [0, 2], [1.0, 0.8]),
    }
    result = paper.LiGOResult(
        config={"ligo_steps": 2, "steps": 20},
        flops={"small": 1.0, "large": 10.0, "ligo_operator": 15.0},
        phases=phases,
    )
    target = paper.target_loss(result)
    assert target == pytest.approx(0.5)  # scratch's last measurement
    assert paper.compute_fraction(result, "scratch") == pytest.approx(1.0)
    assert paper.compute_fraction(result, "scratch", 0.75) == pytest.approx(15 / 20)
    # LiGO starts below 0.9 after its 2 operator steps at 1.5 large steps each
    assert paper.compute_fraction(result, "ligo", 0.9) == pytest.approx(3 / 20)
    assert paper.compute_fraction(result, "copy", 0.1) == math.inf
    assert paper.compute_saved(result, "copy", 0.1) == 0.0  # never reached: nothing saved
    assert paper.compute_saved(result, "ligo", 0.9) == pytest.approx(1 - 3 / 20)


def test_mean_saving_averages_over_scratch_targets():
    phases = {
        "scratch": _phase("scratch", [0, 10, 20], [2.0, 1.0, 0.5]),
        "copy": _phase("copy", [0, 10, 20], [3.0, 2.5, 2.4]),
        "ligo": _phase("ligo", [0, 10, 20], [1.0, 0.5, 0.4]),
        "ligo_operator": _phase("ligo_operator", [0, 2], [1.0, 0.8]),
    }
    result = paper.LiGOResult(
        config={"ligo_steps": 2, "steps": 20},
        flops={"small": 1.0, "large": 10.0, "ligo_operator": 5.0},
        phases=phases,
    )
    # independent computation: scratch's loss at each fraction f of its 20 steps, scratch's
    # compute to reach it is f (its curve is decreasing), LiGO's by hand
    by_hand = []
    for f in paper.claims.TARGET_FRACTIONS:
        step = 20 * f
        target = 2.0 - step / 10 if step <= 10 else 1.0 - 0.5 * (step - 10) / 10
        # LiGO: offset of 10 FLOPs (2 operator steps × 5) on a 200-FLOP scratch run, then
        # 1.0 -> 0.5 over steps 0-10 and 0.5 -> 0.4 over steps 10-20
        if target >= 1.0:
            ligo_step = 0.0
        elif target >= 0.5:
            ligo_step = 10 * (1.0 - target) / 0.5
        else:
            ligo_step = 10 + 10 * (0.5 - target) / 0.1
        by_hand.append(max(0.0, 1 - (10 + 10 * ligo_step) / 200 / f))
    assert paper.mean_saving(result, "ligo") == pytest.approx(sum(by_hand) / len(by_hand))
    assert paper.mean_saving(result, "copy") == 0.0  # never reaches any target
    assert paper.operator_share(result) == pytest.approx(2 * 5 / (20 * 10))


def test_the_control_arm_starts_from_the_untrained_operator():
    """``ligo_init`` starts where LiGO's operator starts, before any operator step: the large
    model it materializes computes what the freshly built operator computes."""
    cfg = paper.PRESETS["smoke"]
    small = paper.build_model(cfg, "small", 1, 10)
    store = {"small": {k: v.clone() for k, v in small.state_dict().items()}}
    control = paper.initial_model(cfg, "ligo_init", None, store, 1, 10)
    operator = paper.initial_model(cfg, "ligo_operator", None, store, 1, 10)
    x = torch.rand(4, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(control(x), operator(x))
    assert isinstance(control, ViT) and all(p.requires_grad for p in control.parameters())


def test_claims_follow_the_arms_and_name_missing_ones():
    phases = {
        "scratch": _phase("scratch", [0, 10, 20], [2.0, 1.0, 0.5]),
        "ligo": _phase("ligo", [0, 10, 20], [1.0, 0.5, 0.4]),
        "ligo_init": _phase("ligo_init", [0, 10, 20], [2.0, 1.0, 0.5]),
        "ligo_operator": _phase("ligo_operator", [0, 2], [1.0, 0.5]),
    }
    result = paper.LiGOResult(
        config={"ligo_steps": 2, "steps": 20, "small_steps": 10},
        flops={"small": 1.0, "large": 10.0, "ligo_operator": 5.0},
        phases=phases,
    )
    report = paper.check_claims(result)  # no copy arm: no copy row, no KeyError
    texts = [row.claim for row in report.rows]
    assert not any("copy" in t for t in texts)
    control = next(r for r in report.rows if "untrained initialization" in r.claim)
    # the control's curve is scratch's: it saves nothing, LiGO saves its mean saving
    assert control.holds == (paper.mean_saving(result, "ligo") >= 0.05)
    assert paper.mean_saving(result, "ligo_init") == pytest.approx(0.0)
    del phases["ligo"], phases["ligo_operator"]
    with pytest.raises(CompanionError, match="'ligo'"):
        paper.check_claims(result)
