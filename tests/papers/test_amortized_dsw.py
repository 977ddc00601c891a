"""amortized_dsw: the sliced distances, the vMF sampler, the amortized maps and EMD against
independent computations (POT, brute force over permutations, loops, closed forms); the OFF
reader on a fixture; the presets and the claims."""

import itertools
import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import amortized_dsw as paper
from companion.papers.amortized_dsw import fullscale


def _clouds(n=2, m=6, seed=0, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    return (
        torch.tensor(rng.standard_normal((n, m, 3)), dtype=dtype),
        torch.tensor(rng.standard_normal((n, m, 3)), dtype=dtype),
    )


def test_sliced_wasserstein_one_direction_matches_pot_and_brute_force():
    import ot

    x, y = _clouds(n=1, m=5)
    theta = paper.random_directions(np.random.default_rng(1), 1, 1, like=x)
    value = float(paper.sliced_wasserstein(x, y, theta)[0])
    a = (x[0] @ theta[0, 0]).numpy()
    b = (y[0] @ theta[0, 0]).numpy()
    brute = min(
        sum((a[i] - b[p[i]]) ** 2 for i in range(5)) for p in itertools.permutations(range(5))
    )
    w = np.full(5, 0.2)
    pot = 5 * ot.emd2(w, w, (a[:, None] - b[None, :]) ** 2)  # summed over points, not averaged
    assert value == pytest.approx(brute, rel=1e-10)
    assert value == pytest.approx(pot, rel=1e-8)


def test_sliced_wasserstein_averages_directions():
    x, y = _clouds(n=2, m=4)
    theta = paper.random_directions(np.random.default_rng(2), 2, 3, like=x)
    per = [paper.sliced_wasserstein(x, y, theta[:, l : l + 1]) for l in range(3)]
    assert torch.allclose(paper.sliced_wasserstein(x, y, theta), sum(per) / 3)


def test_emd_matches_brute_force_assignment():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    brute = min(
        sum(np.linalg.norm(x[i] - y[p[i]]) for i in range(5)) / 5
        for p in itertools.permutations(range(5))
    )
    assert paper.emd(x, y) == pytest.approx(brute, rel=1e-9)


def test_emd_matches_pot_network_simplex():
    import ot

    rng = np.random.default_rng(11)
    for m in (7, 40):
        x, y = rng.standard_normal((m, 3)), rng.standard_normal((m, 3))
        w = np.full(m, 1.0 / m)
        pot = ot.emd2(w, w, ot.dist(x, y, metric="euclidean"))
        assert paper.emd(x, y) == pytest.approx(pot, rel=1e-9)
    assert paper.emd(x, x[::-1]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kappa", [0.5, 5.0, 50.0])
def test_vmf_cosine_mean_is_the_closed_form(kappa):
    w = paper.vmf_w(np.random.default_rng(4).uniform(size=200_000), kappa)
    assert w.min() >= -1 - 1e-12 and w.max() <= 1 + 1e-12
    assert w.mean() == pytest.approx(1 / math.tanh(kappa) - 1 / kappa, abs=4e-3)


def test_vmf_samples_are_unit_centred_on_loc_and_reparameterized():
    loc = torch.tensor([[0.0, 0.6, 0.8], [-1.0, 0.0, 0.0]], dtype=torch.float64)
    loc.requires_grad_(True)
    kappa = 8.0
    z = paper.vmf_sample(loc, kappa, 20_000, np.random.default_rng(5))
    assert torch.allclose(z.norm(dim=2), torch.ones(2, 20_000, dtype=torch.float64), atol=1e-4)
    mean = z.mean(dim=1).detach()
    expected = (1 / math.tanh(kappa) - 1 / kappa) * loc.detach()
    assert torch.allclose(mean, expected, atol=0.01)
    z[:, :, 0].sum().backward()
    assert loc.grad is not None and loc.grad.abs().sum() > 0


def test_attention_mapping_matches_a_loop_and_is_invariant_and_symmetric():
    torch.manual_seed(0)
    f = paper.AttentionMapping(3, 4).double()
    x, y = _clouds(n=1, m=5)
    eps = f(torch.cat([x, y], dim=1))[0, 0]
    a = f.attn

    def attend(c):  # a loop over query points
        q, k, v = a.toqueries(c), a.tokeys(c), a.tovalues(c)
        rows = []
        for i in range(len(c)):
            s = torch.stack([q[i] @ k[j] for j in range(len(c))]) / math.sqrt(4)
            w = torch.exp(s) / torch.exp(s).sum()
            rows.append(sum(w[j] * v[j] for j in range(len(c))))
        return torch.stack(rows).mean(0)

    with torch.no_grad():
        ref = (attend(x[0]) + attend(y[0])) / 2
        ref = ref / ref.norm()
    assert torch.allclose(eps, ref, atol=1e-12)
    perm = torch.randperm(5)
    shuffled = f(torch.cat([x[:, perm], y[:, torch.randperm(5)]], dim=1))[0, 0]
    swapped = f(torch.cat([y, x], dim=1))[0, 0]
    assert torch.allclose(eps, shuffled, atol=1e-12) and torch.allclose(eps, swapped, atol=1e-12)


def test_linear_mapping_is_the_formula_and_not_invariant():
    torch.manual_seed(1)
    f = paper.LinearMapping(5).double()
    x, y = _clouds(n=1, m=5)
    xy = torch.cat([x, y], dim=1)
    w, b = f.f.weight[0], f.f.bias[0]
    with torch.no_grad():
        ref = (w[:, None] * xy[0]).sum(0) + b
        ref = ref / ref.norm()
    assert torch.allclose(f(xy)[0, 0], ref, atol=1e-12)
    shuffled = f(torch.cat([x[:, [1, 0, 2, 3, 4]], y], dim=1))[0, 0]
    angle = float(paper.angle_degrees(f(xy)[0, 0], shuffled).detach())
    assert angle > 1.0


def test_amortized_ascent_increases_the_vdsw_on_a_fixed_batch():
    x, y = _clouds(n=4, m=16, seed=6)
    y = y * torch.tensor([3.0, 1.0, 1.0], dtype=torch.float64)  # one direction matters
    torch.manual_seed(2)
    f = paper.AttentionMapping(3, 8).double()
    opt = torch.optim.Adam(f.parameters(), lr=0.05, betas=(0.0, 0.9))
    rng = np.random.default_rng(7)
    values = [paper.amortized_ascent_step(f, opt, x, y, 10.0, 32, rng) for _ in range(60)]
    assert np.mean(values[-10:]) > 1.1 * np.mean(values[:5])
    loss = paper.amortized_vdsw(f, x.requires_grad_(True), y, 10.0, 8, rng).mean()
    loss.backward()
    assert x.grad is not None and all(p.grad is None or True for p in f.parameters())


def test_optimized_vdsw_beats_a_random_location():
    x, y = _clouds(n=4, m=16, seed=8)
    y = y * torch.tensor([1.0, 3.0, 1.0], dtype=torch.float64)
    rng = np.random.default_rng(9)
    value, loc = paper.optimized_vdsw(x, y, 10.0, 32, rng, steps=50, lr=0.1)
    random = paper.vdsw_value(x, y, paper.random_locations(rng, 4, x), 10.0, 32, rng)
    assert float(value.mean()) > float(random.mean())
    assert torch.allclose(loc.norm(dim=1), torch.ones(4, dtype=torch.float64))


def test_off_reader_and_surface_sampling(tmp_path):
    root = fullscale.write_modelnet40_fixture(tmp_path / "MN", {"train": 2, "test": 1})
    files = sorted(root.glob("*/train/*.off"))
    assert len(files) == 6
    for f in files:  # both header styles, quads and triangles
        verts, tris = paper.read_off(f)
        assert tris.shape[1] == 3 and tris.max() < len(verts)
    verts, tris = paper.read_off(root / "box" / "train" / "box_0002.off")  # one-line header
    assert len(verts) == 8 and len(tris) == 12
    p = paper.sample_mesh(verts, tris, 500, np.random.default_rng(0))
    lo, hi = verts.min(0), verts.max(0)
    on_face = np.isclose(p, lo, atol=1e-9) | np.isclose(p, hi, atol=1e-9)
    assert on_face.any(axis=1).all()  # every point on a face of the box
    clouds, labels = paper.modelnet40_clouds(root, "test", 10, 32, np.random.default_rng(1))
    assert clouds.shape == (3, 32, 3) and sorted(labels) == ["box", "prism", "pyramid"]
    assert np.allclose(np.linalg.norm(clouds, axis=2).max(axis=1), 1.0)


def test_synthetic_clouds_are_normalized():
    clouds, labels = paper.synthetic_clouds(10, 50, np.random.default_rng(0))
    assert clouds.shape == (10, 50, 3) and set(labels) <= set(paper.SHAPES)
    assert np.allclose(clouds.mean(axis=1), 0.0, atol=1e-12)
    assert np.allclose(np.linalg.norm(clouds, axis=2).max(axis=1), 1.0)


def test_presets_and_overrides():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    assert paper.PRESETS["full"].precision == "32-true"
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(arms=("nope",))
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(precision="bf16-mixed")


def test_smoke_run_claims_and_roundtrip(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(steps=8, eval_every=4, device="cpu")
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == set(paper.ARMS)
    again = paper.AmortizedDSWResult.load(tmp_path / "result.json")
    assert again.arms["sw"].emd_test == result.arms["sw"].emd_test
    report = paper.check_claims(result)
    assert len(report.rows) == 6 and str(report).splitlines()[-1].startswith("claims hold:")
    assert all(inv.holds for inv in report.invariants)  # attention: invariant and symmetric
    assert result.arms["linear_vdsw"].shuffle_angle > 1.0
    # every arm starts from the same weights and sees the same batches: a rerun is identical
    rerun = paper.run(cfg)
    assert rerun.arms["attention_vdsw"].emd_test == result.arms["attention_vdsw"].emd_test


def test_max_sw_grid_is_the_largest_direction_of_the_grid():
    x, y = _clouds(n=2, m=6, seed=10)
    grid = paper.fibonacci_sphere(50)
    assert np.allclose(np.linalg.norm(grid, axis=1), 1.0)
    loop = [
        max(
            float(paper.sliced_wasserstein(x[b : b + 1], y[b : b + 1], torch.tensor(t)[None, None]))
            for t in grid
        )
        for b in range(2)
    ]
    assert torch.allclose(paper.max_sw_grid(x, y, 50), torch.tensor(loop, dtype=torch.float64))
    uniform = paper.sw(x, y, 4000, np.random.default_rng(0))
    assert (paper.max_sw_grid(x, y, 50) > uniform).all()  # the best direction beats the mean
