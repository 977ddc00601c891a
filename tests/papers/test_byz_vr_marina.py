"""byz_vr_marina against independent computations (autograd, scipy, loops, enumeration)."""

import itertools
import math

import pytest
import torch
from torch import nn

from companion.core import make_fabric
from companion.core.federated import bit_flip, mean, run_rounds
from companion.errors import CompanionError
from companion.papers import byz_vr_marina as paper


def _problem(m=40, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(m, d, generator=g)
    y = (torch.rand(m, generator=g) < 0.5).float()
    return X, y


def test_gradient_matches_autograd():
    X, y = _problem()
    w = torch.randn(6, dtype=torch.float64, requires_grad=True)
    loss = paper.logistic_loss(w, X.double(), y.double(), 0.01)
    (auto,) = torch.autograd.grad(loss, w)
    closed = paper.logistic_grad(w.detach(), X.double(), y.double(), 0.01)
    assert torch.allclose(auto, closed, atol=1e-12)


def test_optimum_matches_scipy_lbfgs():
    from scipy.optimize import minimize

    X, y = _problem()
    Xd, yd = X.double(), y.double()
    w_star, f_star = paper.solve_optimum(X, y, 0.05)
    assert paper.logistic_grad(w_star, Xd, yd, 0.05).norm() < 1e-12

    def fun(w):
        w = torch.from_numpy(w)
        return float(paper.logistic_loss(w, Xd, yd, 0.05)), paper.logistic_grad(
            w, Xd, yd, 0.05
        ).numpy()

    res = minimize(
        fun,
        torch.zeros(6).double().numpy(),
        jac=True,
        method="L-BFGS-B",
        options=dict(gtol=1e-12, ftol=1e-15),
    )
    assert f_star == pytest.approx(res.fun, abs=1e-10)
    assert f_star <= res.fun + 1e-14


def test_smoothness_bounds_the_hessian():
    X, y = _problem()
    w = torch.randn(6, dtype=torch.float64)
    p = torch.sigmoid(X.double() @ w)
    hessian = (X.double().T * (p * (1 - p))) @ X.double() / len(y) + 0.01 * torch.eye(6)
    assert torch.linalg.eigvalsh(hessian).max() <= paper.smoothness(X, 0.01) + 1e-12


def test_rand_k_is_unbiased_with_variance_omega_by_enumeration():
    # every k-subset is equally likely: enumerate them for the exact mean and variance
    x = torch.tensor([1.0, -2.0, 3.0, 0.5, -1.5], dtype=torch.float64)
    d, k = 5, 2
    outs = []
    for keep in itertools.combinations(range(d), k):
        q = torch.zeros(d, dtype=torch.float64)
        q[list(keep)] = x[list(keep)] * d / k
        outs.append(q)
    outs = torch.stack(outs)
    assert torch.allclose(outs.mean(0), x)
    variance = (outs - x).square().sum(1).mean()
    assert variance == pytest.approx(paper.rand_k_omega(d, k) * x.square().sum().item())
    # the implementation draws one of those subsets, uniformly
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([paper.rand_k(x, k, g) for _ in range(2000)])
    assert ((draws != 0).sum(1) == k).all()
    kept = draws[0] != 0
    assert torch.allclose(draws[0][kept], x[kept] * d / k)
    frequency = (draws != 0).double().mean(0)  # each coordinate kept with probability k/d
    assert torch.allclose(frequency, torch.full((d,), k / d, dtype=torch.float64), atol=0.04)


def test_rand_k_rejects_bad_k():
    with pytest.raises(CompanionError, match="1 <= k <= d"):
        paper.rand_k(torch.ones(4), 5, torch.Generator())


def test_message_bits_and_probability():
    assert paper.message_bits(62, None) == 62 * 32
    assert paper.message_bits(62, 7) == 7 * (32 + 6)
    assert paper.marina_probability(32, 3200, paper.rand_k_omega(100, 10)) == 0.01
    assert paper.marina_probability(64, 100, paper.rand_k_omega(100, 10)) == 0.1


def test_marina_worker_sends_g_plus_difference_on_the_same_samples():
    X, y = _problem()
    server = paper.MarinaServer(lr=0.1, p=0.0, seed=0)
    server.g = torch.randn(6)
    server.x_prev = torch.randn(6)
    worker = paper.MarinaWorker(X, y, 0.01, 8, server=server)
    model = nn.Linear(6, 1, bias=False)
    x_new = model.weight.detach().view(-1).clone()
    update = worker(model, 3, torch.Generator().manual_seed(5))
    rows = torch.randint(40, (8,), generator=torch.Generator().manual_seed(5))
    # per-sample loop with autograd: Δ̂ = (1/b) Σ_j ∇f_j(x_new) − ∇f_j(x_prev)
    delta = torch.zeros(6, dtype=torch.float64)
    for j in rows:
        for point, sign in ((x_new, 1), (server.x_prev, -1)):
            w = point.double().clone().requires_grad_(True)
            loss = paper.logistic_loss(w, X[j : j + 1].double(), y[j : j + 1].double(), 0.01)
            delta += sign * torch.autograd.grad(loss, w)[0] / len(rows)
    assert torch.allclose(update.message.double(), server.g.double() + delta, atol=1e-5)
    assert update.info["bits"] == 6 * 32


def test_coin_is_shared_and_round_zero_is_full():
    server = paper.MarinaServer(lr=0.1, p=0.2, seed=3)
    assert server.coin(0)
    coins = [server.coin(r) for r in range(1, 3001)]
    again = paper.MarinaServer(lr=0.1, p=0.2, seed=3)
    assert coins == [again.coin(r) for r in range(1, 3001)]
    assert sum(coins) / 3000 == pytest.approx(0.2, abs=0.03)


def _run(
    method,
    rounds,
    attack=mean,
    aggregator="mean",
    seed=0,
    folder=None,
    resume=False,
    checkpoint_every=0,
    p=1.0,
    workers=3,
):
    X, y = _problem(seed=1)
    cfg = paper.PRESETS["smoke"].replace(
        aggregator=aggregator,
        batch_size=8,
        lr=0.3,
        lr_randk=0.2,
        workers=workers,
        byzantine=1,
        p=p,
    )
    attack_name = "none" if attack is mean else "bit_flip"
    clients, byz, server, agg = paper.build_arm(cfg, X, y, attack_name, method, 2, p)
    model = nn.Linear(6, 1, bias=False)
    nn.init.zeros_(model.weight)
    history = run_rounds(
        make_fabric(cfg.replace(device="cpu")),
        model,
        clients,
        rounds=rounds,
        seed=seed,
        byzantine=byz,
        attack=bit_flip if attack is not mean else (lambda h, b, g: b),
        aggregator=agg,
        server=server,
        checkpoint=folder,
        checkpoint_every=checkpoint_every,
        resume=resume,
    )
    return model.weight.detach().view(-1).clone(), history, (X, y)


def test_marina_with_p_one_is_gradient_descent():
    # coin always 1: every worker sends ∇f(x); the aggregate of identical vectors is ∇f(x)
    w, _, (X, y) = _run("marina", 5, aggregator="coordinate_median", p=1.0)
    v = torch.zeros(6)
    for _ in range(5):
        v = v - 0.3 * paper.logistic_grad(v, X, y, 0.01)
    assert torch.allclose(w, v, atol=1e-6)


@pytest.mark.parametrize("aggregator", ["coordinate_median", "mean"])
def test_full_gradient_rounds_are_immune_to_bit_flip_under_the_median(aggregator):
    # 4 honest workers send the same ∇f(x), one sends −∇f(x); buckets of 2 give three means,
    # {∇f, ∇f, 0} or {∇f, ∇f, −∇f}: their coordinate median is ∇f, so this is exact GD; the
    # mean is pulled to (3/5)∇f and follows another path
    w, _, (X, y) = _run("marina", 4, attack=bit_flip, aggregator=aggregator, p=1.0, workers=5)
    v = torch.zeros(6)
    for _ in range(4):
        v = v - 0.3 * paper.logistic_grad(v, X, y, 0.01)
    assert torch.allclose(w, v, atol=1e-6) == (aggregator == "coordinate_median")


def test_momentum_worker_is_an_exponential_average():
    X, y = _problem()
    worker = paper.MomentumWorker(X, y, 0.01, 8, beta=0.9)
    model = nn.Linear(6, 1, bias=False)
    w = model.weight.detach().view(-1)
    expected = None
    for r in range(3):
        update = worker(model, r, torch.Generator().manual_seed(r))
        rows = torch.randint(40, (8,), generator=torch.Generator().manual_seed(r))
        grad = paper.logistic_grad(w, X[rows], y[rows], 0.01)
        expected = grad if expected is None else 0.9 * expected + 0.1 * grad
        assert torch.allclose(update.message, expected, atol=1e-6)


@pytest.mark.parametrize("method", ["marina+randk", "sgdm"])
def test_interrupted_arm_resumes_to_the_same_point(method, tmp_path):
    full, _, _ = _run(method, 8, attack=bit_flip, aggregator="coordinate_median", p=0.3)
    ckpt = tmp_path / "ckpt.ckpt"
    _run(method, 4, attack=bit_flip, aggregator="coordinate_median", p=0.3, folder=ckpt)
    resumed, history, _ = _run(
        method,
        8,
        attack=bit_flip,
        aggregator="coordinate_median",
        p=0.3,
        folder=ckpt,
        resume=True,
    )
    assert history.steps("participants") == list(range(8))
    assert torch.equal(full, resumed)


def test_read_libsvm(tmp_path):
    path = tmp_path / "a9a"
    path.write_text("-1 1:1 3:1\n+1 2:1 3:0.5\n")
    X, y = paper.read_libsvm(path, features=4)
    assert X.tolist() == [[1, 0, 1, 0], [0, 1, 0.5, 0]]
    assert y.tolist() == [0.0, 1.0]


def test_bad_options_get_clear_errors():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="unknown method 'adam'.*marina"):
        cfg.replace(methods=("adam",))
    with pytest.raises(CompanionError, match="unknown attack 'gauss'.*alie"):
        cfg.replace(attacks=("gauss",))
    with pytest.raises(CompanionError, match="unknown aggregator 'median'.*coordinate_median"):
        cfg.replace(aggregator="median")
    with pytest.raises(CompanionError, match="krum needs"):
        cfg.replace(aggregator="krum")


