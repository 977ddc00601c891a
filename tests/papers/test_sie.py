"""SIE: each piece against an independent computation (a loop, a closed form, brute force, the
official code's formula on a tiny input)."""

import itertools
import json
import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import sie
from companion.papers.sie import method as m


def test_relative_rotation_is_cos_sin_of_the_difference():
    a, b = torch.tensor([0.3, -2.0]), torch.tensor([1.0, 2.5])
    z = m.relative_rotation(a, b)
    torch.testing.assert_close(z[:, 0], torch.cos(b - a))
    torch.testing.assert_close(z[:, 1], torch.sin(b - a))
    # a full turn more is the same rotation
    torch.testing.assert_close(m.relative_rotation(a, b + 2 * math.pi), z, atol=1e-6, rtol=0)


def test_hypernetwork_equals_the_official_per_sample_matrices():
    torch.manual_seed(0)
    pred = m.HyperNetPredictor(dim=5, z_dim=2)
    e, z = torch.randn(7, 5), torch.randn(7, 2)
    # official ParametrizedNet: w = hypernet(z).view(-1, out, in); bmm(x[B,1,in], wᵀ)
    w = pred.hypernet(z).view(-1, 5, 5)
    official = torch.bmm(e.unsqueeze(1), w.transpose(-2, -1)).squeeze(1)
    loop = torch.stack([w[i] @ e[i] for i in range(7)])
    torch.testing.assert_close(pred(e, z), official, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(pred(e, z), loop, atol=1e-5, rtol=1e-5)
    # bias-free and linear in z: W(0) = 0, so it is never the identity for every z
    assert pred.matrices(torch.zeros(1, 2)).abs().max() == 0


def test_variance_and_covariance_terms_against_loops():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(10, 4, generator=g) * torch.tensor([0.1, 0.5, 1.0, 2.0])
    n, d = x.shape
    hinge = []
    for j in range(d):
        col = x[:, j]
        var = ((col - col.mean()) ** 2).sum() / (n - 1)
        hinge.append(max(0.0, 1 - math.sqrt(var + 1e-4)))
    assert m.variance_loss(x).item() == pytest.approx(sum(hinge) / d, rel=1e-5)
    xc = x - x.mean(0)
    off = sum(
        ((xc[:, i] * xc[:, j]).sum() / (n - 1)) ** 2 for i in range(d) for j in range(d) if i != j
    )
    assert m.covariance_loss(x).item() == pytest.approx(float(off) / d, rel=1e-5)
    mat = torch.arange(16.0).view(4, 4)
    assert m.off_diagonal(mat).tolist() == [
        v for i, v in enumerate(mat.flatten().tolist()) if i % 5
    ]


def test_sie_loss_is_the_official_combination():
    g = torch.Generator().manual_seed(2)
    xi, xe, yi, ye, yp = (torch.randn(8, 3, generator=g) for _ in range(5))
    loss, terms = m.sie_loss(xi, xe, yi, ye, yp, 10.0, 10.0, 1.0, 0.45)

    def std(v):  # official: mean(relu(1 - sqrt(var + 1e-4)))
        v = v - v.mean(0)
        return torch.mean(F.relu(1 - torch.sqrt(v.var(0) + 1e-4)))

    def cov(v):
        v = v - v.mean(0)
        c = v.T @ v / (len(v) - 1)
        return (c - torch.diag(torch.diag(c))).pow(2).sum() / c.shape[0]

    x, y = torch.cat([xi, xe], 1), torch.cat([yi, ye], 1)
    expected = (
        10 * F.mse_loss(xi, yi)
        + 0.45 * 10 * F.mse_loss(yp, ye)
        + 10 * (std(x) / 2 + std(y) / 2)
        + 10 * std(yp) / 2
        + cov(x)
        + cov(y)
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    vic, _ = m.vicreg_loss(x, y)
    assert vic.item() == pytest.approx(
        (10 * F.mse_loss(x, y) + 10 * (std(x) / 2 + std(y) / 2) + cov(x) + cov(y)).item(), rel=1e-5
    )


def test_split_model_shapes_and_projector_widths():
    model = m.SIE(torch.nn.Flatten(), repr_dim=12, equi_dims=4, widths=(24, 6))
    r = torch.randn(5, 12)
    r_inv, r_eq = model.split(r)
    assert torch.equal(r_inv, r[:, :8]) and torch.equal(r_eq, r[:, 8:])
    e_inv, e_eq = model.embed(r)
    assert e_inv.shape == (5, 4) and e_eq.shape == (5, 2)  # widths × 8/12 and × 4/12
    assert model.projector_inv[-1].bias is None  # the last layer is bias-free
    loss, terms = model(torch.randn(5, 12), torch.randn(5, 12), torch.randn(5, 2))
    assert torch.isfinite(loss) and set(terms) == {"inv", "equi", "std", "pred_std", "cov"}


def test_mrr_against_argsort_ranks_and_chance_by_brute_force():
    g = torch.Generator().manual_seed(3)
    scores, target = torch.randn(20, 6, generator=g), torch.randint(6, (20,), generator=g)
    ranks = [int((torch.argsort(-s) == t).nonzero()[0, 0]) + 1 for s, t in zip(scores, target)]
    assert m.mean_reciprocal_rank(scores, target).item() == pytest.approx(
        sum(1 / r for r in ranks) / 20
    )
    k = 4  # every ranking of 4 candidates equally likely
    perms = list(itertools.permutations(range(k)))
    brute = sum(1 / (p.index(0) + 1) for p in perms) / len(perms)
    assert m.chance_mrr(k) == pytest.approx(brute)


def test_bilinear_ridge_dual_equals_primal_and_reads_a_bilinear_target():
    g = torch.Generator().manual_seed(4)
    n, d = 60, 3
    ax, ay, bx, by = (torch.randn(n, d, generator=g, dtype=torch.float64) for _ in range(4))
    z = torch.stack([(ax * ay).sum(1), ax[:, 0] * ay[:, 1]], 1)
    zt = torch.stack([(bx * by).sum(1), bx[:, 0] * by[:, 1]], 1)
    r2 = m.bilinear_ridge_r2((ax, ay, z), (bx, by, zt), ridge=1e-3)
    # primal ridge on the explicit features vec(a ⊗ b)/d and a constant
    both = torch.cat([ax, ay])
    mean, std = both.mean(0), both.std(0)

    def feats(a, b):
        a, b = (a - mean) / std, (b - mean) / std
        return torch.cat(
            [
                torch.einsum("ni,nj->nij", a, b).reshape(len(a), -1) / d,
                torch.ones(len(a), 1, dtype=a.dtype),
            ],
            1,
        )

    f, ft = feats(ax, ay), feats(bx, by)
    w = torch.linalg.solve(
        f.T @ f + 1e-3 * torch.eye(f.shape[1], dtype=f.dtype), f.T @ (z - z.mean(0))
    )
    primal = m.r2_score(ft @ w + z.mean(0), zt)
    assert r2 == pytest.approx(primal, abs=1e-6)
    assert r2 > 0.99  # the target is bilinear in the (standardized) pair
    noise = torch.randn(n, 2, generator=g, dtype=torch.float64)
    assert m.bilinear_ridge_r2((ax, ay, noise), (bx, by, zt)) < 0.2


def test_fit_linear_hypernet_recovers_known_matrices():
    g = torch.Generator().manual_seed(5)
    w = torch.randn(2, 4, 4, generator=g)
    e, theta = torch.randn(200, 4, generator=g), torch.rand(200, generator=g) * 6
    z = torch.stack([theta.cos(), theta.sin()], 1)
    target = m.apply_linear_hypernet(w, e, z)
    loop = torch.stack([(z[i, 0] * w[0] + z[i, 1] * w[1]) @ e[i] for i in range(200)])
    torch.testing.assert_close(target, loop, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        m.fit_linear_hypernet(e, target, z, ridge=1e-6), w, atol=1e-3, rtol=0
    )


def test_rotation_share_extremes():
    g = torch.Generator().manual_seed(6)
    per_image = torch.randn(10, 1, 3, generator=g).expand(10, 5, 3)
    per_rotation = torch.randn(1, 5, 3, generator=g).expand(10, 5, 3)
    assert m.rotation_share(per_image) == pytest.approx(0.0, abs=1e-6)
    assert m.rotation_share(per_rotation) == pytest.approx(1.0, abs=1e-6)


def test_rotated_pairs_are_a_function_of_the_step():
    cfg = sie.PRESETS["smoke"]
    images = torch.rand(100, 1, 4, 4)
    a, b = sie.RotatedPairs(images, cfg), sie.RotatedPairs(images, cfg)
    b(7)  # a different history must not change what step 3 returns
    for x, y in zip(a(3), b(3)):
        assert torch.equal(x, y)
    assert (a(3)[1].abs() <= math.pi).all()


def test_bad_options_name_the_valid_choices():
    with pytest.raises(
        CompanionError, match="unknown method 'simclr'; valid: sie, sie_mlp, vicreg, untrained"
    ):
        sie.PRESETS["smoke"].replace(methods=("simclr",))
    with pytest.raises(CompanionError, match="unknown encoder"):
        sie.PRESETS["smoke"].replace(encoder="resnet")
    with pytest.raises(CompanionError, match="equi_dims"):
        sie.PRESETS["smoke"].replace(equi_dims=64)


def test_tiny_run_measures_both_arms_and_round_trips(tmp_path):
    cfg = sie.PRESETS["smoke"].replace(
        dataset="digits", image_size=8, steps=3, eval_pairs=40, grid_images=10, device="cpu"
    )
    result = sie.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == {"sie", "sie_mlp", "vicreg", "untrained"}
    for name in ("sie", "sie_mlp", "untrained"):
        assert set(result.arms[name].r2) == {"inv", "equi", "all"}
    assert result.arms["sie"].hypernet_at_zero == 0.0
    assert result.arms["sie_mlp"].hypernet_at_zero is None  # the control has no hypernetwork
    assert result.arms["untrained"].loss == [] and result.arms["untrained"].seconds == 0.0
    loaded = sie.SIEResult.load(tmp_path / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))  # tuples become lists
    report = sie.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")


def test_mlp_predictor_is_the_official_two_layer_mlp_on_z_then_e():
    torch.manual_seed(3)
    pred = m.MLPPredictor(dim=5, z_dim=2)
    e, z = torch.randn(7, 5), torch.randn(7, 2)
    first, second = pred.pred[0], pred.pred[2]
    # official MLPPredictor: Linear(repr + latent → repr), ReLU, Linear(repr → repr) on cat(z, e)
    expected = second(torch.relu(first(torch.cat([z, e], 1))))
    torch.testing.assert_close(pred(e, z), expected)
    # it can ignore z and copy e (the collapse the hypernetwork rules out): weights exist that do
    with torch.no_grad():
        first.weight.zero_(), first.bias.fill_(10.0), second.weight.zero_(), second.bias.zero_()
        first.weight[:, 2:] = torch.eye(5)
        second.weight.copy_(torch.eye(5))
        second.bias.fill_(-10.0)
    torch.testing.assert_close(pred(e, z), e)


def test_control_differs_from_sie_only_in_the_predictor():
    cfg = sie.PRESETS["smoke"]
    a = sie.build_model(cfg, "sie", 1)
    b = sie.build_model(cfg, "sie_mlp", 1)
    assert isinstance(a.predictor, m.HyperNetPredictor)
    assert isinstance(b.predictor, m.MLPPredictor)

    def names(model):
        return [n for n, _ in model.named_parameters() if not n.startswith("predictor")]

    assert names(a) == names(b)
    torch.manual_seed(0)
    a = sie.build_model(cfg, "sie", 1)
    torch.manual_seed(0)
    u = sie.build_model(cfg, "untrained", 1)
    for (n, p), (_, q) in zip(a.named_parameters(), u.named_parameters()):
        assert torch.equal(p, q), n
