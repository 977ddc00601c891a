"""cider against independent computations (the official per-sample loop, loops over classes
and pairs, brute-force nearest neighbours, a hand-built geometry)."""

import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import cider as paper


def _sphere(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


def _official_ema(prototypes, z, labels, alpha):
    """``DisLoss.forward``'s loop, sample by sample in batch order (in place, as the code)."""
    mu = prototypes.clone()
    for j in range(len(z)):
        c = int(labels[j])
        mu[c] = F.normalize(mu[c] * alpha + z[j] * (1 - alpha), dim=0)
    return mu


def test_ema_update_equals_the_official_sequential_loop_values_and_gradients():
    mu0 = _sphere(5, 7, 0)
    labels = torch.tensor([3, 0, 3, 3, 1, 4, 0, 3, 1, 1, 3, 0, 2])
    z1 = _sphere(len(labels), 7, 1).requires_grad_()
    z2 = z1.detach().clone().requires_grad_()
    fast = paper.ema_update(mu0, z1, labels, 0.8)
    slow = _official_ema(mu0, z2, labels, 0.8)
    torch.testing.assert_close(fast, slow, atol=1e-12, rtol=0)
    # the dispersion gradient reaches z through the update, identically
    paper.dispersion_loss(fast, 0.1).backward()
    paper.dispersion_loss(slow, 0.1).backward()
    torch.testing.assert_close(z1.grad, z2.grad, atol=1e-10, rtol=1e-8)
    assert z1.grad.abs().sum() > 0


def test_ema_update_leaves_absent_classes_and_alpha_zero_takes_last_sample():
    mu0 = _sphere(4, 3, 2)
    z = _sphere(3, 3, 3)
    labels = torch.tensor([1, 1, 2])
    out = paper.ema_update(mu0, z, labels, 0.0)
    torch.testing.assert_close(out[[0, 3]], mu0[[0, 3]], atol=0, rtol=0)
    torch.testing.assert_close(out[1], z[1], atol=1e-12, rtol=0)  # last class-1 sample
    torch.testing.assert_close(out[2], z[2], atol=1e-12, rtol=0)
    with pytest.raises(CompanionError, match="alpha"):
        paper.ema_update(mu0, z, labels, 1.0)


def test_dispersion_loss_matches_a_loop_and_the_official_masked_form():
    mu = _sphere(6, 4, 4)
    tau = 0.1
    loop = 0.0
    for i in range(6):
        loop += math.log(sum(math.exp(mu[i] @ mu[j] / tau) for j in range(6) if j != i) / 5)
    loop /= 6
    assert paper.dispersion_loss(mu, tau).item() == pytest.approx(loop, rel=1e-10)
    # DisLoss: mask * exp(logits), summed, divided by the mask's count
    logits = mu @ mu.T / tau
    mask = 1 - torch.eye(6, dtype=mu.dtype)
    official = torch.log((mask * logits.exp()).sum(1) / mask.sum(1)).mean()
    assert paper.dispersion_loss(mu, tau).item() == pytest.approx(official.item(), rel=1e-10)


def test_dispersion_loss_is_lowest_for_a_regular_simplex():
    # C = 4 points of a regular simplex in 3-D (tetrahedron): pairwise cosine −1/3
    simplex = F.normalize(
        torch.tensor([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=torch.float64),
        dim=1,
    )
    expected = 1 / 0.1 * (-1 / 3)  # every pair has the same cosine: log(mean exp) = cos/τ
    assert paper.dispersion_loss(simplex, 0.1).item() == pytest.approx(expected, rel=1e-12)
    for seed in range(5):
        assert paper.dispersion_loss(_sphere(4, 3, seed + 10), 0.1) > expected
    angle = math.degrees(math.acos(-1 / 3))
    assert paper.dispersion_degrees(simplex) == pytest.approx(angle, rel=1e-9)


def test_compactness_loss_is_the_scaled_cross_entropy_over_prototypes():
    mu, z = _sphere(5, 6, 5), _sphere(9, 6, 6)
    labels = torch.tensor([0, 1, 2, 3, 4, 0, 1, 2, 3])
    tau = 0.1
    total = 0.0
    for n in range(9):
        logits = [float(z[n] @ mu[c]) / tau for c in range(5)]
        norm = math.log(sum(math.exp(v) for v in logits))
        total += -(logits[labels[n]] - norm)
    expected = tau / 0.07 * total / 9  # CompLoss keeps SupCon's base temperature 0.07
    assert paper.compactness_loss(z, mu, labels, tau).item() == pytest.approx(expected, rel=1e-10)


def test_supcon_loss_matches_a_loop_over_anchors_and_positives():
    z1, z2 = _sphere(6, 5, 7), _sphere(6, 5, 8)
    labels = torch.tensor([0, 1, 0, 2, 1, 0])
    tau = 0.2
    u, y = torch.cat([z1, z2]), torch.cat([labels, labels])
    total = 0.0
    for i in range(12):
        denom = sum(math.exp(float(u[i] @ u[k]) / tau) for k in range(12) if k != i)
        pos = [p for p in range(12) if p != i and y[p] == y[i]]
        total += -sum(float(u[i] @ u[p]) / tau - math.log(denom) for p in pos) / len(pos)
    expected = tau / 0.07 * total / 12
    assert paper.supcon_loss(z1, z2, labels, tau).item() == pytest.approx(expected, rel=1e-10)


def test_knn_score_is_minus_squared_distance_to_the_kth_neighbour_by_brute_force():
    g = torch.Generator().manual_seed(9)
    bank, queries = torch.randn(30, 4, generator=g), torch.randn(7, 4, generator=g)
    scores = paper.knn_score(bank, queries, k=5)
    b, q = F.normalize(bank, dim=1), F.normalize(queries, dim=1)
    for i in range(7):
        d2 = sorted(float(((q[i] - b[j]) ** 2).sum()) for j in range(30))
        assert scores[i].item() == pytest.approx(-d2[4], abs=1e-5)
    with pytest.raises(CompanionError, match="k must lie"):
        paper.knn_score(bank, queries, k=31)


def test_init_prototypes_are_normalised_class_means_and_angles_by_hand():
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, 0.0]])
    labels = torch.tensor([0, 0, 1, 1])
    mu = paper.init_prototypes(z, labels, 2)
    s = 1 / math.sqrt(2)
    torch.testing.assert_close(mu, torch.tensor([[s, s], [-1.0, 0.0]]))
    assert paper.dispersion_degrees(mu) == pytest.approx(135.0, abs=1e-4)
    assert paper.compactness_degrees(z, labels, mu) == pytest.approx(22.5, abs=1e-4)
    with pytest.raises(CompanionError, match="class"):
        paper.init_prototypes(z, labels, 3)