def test_smoke_run_is_reproducible_and_counts_bits():
    cfg = paper.PRESETS["smoke"].replace(
        attacks=("bit_flip",), methods=("sgd", "marina"), rounds=40
    )
    a, b = paper.run(cfg), paper.run(cfg)
    assert a.arms["bit_flip/marina"].gap == b.arms["bit_flip/marina"].gap
    assert a.d == 62 and a.m == 1797 and a.k == math.ceil(0.1 * 62)
    assert a.arm("bit_flip", "marina").bits[-1] == cfg.rounds * 62 * 32


def test_alie_z_matches_the_official_formula_computed_with_scipy():
    from scipy.stats import norm

    for n, f in ((5, 1), (20, 5), (25, 5), (10, 2)):
        s = math.floor(n / 2 + 1) - f
        assert paper.alie_z(n, f) == pytest.approx(norm.ppf((n - f - s) / (n - f)), abs=1e-9)
    assert paper.alie_z(5, 1) == pytest.approx(0.0, abs=1e-12)


def test_coin_and_bucketing_streams_never_coincide_with_a_worker_stream():
    from companion.core.federated import round_generator
    from companion.papers.byz_vr_marina.method import seed_of

    for seed, r in itertools.product(range(3), range(1, 30)):
        ours = {
            torch.Generator().manual_seed(seed_of(seed, r, salt)).initial_seed()
            for salt in (-7, -3)
        }
        workers = {round_generator(seed, r, c).initial_seed() for c in range(-1, 64)}
        assert not ours & workers
    with pytest.raises(CompanionError, match="salt"):
        seed_of(0, 1, 3)


def test_each_arm_keeps_its_own_coin_probability_and_counts_its_sample_gradients():
    cfg = paper.PRESETS["smoke"].replace(
        rounds=12, methods=("sgd", "marina", "marina+randk"), evaluate_every=4, batch_size=16
    )
    result = paper.run(cfg)
    d, m, k = result.d, result.m, result.k
    for attack in cfg.attacks:
        full, randk, sgd = (result.arm(attack, x) for x in ("marina", "marina+randk", "sgd"))
        assert full.p == pytest.approx(min(16 / m, 1.0))
        assert randk.p == pytest.approx(min(16 / m, k / d))
        assert sgd.p == 0.0
        assert sgd.gradients == [16.0 * r for r in sgd.rounds]
        n_full = full.full_gradient_rounds
        assert full.gradients[-1] == pytest.approx(m * n_full + 2 * 16 * (12 - n_full))
