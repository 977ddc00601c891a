"""mimetic_init against independent computations (numpy SVD, the forward pass, brute force)."""

import math

import numpy as np
import pytest
import torch

from companion.core import ExerciseError, check_close
from companion.errors import CompanionError
from companion.nn import MLP, MultiHeadSelfAttention, ViT, attention_blocks
from companion.papers import mimetic_init as paper


def make_attention(dim=24, heads=3, seed=0):
    torch.manual_seed(seed)
    attn = MultiHeadSelfAttention(dim, heads)
    with torch.no_grad():
        for layer in (attn.q, attn.k, attn.v, attn.proj):
            layer.bias.normal_()  # nonzero, so that zeroing them is tested
    return attn


def targets_of(seed, dim, heads, a1=0.7, b1=0.7, a2=0.4, b2=0.4):
    """Replay the generator: one α₁Z₁ + β₁I per head, then α₂Z₂ − β₂I, as numpy arrays."""
    g = torch.Generator().manual_seed(seed)
    qk = [paper.mimetic_target(dim, a1, b1, g).numpy() for _ in range(heads)]
    return qk, paper.mimetic_target(dim, a2, -b2, g).numpy()


def best_rank_k(m, k):
    """Truncated SVD with numpy (Eckart–Young), independent of torch.linalg."""
    u, s, vt = np.linalg.svd(m)
    return (u[:, :k] * s[:k]) @ vt[:k]


def test_target_has_the_right_statistics():
    g = torch.Generator().manual_seed(0)
    d = 400
    m = paper.mimetic_target(d, 0.7, 0.3, g)
    off = m[~torch.eye(d, dtype=torch.bool)]
    assert off.mean().item() == pytest.approx(0.0, abs=2e-3)
    assert off.std().item() == pytest.approx(0.7 / math.sqrt(d), rel=0.02)  # Z ~ N(0, 1/d)
    assert m.diagonal().mean().item() == pytest.approx(0.3, abs=0.01)


@pytest.mark.parametrize("rank", [1, 4, 16])
def test_factorize_gives_the_best_rank_k_approximation(rank):
    g = torch.Generator().manual_seed(1)
    m = paper.mimetic_target(16, 0.7, 0.7, g)
    left, right = paper.factorize(m, rank)
    assert left.shape == (16, rank) and right.shape == (rank, 16)
    np.testing.assert_allclose((left @ right).numpy(), best_rank_k(m.numpy(), rank), atol=1e-10)
    # the two factors carry the same singular values (Σ^½ on each side)
    np.testing.assert_allclose(
        left.norm(dim=0).numpy(), right.norm(dim=1).numpy(), rtol=1e-10, atol=1e-12
    )
    s = np.linalg.svd(m.numpy(), compute_uv=False)
    err = np.linalg.norm(m.numpy() - (left @ right).numpy()) ** 2
    assert err == pytest.approx((s[rank:] ** 2).sum(), abs=1e-10)