def test_cider_loss_combines_both_terms_and_returns_unit_prototypes():
    mu0 = _sphere(3, 4, 11).float()
    z = _sphere(8, 4, 12).float().requires_grad_()
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    loss, new_mu, parts = paper.cider_loss(z, labels, mu0, alpha=0.9, temperature=0.1, w=2.0)
    assert loss.item() == pytest.approx(2.0 * parts["comp"] + parts["dis"], rel=1e-5)
    assert not new_mu.requires_grad
    torch.testing.assert_close(new_mu.norm(dim=1), torch.ones(3))
    loss.backward()
    assert z.grad is not None and z.grad.abs().sum() > 0


def test_ood_sets_have_the_id_size_and_shuffled_keeps_each_images_pixels():
    g = torch.Generator().manual_seed(13)
    id_test, held = torch.rand(10, 1, 4, 4, generator=g), torch.rand(25, 1, 4, 4, generator=g)
    sets = paper.ood_sets(id_test, held, 0.3, 0.2, seed=0)
    assert all(len(x) == 10 for x in sets.values())
    torch.testing.assert_close(
        sets["shuffled"].flatten(1).sort(dim=1).values, id_test.flatten(1).sort(dim=1).values
    )
    assert not torch.equal(sets["shuffled"], id_test)
    assert sets["noise"].min() >= 0 and sets["noise"].max() <= 1


def test_bad_options_name_the_valid_choices():
    with pytest.raises(CompanionError, match="valid: cider, supcon, ce"):
        paper.PRESETS["smoke"].replace(methods=("cider", "arcface"))
    with pytest.raises(CompanionError, match="valid: digits, cifar10"):
        paper.PRESETS["smoke"].replace(dataset="svhn")


