"""temperature_schedules against independent computations (the official formulas, loops, the
published CIFAR-10-LT class sizes)."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import temperature_schedules as paper
from companion.papers.temperature_schedules.experiment import two_views


def official_nt_xent(x: torch.Tensor, t: float) -> torch.Tensor:
    """The official ``utils.nt_xent``: views interleaved (2k, 2k+1), raw exponentials."""
    n = x.norm(p=2, dim=1, keepdim=True)
    x = (x @ x.t()) / (n * n.t()).clamp(min=1e-8)
    x = torch.exp(x / t)
    idx = torch.arange(x.size()[0])
    idx[::2] += 1
    idx[1::2] -= 1
    x = x[idx]
    x = x.diag() / (x.sum(0) - torch.exp(torch.tensor(1 / t)))
    return -torch.log(x).mean()


def test_cosine_schedule_matches_the_official_line():
    for epoch in range(0, 401, 7):
        official = 0.1 + 0.5 * (1.0 - 0.1) * (1 + torch.cos(torch.tensor(torch.pi * epoch / 200)))
        assert paper.cosine_temperature(epoch, 0.1, 1.0, 200) == pytest.approx(
            official.item(), abs=1e-6
        )


def test_cosine_schedule_endpoints_and_period():
    assert paper.cosine_temperature(0, 0.1, 1.0, 30) == pytest.approx(1.0)
    assert paper.cosine_temperature(30, 0.1, 1.0, 30) == pytest.approx(0.1)
    assert paper.cosine_temperature(15, 0.1, 1.0, 30) == pytest.approx(0.55)
    # the paper's Algorithm 1 writes cos(2π e / T): the same curve with T = 2 t_max
    for e in (3, 17, 44):
        alg1 = (1.0 - 0.1) * (1 + math.cos(2 * math.pi * e / 60)) / 2 + 0.1
        assert paper.cosine_temperature(e, 0.1, 1.0, 30) == pytest.approx(alg1)
        assert paper.cosine_temperature(e + 60, 0.1, 1.0, 30) == pytest.approx(alg1)


def test_temperature_arms_and_bad_names():
    assert paper.temperature_at("0.2", 123) == 0.2
    assert paper.temperature_at("cos", 0, 0.1, 1.0, 5) == pytest.approx(1.0)
    with pytest.raises(CompanionError, match="'warm'.*'cos'"):
        paper.temperature_at("warm", 0)
    with pytest.raises(CompanionError, match="arm"):
        paper.Config(arms=("0.2", "hot", "cos"))
    with pytest.raises(CompanionError, match="unknown dataset 'mnist'; valid: digits_lt"):
        paper.Config(dataset="mnist")


def test_nt_xent_equals_the_official_formula():
    torch.manual_seed(0)
    z_a, z_b = torch.randn(6, 5), torch.randn(6, 5)
    interleaved = torch.stack([z_a, z_b], 1).reshape(12, 5)
    for tau in (0.1, 0.5, 1.0):
        ours = paper.nt_xent(z_a, z_b, torch.tensor(tau))
        # the official form subtracts exp(1/τ) from a sum (cancellation): evaluate it in float64
        official = official_nt_xent(interleaved.double(), tau).item()
        assert ours.item() == pytest.approx(official, rel=1e-5)


def test_negative_weights_are_the_repulsion_in_the_gradient():
    """∂ℓ_i/∂u_i = (−u_p + Σ_k p_ik u_k) / τ: the weights of negative_weights, by autograd."""
    torch.manual_seed(1)
    u = F.normalize(torch.randn(8, 4, dtype=torch.float64), dim=1).requires_grad_()
    tau, i, p = 0.3, 0, 4  # views of image 0: rows 0 and 4
    s = (u @ u.T) / tau
    mask = torch.eye(8, dtype=torch.bool)
    loss_i = -torch.log_softmax(s.masked_fill(mask, float("-inf"))[i], 0)[p]
    (grad,) = torch.autograd.grad(loss_i, u)
    w = paper.negative_weights(u.detach(), tau)
    # only the anchor's own row of s depends on u_i through u_i (the others via u_k · u_i):
    # compare the direct term, the gradient through row i with the other rows held fixed
    u_fixed = u.detach()
    direct = (-u_fixed[p] + (w[i, :, None] * u_fixed).sum(0)) / tau
    a = u_fixed[i].clone().requires_grad_()
    row = torch.cat([u_fixed[:i], a[None], u_fixed[i + 1 :]]) @ a / tau
    row = row.masked_fill(torch.arange(8) == i, float("-inf"))
    (g_row,) = torch.autograd.grad(-torch.log_softmax(row, 0)[p], a)
    torch.testing.assert_close(g_row, direct)
    assert grad.shape == u.shape
    by_loop = torch.zeros(8, 8, dtype=torch.float64)
    for r in range(8):
        e = [math.exp(float(u_fixed[r] @ u_fixed[k]) / tau) if k != r else 0.0 for k in range(8)]
        by_loop[r] = torch.tensor(e) / sum(e)
    torch.testing.assert_close(w, by_loop)


def test_same_class_share_limits():
    torch.manual_seed(2)
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])
    centres = torch.eye(3) * 5
    u = centres[labels] + 0.1 * torch.randn(9, 3)
    # large τ: the push is spread evenly, the share is the same-class fraction of the others
    chance = sum((labels == labels[i]).sum().item() - 1 for i in range(9)) / (9 * 8)
    assert paper.same_class_share(u, labels, 1e4) == pytest.approx(chance, abs=1e-3)
    # small τ: all of it on the nearest negative, here always of the same class
    assert paper.same_class_share(u, labels, 1e-3) == pytest.approx(1.0, abs=1e-6)


def test_uniformity_by_loop():
    torch.manual_seed(3)
    u = torch.randn(7, 3, dtype=torch.float64)
    v = F.normalize(u, dim=1)
    terms = [
        math.exp(-2 * float((v[i] - v[j]).pow(2).sum()))
        for i in range(7)
        for j in range(7)
        if i != j
    ]
    assert paper.uniformity(u) == pytest.approx(math.log(sum(terms) / len(terms)))


def test_long_tail_counts_match_cifar10_lt():
    # CIFAR-10-LT with imbalance 100 (Cui et al. 2019; the SDCLR and paper's setting)
    assert paper.long_tail_counts(5000, 100, 10) == [
        5000,
        2997,
        1796,
        1077,
        645,
        387,
        232,
        139,
        83,
        50,
    ]
    with pytest.raises(CompanionError):
        paper.long_tail_counts(10, 0.5, 10)


def test_long_tail_split_is_disjoint_balanced_and_long_tailed():
    labels = torch.arange(10).repeat(30)
    counts = paper.long_tail_counts(20, 10, 10)
    train, test = paper.long_tail_split(labels, counts, test_per_class=5, seed=1)
    assert not set(train.tolist()) & set(test.tolist())
    assert torch.bincount(labels[train], minlength=10).tolist() == counts
    assert torch.bincount(labels[test], minlength=10).tolist() == [5] * 10
    with pytest.raises(CompanionError, match="class 0"):
        paper.long_tail_split(labels, [40] * 10, test_per_class=0)
    # -1: every image not used for training is a test image
    train, test = paper.long_tail_split(labels, counts, test_per_class=-1, seed=1)
    assert len(train) + len(test) == len(labels) and not set(train.tolist()) & set(test.tolist())
    assert torch.bincount(labels[test], minlength=10).tolist() == [30 - n for n in counts]


def test_per_class_knn_by_brute_force():
    torch.manual_seed(4)
    tx, ty = torch.randn(30, 4), torch.randint(0, 3, (30,))
    qx, qy = torch.randn(12, 4), torch.randint(0, 3, (12,))
    got = paper.per_class_knn(tx, ty, qx, qy, classes=3, k=1)
    cos = F.normalize(qx, dim=1) @ F.normalize(tx, dim=1).T
    pred = ty[cos.argmax(1)]
    for c in range(3):
        rows = qy == c
        assert got[c] == pytest.approx((pred[rows] == c).float().mean().item())


def test_views_depend_on_seed_and_step_only():
    cfg = paper.PRESETS["smoke"].replace(views_per_image=4)
    bank = torch.arange(4 * 5, dtype=torch.float32).view(4, 5, 1, 1, 1)
    rows = torch.tensor([0, 2, 4])
    a1, b1 = two_views(cfg, None, bank, None, rows, step=3)
    a2, b2 = two_views(cfg, None, bank, None, rows, step=3)
    assert torch.equal(a1, a2) and torch.equal(b1, b2)
    assert (a1 != b1).all(), "the two views of an image must differ"
    assert ((a1.flatten() % 5) == rows).all() and ((b1.flatten() % 5) == rows).all()


def test_tiny_run_pairs_arms_and_round_trips(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        arms=("0.5", "cos"),
        baseline="0.5",
        replicates=2,
        hidden=(16,),
        feature_dim=16,
        proj_dim=8,
        epochs=2,
        t_max=1,
        views_per_image=2,
        device="cpu",
    )
    result = paper.run(cfg)
    assert result.arms["cos"].tau[:2] == pytest.approx([1.0, 0.1])
    assert result.arms["0.5"].steps == result.arms["cos"].steps
    assert result.train_counts == paper.long_tail_counts(cfg.n_max, cfg.imbalance, 10)
    assert result.tail == [7, 8, 9]
    # the replicate is another seed: other weights, so other numbers, same steps
    assert len(result.replicates) == 1 and set(result.replicates[0]) == {"0.5", "cos"}
    assert result.replicates[0]["cos"].loss != result.arms["cos"].loss
    assert result.replicates[0]["cos"].steps == result.arms["cos"].steps
    gains = result.paired_gain("balanced_knn")
    assert gains[0] == pytest.approx(
        result.arms["cos"].balanced_knn - result.arms["0.5"].balanced_knn
    )
    result.save(tmp_path / "r.json")
    loaded = paper.Result.load(tmp_path / "r.json")
    assert loaded.arms["cos"].to_dict() == result.arms["cos"].to_dict()
    assert loaded.replicates[0]["0.5"].to_dict() == result.replicates[0]["0.5"].to_dict()
    assert loaded.config == json.loads(json.dumps(result.config))
    report = paper.check_claims(result)
    assert len(report.rows) == 6
    # the pixel reference is the same kNN on the raw images, computed independently here
    xtr, ytr, xte, yte = paper.load_data(result_cfg := paper.Config(**result.config))
    d = torch.cdist(F.normalize(xte.flatten(1), dim=1), F.normalize(xtr.flatten(1), dim=1))
    predicted = ytr[d.argmin(1)]
    by_hand = [float((predicted[yte == c] == c).float().mean()) for c in range(10)]
    assert result_cfg.k == 1 and result.pixel_knn == pytest.approx(by_hand)
    # the pixel share is section 1's share on the raw training images, by hand
    u = F.normalize(xtr.flatten(1).double(), dim=1)
    w = torch.softmax((u @ u.T / result_cfg.tau_min).fill_diagonal_(-float("inf")), dim=1)
    share = float((w * (ytr[:, None] == ytr[None, :])).sum(1).mean())
    assert result.pixel_share_small_tau == pytest.approx(share)


def test_replicate_seeds_never_collide():
    seeds = {paper.replicate_seed(s, r) for s in range(10) for r in range(6)}
    assert len(seeds) == 60


def test_baseline_must_be_a_constant_arm_and_replicates_at_least_two():
    with pytest.raises(CompanionError, match="baseline"):
        paper.Config(arms=("0.1", "cos"))
    with pytest.raises(CompanionError, match="replicates"):
        paper.Config(replicates=1)


def test_paired_interval_matches_a_t_table():
    gains = [0.01, 0.03, -0.01, 0.02, 0.00]
    mean, low, high = paper.paired_interval(gains)
    sd = math.sqrt(sum((g - 0.01) ** 2 for g in gains) / 4)
    assert mean == pytest.approx(0.01)
    assert high - mean == pytest.approx(2.776445 * sd / math.sqrt(5), rel=1e-5)  # t(0.975, 4)
    assert mean - low == pytest.approx(high - mean)


def _fake_result(gains, uniform_gap=1.0, pixels=0.5, per_class=None):
    def arm(name, knn, uniformity):
        return paper.ArmResult(
            arm=name,
            tau=[0.2],
            loss=[1.0],
            per_class_knn=(per_class or {}).get(name, [knn] * 10),
            balanced_knn=knn,
            tail_knn=knn,
            uniformity=uniformity,
            share_small_tau=0.8,
            share_large_tau=0.2,
            steps=10,
            seconds=0.0,
        )

    pairs = [{"0.2": arm("0.2", 0.8, -3.0), "cos": arm("cos", 0.8 + g, -2.5)} for g in gains]
    arms = {
        "0.2": pairs[0]["0.2"],
        "1.0": arm("1.0", 0.8, -3.0 + uniform_gap),
        "cos": pairs[0]["cos"],
    }
    cfg = paper.PRESETS["smoke"].to_dict()
    counts = [100, 90, 80, 60, 40, 30, 20, 10, 8, 5]
    return paper.Result(cfg, counts, [1] * 10, [7, 8, 9], arms, pairs[1:], [pixels] * 10, 0.5)


def test_the_dial_row_is_counted_against_the_raw_pixels():
    dial = "after training, small τ pushes mostly"
    trained = _fake_result([0.02, 0.03, 0.025])  # trained share 0.8 at τ_min, pixels 0.5
    assert next(c for c in paper.check_claims(trained).rows if c.claim.startswith(dial)).holds
    trained.pixel_share_small_tau = 0.7  # training moved the dial less than the margin
    assert not next(c for c in paper.check_claims(trained).rows if c.claim.startswith(dial)).holds


def test_the_gain_rows_can_fail_and_hold():
    rows = lambda r: {c.claim[:40]: c for c in paper.check_claims(r).rows}  # noqa: E731
    consistent = rows(_fake_result([0.02, 0.03, 0.025, 0.02, 0.03]))
    noisy = rows(_fake_result([0.03, -0.02, 0.01, -0.01, 0.0]))
    key = "the cosine schedule improves class-balan"
    assert consistent[key].holds and not noisy[key].holds
    # τ that does not change the representation: the gain rows are not tested
    good = [0.02, 0.03, 0.025, 0.02, 0.03]
    flat = paper.check_claims(_fake_result(good, uniform_gap=0.0))
    assert [c.premise_ok for c in flat.rows] == [True] * 4 + [False, False]
    # features no better than the raw pixels: not tested either
    pixel = rows(_fake_result(good, pixels=0.795))
    assert not pixel["premise: training learns more than the pixels"[:40]].holds
    assert pixel[key].premise_ok is False
    # no trade-off: the small τ is better on the head classes than the large one
    head_better = [0.9, 0.9, 0.9] + [0.8] * 7
    no_tradeoff = rows(_fake_result(good, per_class={"0.2": head_better}))
    assert not no_tradeoff["premise: the trade-off the schedule exploits"[:40]].holds
    assert no_tradeoff[key].premise_ok is False and consistent[key].premise_ok


def test_arm_colours_are_distinct():
    arms = ("0.1", "0.2", "0.5", "1.0", "cos")
    assert len({paper.arm_colour(a) for a in arms}) == len(arms)


def test_figures_draw_from_a_result():
    import matplotlib.pyplot as plt

    result = _fake_result([0.02, -0.01, 0.0])
    for fig in (*paper.figures(result).values(), paper.plot_scale({"a": result, "b": result})):
        assert fig.axes
        plt.close(fig)


def _notebook_cell(marker):
    from pathlib import Path

    nb = json.loads(Path("notebooks/temperature_schedules.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def _exercise_env(**names):
    import numpy as np

    from companion.core import check, check_close, report_ok

    env = {"paper": paper, "torch": torch, "math": math, "np": np}
    env |= {"check": check, "check_close": check_close, "report_ok": report_ok}
    return env | names


_FAILS = (AssertionError, RuntimeError, TypeError, AttributeError, ValueError, ZeroDivisionError)


def _exercise_fails():
    from companion.core.exercises import ExerciseError

    return (ExerciseError, *_FAILS)


def test_exercise_1_check_fails_on_trivial_schedules():
    cell = _notebook_cell('report_ok("cosine schedule")')
    fails = _exercise_fails()

    def reference(e, lo, hi, t):  # epochs from 1, full period t
        return lo + 0.5 * (hi - lo) * (1 + math.cos(2 * math.pi * (e - 1) / t))

    exec(cell, _exercise_env(my_tau=reference))
    for planted in (
        paper.cosine_temperature,  # the function shown in section 2 (epochs from 0, t_max)
        lambda e, lo, hi, t: paper.cosine_temperature(e, lo, hi, t / 2),  # from 0, period t
        lambda e, lo, hi, t: paper.cosine_temperature(e - 1, lo, hi, t),  # from 1, half-period t
        lambda e, lo, hi, t: None,
        lambda e, lo, hi, t: 0.0,
        lambda e, lo, hi, t: 0.2,  # a constant τ
        lambda e, lo, hi, t: hi - (hi - lo) * (e % t) / t,  # a linear saw
        lambda e, lo, hi, t: lo + 0.5 * (hi - lo) * (1 - math.cos(math.pi * e / t)),  # from τ_min
        lambda e, lo, hi, t: lo + (hi - lo) * (1 + math.cos(math.pi * e / t)),  # no ½
        lambda e, lo, hi, t: lo + 0.5 * (hi - lo) * (1 + math.cos(2 * math.pi * e / t)),  # period
    ):
        with pytest.raises(fails):
            exec(cell, _exercise_env(my_tau=planted))


def _schedule_run(rising: bool = True):
    """A stand-in result: the schedule arm's τ per epoch and a loss above the floor that rises
    (or falls) with τ."""
    import types

    cfg = types.SimpleNamespace(tau_min=0.1, tau_max=1.0, t_max=10, batch_size=128)
    tau = [paper.cosine_temperature(e, 0.1, 1.0, 10) for e in range(60)]
    floor = [math.log1p(254 * math.exp(-2 / t)) for t in tau]
    if rising:
        loss = [f + 0.5 + 0.3 * t for f, t in zip(floor, tau)]
    else:  # the loss falls as τ rises, staying above the floor
        loss = [5.0 - 0.5 * t for t in tau]
    arm = types.SimpleNamespace(tau=tau, loss=loss)
    return cfg, types.SimpleNamespace(arms={"cos": arm})


def test_exercise_2_check_fails_on_trivial_floors_and_predictions():
    cell = _notebook_cell('report_ok("loss floor")')
    fails = _exercise_fails()
    cfg, result = _schedule_run()

    def floor(tau, n):
        return math.log1p(n * math.exp(-2 / tau))

    def run_cell(loss_floor, predicted_sign, res=result):
        exec(
            cell,
            _exercise_env(
                cfg=cfg, result=res, loss_floor=loss_floor, predicted_sign=predicted_sign
            ),
        )

    run_cell(floor, 1)
    run_cell(floor, -1, _schedule_run(rising=False)[1])  # the sign is read from the run
    measured = result.arms["cos"].loss
    for planted_floor in (
        lambda tau, n: None,
        lambda tau, n: 0.0,  # zeros: a lower bound, but not the floor
        lambda tau, n: 1.0,
        lambda tau, n: measured[0],  # the measurement copied
        lambda tau, n: math.log1p(n * math.exp(-1 / tau)),  # negatives at 0, not at -1
        lambda tau, n: math.log(n + 1),  # the loss of a uniform embedding
        lambda tau, n: math.log1p(n * math.exp(-2 / tau)) + 0.1,
    ):
        with pytest.raises(fails):
            run_cell(planted_floor, 1)
    for planted_sign in (None, 0, -1, 0.5, "+1"):
        with pytest.raises(fails):
            run_cell(floor, planted_sign)


def test_exercise_3_check_fails_on_trivial_shares():
    cell = _notebook_cell('report_ok("tail share")')
    fails = _exercise_fails()
    cfg = paper.PRESETS["smoke"]
    train_x, train_y, _, _ = paper.load_data(cfg)
    pixels = train_x.flatten(1)
    counts = torch.bincount(train_y, minlength=10)
    tail = counts.argsort(descending=True, stable=True)[-cfg.tail_classes :].tolist()
    import types

    result = types.SimpleNamespace(tail=sorted(tail))

    def tail_share(tau):
        w = paper.negative_weights(F.normalize(pixels.double(), dim=1), tau)
        per_anchor = (w * (train_y[:, None] == train_y[None, :])).sum(1)
        return float(per_anchor[torch.isin(train_y, torch.tensor(result.tail))].mean())

    def run_cell(small, large):
        env = _exercise_env(cfg=cfg, result=result, pixels=pixels, train_y=train_y)
        exec(cell, env | {"counts": counts, "small": small, "large": large})

    run_cell(tail_share(cfg.tau_min), tail_share(cfg.tau_max))
    everyone = paper.same_class_share(pixels, train_y, cfg.tau_min)  # all anchors, not the tail
    for small, large in (
        (None, None),
        (0.0, 0.0),
        (1.0, 0.5),
        (everyone, paper.same_class_share(pixels, train_y, cfg.tau_max)),
        (tail_share(cfg.tau_max), tail_share(cfg.tau_min)),  # the two temperatures swapped
        (tail_share(cfg.tau_min), 0.0),  # a τ_max share that is merely smaller
        (tail_share(cfg.tau_min), tail_share(cfg.tau_min) / 2),
        (tail_share(cfg.tau_min), paper.same_class_share(pixels, train_y, cfg.tau_max)),
    ):
        with pytest.raises(fails):
            run_cell(small, large)