def test_query_key_product_of_each_head_is_the_rank_k_target():
    dim, heads = 24, 3
    attn = make_attention(dim, heads)
    paper.mimetic_init_(attn, generator=torch.Generator().manual_seed(5))
    qk, _ = targets_of(5, dim, heads)
    for h in range(heads):
        np.testing.assert_allclose(
            paper.query_key_product(attn, h).double().numpy(),
            best_rank_k(qk[h], dim // heads),
            atol=1e-5,
        )


def test_value_proj_product_is_the_full_rank_target():
    dim, heads = 24, 3
    attn = make_attention(dim, heads)
    paper.mimetic_init_(attn, generator=torch.Generator().manual_seed(6))
    _, vo = targets_of(6, dim, heads)
    np.testing.assert_allclose(paper.value_proj_product(attn).double().numpy(), vo, atol=1e-5)
    # the heads' shares add up to the layer's product
    shares = sum(paper.value_proj_product(attn, h) for h in range(heads))
    torch.testing.assert_close(shares, paper.value_proj_product(attn), atol=1e-5, rtol=1e-5)


def test_products_match_the_forward_pass():
    """The transposes: logits and outputs of the module itself, computed from the products."""
    dim, heads = 24, 3
    attn = make_attention(dim, heads)
    paper.mimetic_init_(attn, generator=torch.Generator().manual_seed(7))
    assert all(layer.bias.abs().max() == 0 for layer in (attn.q, attn.k, attn.v, attn.proj))
    x = torch.randn(2, 9, dim)
    out, att = attn(x, return_attention=True)
    k = dim // heads
    expected_out = torch.zeros_like(out)
    for h in range(heads):
        logits = x @ paper.query_key_product(attn, h) @ x.transpose(1, 2) / math.sqrt(k)
        torch.testing.assert_close(att.scores[:, h], logits, atol=1e-4, rtol=1e-4)
        expected_out += att.probs[:, h] @ x @ paper.value_proj_product(attn, h)
    torch.testing.assert_close(out, expected_out, atol=1e-5, rtol=1e-4)
    # v then proj, as nn.Linear computes them, is x @ (α₂Z₂ − β₂I)
    _, vo = targets_of(7, dim, heads)
    torch.testing.assert_close(
        attn.proj(attn.v(x)).double(), x.double() @ torch.from_numpy(vo), atol=1e-5, rtol=1e-4
    )


def test_a_transposed_value_weight_would_be_caught():
    """Writing U₂Σ₂^½ into v.weight as is (no transpose) does not give α₂Z₂ − β₂I."""
    dim = 24
    attn = make_attention(dim, 3)
    _, vo = targets_of(8, dim, 3)
    w_v, w_proj = paper.factorize(torch.from_numpy(vo), dim)
    with torch.no_grad():
        attn.v.weight.copy_(w_v)
        attn.proj.weight.copy_(w_proj)
    err = np.abs(paper.value_proj_product(attn).double().numpy() - vo).max()
    assert err > 0.05


def test_diagonal_signs_and_scores():
    attn = make_attention(64, 4)
    default_scores = [paper.diagonal_score(paper.query_key_product(attn, h)) for h in range(4)]
    paper.mimetic_init_(attn, generator=torch.Generator().manual_seed(9))
    for h in range(4):
        qk = paper.query_key_product(attn, h)
        assert qk.diagonal().mean() > 0
        assert paper.diagonal_score(qk) > 2.0 > abs(default_scores[h])
    vo = paper.value_proj_product(attn)
    assert vo.diagonal().mean().item() == pytest.approx(-0.4, abs=0.05)
    assert paper.diagonal_score(vo) < -5.0


def test_diagonal_score_closed_form():
    m = torch.tensor([[2.0, 1.0], [-1.0, 4.0]])
    off = torch.tensor([1.0, -1.0])
    assert paper.diagonal_score(m).item() == pytest.approx(3.0 / off.std().item())


def test_alpha_beta_zero_and_identity_limits():
    attn = make_attention(16, 2)
    paper.mimetic_init_(attn, alpha1=0.0, beta1=1.0, alpha2=0.0, beta2=1.0)
    torch.testing.assert_close(paper.value_proj_product(attn), -torch.eye(16), atol=1e-5, rtol=0)
    # the best rank-8 approximation of I is a projection of rank 8
    p = paper.query_key_product(attn, 0)
    torch.testing.assert_close(p @ p, p, atol=1e-5, rtol=0)
    assert torch.linalg.matrix_rank(p).item() == 8


def test_mimetic_init_on_a_vit_touches_attention_only():
    torch.manual_seed(0)
    model = ViT(image_size=8, patch_size=2, in_channels=1, dim=32, depth=3, heads=4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    paper.mimetic_init(model, generator=torch.Generator().manual_seed(0))
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    attn_weights = {
        f"blocks.{i}.attn.{name}.weight" for i in range(3) for name in ("q", "k", "v", "proj")
    }
    assert changed == attn_weights  # default biases are already zero
    for attn in attention_blocks(model):
        assert paper.diagonal_score(paper.value_proj_product(attn)) < -3


def test_mimetic_init_refuses_bad_input():
    with pytest.raises(CompanionError, match="MultiHeadSelfAttention"):
        paper.mimetic_init(MLP(4, [8], 2))
    with pytest.raises(CompanionError, match="beta1"):
        paper.mimetic_init_(make_attention(), beta1=-0.5)
    with pytest.raises(CompanionError, match="head 3"):
        paper.query_key_product(make_attention(24, 3), 3)


def test_mimetic_init_handles_float32_and_other_dtypes():
    attn = MultiHeadSelfAttention(16, 2).to(torch.bfloat16)
    paper.mimetic_init_(attn)
    assert attn.q.weight.dtype == torch.bfloat16
    assert paper.value_proj_product(attn).float().diagonal().mean() < 0


def test_patch_grid_distance_brute_force():
    grid = 3
    dist = paper.patch_grid_distance(grid)
    assert dist.shape == (10, 10)
    assert (dist[0] == -1).all() and (dist[:, 0] == -1).all()
    for i in range(9):
        for j in range(9):
            expected = max(abs(i // grid - j // grid), abs(i % grid - j % grid))
            assert dist[1 + i, 1 + j] == expected


def test_local_attention_mass_limits():
    grid = 4
    t = grid * grid + 1
    # attending to itself is not locality: the query is left out of its neighbourhood
    assert paper.local_attention_mass(torch.eye(t), grid).item() == 0.0
    assert paper.self_attention_mass(torch.eye(t)).item() == pytest.approx(1.0)
    to_cls = torch.zeros(t, t)
    to_cls[:, 0] = 1
    assert paper.local_attention_mass(to_cls, grid).item() == 0.0
    assert paper.self_attention_mass(to_cls).item() == 0.0
    # each patch attends only to its right-hand neighbour (the last column to its left one)
    to_next = torch.zeros(t, t)
    for i in range(grid * grid):
        j = i + 1 if i % grid < grid - 1 else i - 1
        to_next[1 + i, 1 + j] = 1
    assert paper.local_attention_mass(to_next, grid).item() == pytest.approx(1.0)
    # uniform: the mean number of 3×3 neighbours (corners 3, edges 5, inside 8) over T
    sizes = [3] * 4 + [5] * 8 + [8] * 4
    assert paper.uniform_local_mass(grid) == pytest.approx(np.mean(sizes) / t)
    assert paper.self_attention_mass(torch.full((t, t), 1 / t)).item() == pytest.approx(1 / t)
    assert paper.uniform_self_mass(grid) == pytest.approx(1 / t)
    batch = torch.softmax(torch.randn(2, 3, t, t), -1)
    assert paper.local_attention_mass(batch, grid).shape == (2, 3)
    assert paper.self_attention_mass(batch).shape == (2, 3)


def test_local_attention_mass_brute_force():
    grid = 3
    t = grid * grid + 1
    probs = torch.softmax(torch.randn(t, t, generator=torch.Generator().manual_seed(0)), -1)
    expected = []
    for i in range(grid * grid):
        expected.append(
            sum(
                probs[1 + i, 1 + j].item()
                for j in range(grid * grid)
                if j != i and max(abs(i // grid - j // grid), abs(i % grid - j % grid)) <= 1
            )
        )
    assert paper.local_attention_mass(probs, grid).item() == pytest.approx(np.mean(expected))


def test_sincos_position_embedding_is_local():
    grid, dim = 6, 64
    p = paper.sincos_position_embedding(grid, dim)
    assert p.shape == (grid * grid, dim)
    assert p.abs().max() <= 1.0
    logits = torch.nn.functional.pad(p @ p.T, (1, 0, 1, 0), value=0.0)
    mass = paper.local_attention_mass(torch.softmax(logits, -1), grid).item()
    assert mass > 1.5 * paper.uniform_local_mass(grid)


def test_random_crop_flip_is_a_shift_or_its_mirror():
    torch.manual_seed(0)
    x = torch.rand(20, 3, 8, 8)
    out = paper.random_crop_flip(x, pad=0)
    for a, b in zip(x, out):
        assert torch.equal(a, b) or torch.equal(a.flip(-1), b)
    shifted = paper.random_crop_flip(x, pad=2)
    assert shifted.shape == x.shape
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    for a, b in zip(padded, shifted):
        crops = [a[:, i : i + 8, j : j + 8] for i in range(5) for j in range(5)]
        assert any(torch.equal(b, c) or torch.equal(b, c.flip(-1)) for c in crops)


def test_both_arms_share_everything_but_attention():
    cfg = paper.PRESETS["smoke"]
    a = paper.build_model(cfg, "default", 1, 10, seed=3)
    b = paper.build_model(cfg, "mimetic", 1, 10, seed=3)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        same = torch.equal(pa, pb)
        is_attn = ".attn." in name and name.endswith("weight")
        assert same != is_attn, name


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"].replace(beta1=0.3)
    assert cfg.beta1 == 0.3 and paper.PRESETS["notebook"].beta1 == 0.7
    assert paper.PRESETS["notebook"].replace(seed=4, num_seeds=2).seeds == [4, 5]
    full = paper.PRESETS["full"]
    assert (full.dim, full.depth, full.heads, full.patch_size) == (192, 12, 3, 2)  # ViT-Tiny
    for bad, text in (
        ({"alpha3": 1}, "alpha3"),
        ({"beta1": -1.0}, "beta1"),
        ({"inits": ("default", "xavier")}, "xavier"),
        ({"pos_embed": "rope"}, "rope"),
        ({"dataset": "imagenet21k"}, "imagenet21k"),
        ({"heads": 5}, "heads"),
        ({"num_seeds": 0}, "num_seeds"),
        ({"device": "tpu"}, "tpu"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_claims_and_resume(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.runs) == {"default", "noise_only", "mimetic"}
    arm = result.runs["mimetic"][0]
    assert len(arm.loss) == cfg.steps
    assert arm.eval_steps[-1] == cfg.steps - 1
    assert len(arm.init_local_mass) == len(arm.init_self_mass) == cfg.depth
    t = cfg.grid**2 + 1
    assert np.array(arm.init_maps).shape == (cfg.heads, t, t)
    assert np.array(arm.trained_qk).shape == (cfg.depth, cfg.heads, cfg.dim, cfg.dim)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.runs["default"][0].test_accuracy == result.runs["default"][0].test_accuracy
    report = paper.check_claims(result)
    assert len(report.rows) == 6
    assert report.rows[0].claim.startswith("premise: ")
    assert report.rows[1].claim.startswith("premise: ")
    figs = paper.figures(result)
    assert set(figs) == {"curves", "init_attention", "local_mass", "trained_weights"}
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert resumed.runs["mimetic"][0].loss == arm.loss


def test_full_preset_code_path_on_a_cifar_fixture(tmp_path):
    """The full preset's data, augmentation, warm-up and bf16 path, shrunk to seconds."""
    from companion.data import write_cifar_fixture

    root = write_cifar_fixture(tmp_path, "cifar10", n_train=40, n_test=10)
    cfg = paper.PRESETS["full"].replace(
        data_root=str(root),
        dim=24,
        depth=2,
        heads=3,
        batch_size=16,
        steps=4,
        warmup_fraction=0.5,
        eval_every=2,
        probe_size=4,
        num_seeds=1,
        device="cpu",
    )
    result = paper.run(cfg)
    arm = result.runs["mimetic"][0]
    assert result.grid == 16 and len(arm.loss) == 4
    assert np.array(arm.init_maps).shape == (3, 257, 257)
    assert all(np.isfinite(arm.loss))


def test_check_claims_reports_failure_when_effect_is_absent():
    """Claims are computed, not typed: swapping the arms must make them fail."""
    result = paper.run(paper.PRESETS["smoke"])
    swapped = paper.Result(
        config=result.config,
        grid=result.grid,
        runs={
            "default": result.runs["mimetic"],
            "noise_only": result.runs["noise_only"],
            "mimetic": result.runs["default"],
        },
    )
    swapped_report = paper.check_claims(swapped)
    assert not swapped_report.rows[0].holds
    # a failed premise gates the accuracy rows: they never count as holding
    assert not any(r.holds for r in swapped_report.rows[2:])
    # a tie is not a hold: equal accuracy curves fail every accuracy row
    for d, n, m in zip(result.runs["default"], result.runs["noise_only"], result.runs["mimetic"]):
        m.test_accuracy = list(d.test_accuracy)
        n.test_accuracy = list(d.test_accuracy)
    report = paper.check_claims(result)
    assert not any(r.holds for r in report.rows[2:])
    with pytest.raises(CompanionError, match="mimetic"):
        paper.check_claims(paper.Result(result.config, result.grid, {"default": []}))


def test_widget_view_draws_and_control_tracks_both_sliders():
    import matplotlib.pyplot as plt

    tokens = torch.randn(17, 32)
    fig = plt.figure()
    paper.draw_alpha_beta(fig, (0.7, 0.7), tokens, heads=4, grid=4)
    assert len(fig.axes) == 3  # the product, the map and its colour bar
    plt.close(fig)
    control = paper.alpha_beta_control()
    control.children[1].value = 0.2
    assert control.value == (0.7, 0.2)


def test_exercise_checks_reject_wrong_answers():
    g = torch.Generator().manual_seed(0)
    m = paper.mimetic_target(8, 0.7, 0.7, g)
    left, right = paper.factorize(m, 2)
    with pytest.raises(ExerciseError, match="differs"):
        check_close(left @ right, m, "rank-2 product")