def test_smoke_run_is_reproducible_and_claims_can_be_checked(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(device="cpu", steps=2, log_every=1)
    torch.set_num_threads(1)
    a = paper.run(cfg, out_dir=tmp_path)
    again = paper.run(cfg.replace(methods=("cider",))).arms["cider"]
    assert again.loss == a.arms["cider"].loss and again.fpr95 == a.arms["cider"].fpr95
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.arms["ce"].auroc == a.arms["ce"].auroc
    report = paper.check_claims(loaded)
    assert len(report.rows) == 6 and str(report).splitlines()[-1].startswith("claims hold: ")
    assert all(inv.holds for inv in report.invariants)


def test_energy_score_is_logsumexp_of_the_logits_by_hand():
    logits = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    expected = [math.log(math.e + math.e**2 + math.e**3), math.log(3.0)]
    torch.testing.assert_close(paper.energy_score(logits), torch.tensor(expected))
    # at temperature T: T · log Σ exp(l / T)
    t2 = 2 * math.log(sum(math.exp(v / 2) for v in (1.0, 2.0, 3.0)))
    assert paper.energy_score(logits, 2.0)[0].item() == pytest.approx(t2, rel=1e-6)


def _arm(method, fpr, roc, compactness, msp=None, energy=None):
    def both(v):
        return None if v is None else {"mean": v}

    return paper.ArmResult(
        method=method,
        loss_steps=[],
        loss=[],
        fpr95={"mean": fpr},
        auroc={"mean": roc},
        msp_fpr95=both(msp and msp[0]),
        msp_auroc=both(msp and msp[1]),
        id_accuracy=1.0,
        dispersion=100.0 if method == "cider" else 70.0,
        compactness=compactness,
        dispersion_h=80.0,
        compactness_h=25.0,
        ema_dispersion=None,
        ema_norm_error=0.0,
        prototype_cos=[],
        scores={},
        seconds=0.0,
        energy_fpr95=both(energy and energy[0]),
        energy_auroc=both(energy and energy[1]),
    )


def _result(cider_compactness, ce_knn=(0.01, 0.999)):
    sizes = {"id_train": 10, "id_test": 5, "near": 5, "noise": 5, "shuffled": 5}
    arms = {
        "cider": _arm("cider", 0.10, 0.98, cider_compactness),
        "supcon": _arm("supcon", 0.20, 0.96, 4.0),
        "ce": _arm("ce", *ce_knn, 25.0, msp=(0.30, 0.95), energy=(0.25, 0.97)),
    }
    return paper.CiderResult(config={}, sizes=sizes, arms=arms)


def test_compactness_and_detection_are_counted_apart_and_ce_knn_is_only_a_reference():
    compact = paper.check_claims(_result(paper.claims.COMPACT - 1))
    # CE + KNN (0.01) beats CIDER but is not one of the paper's CE scores: not counted
    assert [r.holds for r in compact.rows] == [True] * 6
    assert "energy" in compact.rows[3].measured and "0.250" in compact.rows[3].measured
    assert "reference, not counted" in compact.note
    loose = paper.check_claims(_result(paper.claims.COMPACT + 1))
    # loose classes fail the compactness row; the detection rows are still counted as measured
    assert not loose.rows[1].holds and all(r.premise_ok for r in loose.rows)
    assert [r.holds for r in loose.rows[2:]] == [True] * 4
    assert loose.n_hold == 5


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/cider.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def test_exercise_1_check_accepts_the_loss_and_refuses_copies_and_planted_answers():
    from companion.core.exercises import ExerciseError

    source = _notebook_cell('report_ok("dispersion loss")')

    def run_check(answer):
        exec(source, dict(paper=paper, torch=torch, F=F, math=math, my_dispersion=answer))

    def own(mu, tau):  # an independent correct answer (not the package's function)
        logits = mu @ mu.T / tau
        logits = logits.masked_fill(torch.eye(len(mu), dtype=torch.bool), float("-inf"))
        return (torch.logsumexp(logits, dim=1) - math.log(len(mu) - 1)).mean()

    run_check(own)
    planted = (
        paper.dispersion_loss,  # a copy by reference
        lambda mu, tau: torch.tensor(0.0),  # a constant
        lambda mu, tau: None,
        lambda mu, tau: -own(mu, tau),  # wrong sign
        lambda mu, tau: own(mu, tau) + math.log(len(mu) - 1),  # log-sum, not log-mean
        lambda mu, tau: own(mu, 1.0),  # temperature ignored
        lambda mu, tau: torch.logsumexp(mu @ mu.T / tau, dim=1).mean() - math.log(len(mu)),
    )  # the last one keeps i = j in the mean
    for answer in planted:
        with pytest.raises((ExerciseError, TypeError, ValueError, RuntimeError)):
            run_check(answer)
