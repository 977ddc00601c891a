"""w1_boosting against independent computations: the exact W₁ by brute force over permutations,
the black box's plan cost by a loop over point pairs, its additive bound on random inputs, the
boosted estimate of a single pair by walking the cell centres by hand, and W₁ in one dimension
by the closed form ∫|F − G|."""

import itertools
import math

import numpy as np
import pytest

from companion.errors import CompanionError
from companion.papers import w1_boosting as paper
from companion.papers.w1_boosting import method as m


def _pair(n, d=2, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, d))
    y = np.clip(x + scale * rng.standard_normal((n, d)), 0, 1)
    return np.full(n, 1 / n), x, np.full(n, 1 / n), y


@pytest.mark.parametrize("seed", range(3))
def test_exact_w1_is_the_best_permutation(seed):
    a, x, b, y = _pair(6, seed=seed, scale=0.3)
    best = min(
        np.mean([np.linalg.norm(x[i] - y[p]) for i, p in enumerate(perm)])
        for perm in itertools.permutations(range(6))
    )
    assert m.exact_w1(a, x, b, y) == pytest.approx(best, rel=1e-12)


def test_exact_w1_in_one_dimension_is_the_area_between_cdfs():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 1, (30, 1)), rng.uniform(0, 1, (20, 1))
    a, b = np.full(30, 1 / 30), np.full(20, 1 / 20)
    grid = np.sort(np.concatenate([x[:, 0], y[:, 0]]))
    f = np.searchsorted(np.sort(x[:, 0]), grid[:-1], side="right") / 30
    g = np.searchsorted(np.sort(y[:, 0]), grid[:-1], side="right") / 20
    assert m.exact_w1(a, x, b, y) == pytest.approx(np.sum(np.abs(f - g) * np.diff(grid)))


def test_black_box_cost_is_its_lifted_plan_by_a_loop():
    a, x, b, y = _pair(25, seed=1, scale=0.05)
    eps = 0.3
    side = eps / (2 * math.sqrt(2))
    cx = [tuple(np.floor(p / side).astype(int)) for p in x]
    cy = [tuple(np.floor(p / side).astype(int)) for p in y]
    ux, uy = sorted(set(cx)), sorted(set(cy))
    mu = np.array([sum(a[i] for i in range(25) if cx[i] == c) for c in ux])
    nu = np.array([sum(b[j] for j in range(25) if cy[j] == c) for c in uy])
    centres = lambda cells: (np.array(cells) + 0.5) * side  # noqa: E731
    import ot

    plan = ot.emd(mu, nu, m.cost_matrix(centres(ux), centres(uy)))
    total = 0.0
    for i in range(25):
        for j in range(25):
            p, q = ux.index(cx[i]), uy.index(cy[j])
            total += plan[p, q] * a[i] / mu[p] * b[j] / nu[q] * np.linalg.norm(x[i] - y[j])
    assert m.additive_w1(a, x, b, y, eps).value == pytest.approx(total, rel=1e-10)


@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("seed", range(4))
def test_black_box_error_is_at_most_eps(eps, seed):
    a, x, b, y = _pair(60, seed=seed, scale=10 ** -(seed + 1))
    w = m.exact_w1(a, x, b, y)
    est = m.additive_w1(a, x, b, y, eps).value
    assert w - 1e-12 <= est <= w + eps


def test_control_is_the_black_box_alone_at_eps_over_d():
    a, x, b, y = _pair(50, seed=2, scale=0.01)
    rng = np.random.default_rng(0)
    control = m.boosted_w1(a, x, b, y, 0.2, rng, levels=1).value
    assert control == m.additive_w1(a, x, b, y, 0.1).value


def test_boosted_single_pair_is_the_walk_through_cell_centres():
    x, y = np.array([[0.301, 0.402]]), np.array([[0.3012, 0.4017]])
    a = np.ones(1)
    eps, d = 0.2, 2
    k = m.children_per_side(eps, d)
    origin = -np.random.default_rng(7).uniform(0, 1, d)
    est = m.boosted_w1(a, x, a, y, eps, np.random.default_rng(7))

    def centre(p, level):
        side = 2.0 / k**level
        return origin + (np.floor((p - origin) / side) + 0.5) * side

    level = 0
    while np.all(centre(x[0], level + 1) == centre(y[0], level + 1)):
        level += 1
    split = level + 1  # the first level where x and y sit in different cells
    total = np.linalg.norm(centre(x[0], split) - centre(y[0], split))
    for p in (x[0], y[0]):
        total += np.linalg.norm(p - centre(p, split))
    assert est.levels == split + 1
    assert est.value == pytest.approx(total, rel=1e-9)
    assert est.value >= np.linalg.norm(x[0] - y[0])


def test_boosted_is_zero_on_equal_measures_and_above_w():
    a, x, b, y = _pair(40, seed=4, scale=1e-3)
    assert m.boosted_w1(a, x, a, x, 0.2, np.random.default_rng(0)).value == 0.0
    w = m.exact_w1(a, x, b, y)
    for s in range(5):
        est = m.boosted_w1(a, x, b, y, 0.2, np.random.default_rng(s))
        assert est.value >= w * (1 - 1e-9)
        assert est.largest <= m.children_per_side(0.2, 2) ** 2 + 1


def test_leaf_level_separates_the_signs():
    a, x, b, y = _pair(30, seed=5, scale=1e-4)
    z, mass = m.merge_points(a, x, b, y)
    origin = -np.random.default_rng(0).uniform(0, 1, 2)
    level = m.leaf_level(z, mass, origin, 8, 16)
    ids = m.grid_cells(z, 2.0 / 8**level, origin)
    for cell in np.unique(ids, axis=0):
        signs = np.sign(mass[(ids == cell).all(1)])
        assert len(set(signs)) == 1
    coarser = m.grid_cells(z, 2.0 / 8 ** (level - 1), origin)
    assert any(
        len(set(np.sign(mass[(coarser == c).all(1)]))) == 2 for c in np.unique(coarser, axis=0)
    )


def test_solve_cell_single_source_matches_the_black_box():
    rng = np.random.default_rng(0)
    sinks = rng.uniform(0, 1, (5, 2))
    mass = rng.dirichlet(np.ones(5))
    src = np.array([[0.5, 0.5]])
    direct = m.solve_cell(src, np.ones(1), sinks, mass, 0.1)
    assert direct.calls == 0
    assert direct.value == pytest.approx(m.exact_w1(np.ones(1), src, mass, sinks))


def test_presets_and_validation():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    for cfg in paper.PRESETS.values():
        assert cfg.precision == "64-true"
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(eps=1.5)
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(precision="32-true")


def test_smoke_run_claims_and_roundtrip(tmp_path):
    result = paper.run(paper.PRESETS["smoke"], out_dir=tmp_path)
    report = paper.check_claims(result)
    assert len(report.rows) == 7 and all(i.holds for i in report.invariants)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    again = paper.Result.load(tmp_path / "result.json")
    assert again.rel("boosted") == result.rel("boosted")
    assert result.w == sorted(result.w, reverse=True)


def test_claims_fail_without_the_regime():
    # σ so large that W is not small: the premise fails and the comparisons are not tested
    cfg = paper.PRESETS["smoke"].replace(sigmas=(0.05, 0.1))
    report = paper.check_claims(paper.run(cfg))
    assert not report.rows[0].holds
    assert all(r.verdict.startswith("not tested") for r in report.rows[1:])


@pytest.mark.parametrize("seed", range(3))
def test_snapped_and_worst_case_black_boxes_keep_the_additive_bound(seed):
    a, x, b, y = _pair(40, seed=seed, scale=10 ** -(seed + 2))
    w = m.exact_w1(a, x, b, y)
    assert abs(m.snapped_w1(a, x, b, y, 0.2) - w) <= 0.2 + 1e-12
    assert m.worst_case_w1(a, x, b, y, 0.2).value == pytest.approx(w + 0.2, rel=1e-12)


def test_worst_case_boosting_is_never_below_the_ordinary_one():
    a, x, b, y = _pair(60, seed=6, scale=1e-3)
    for s in range(3):
        plain = m.boosted_w1(a, x, b, y, 0.2, np.random.default_rng(s))
        worst = m.boosted_w1(a, x, b, y, 0.2, np.random.default_rng(s), black_box=m.worst_case_w1)
        assert worst.value >= plain.value - 1e-12
        assert worst.calls == plain.calls
