import math

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import task_head_energy as paper
from companion.papers.task_head_energy.claims import rise_and_fall
from companion.papers.task_head_energy.experiment import ArmResult, EnergyResult, pretrain


def test_energy_matches_a_loop():
    torch.manual_seed(0)
    logits, y = torch.randn(7, 4), torch.randint(0, 4, (7,))
    total = 0.0
    for row, label in zip(logits.tolist(), y.tolist()):
        z = [math.exp(v) for v in row]
        p = [v / sum(z) for v in z]
        total += math.sqrt(sum((p[k] - (k == label)) ** 2 for k in range(4)))
    assert paper.average_initial_energy(logits, y) == pytest.approx(total / 7, rel=1e-10)


def test_energy_limits():
    y = torch.tensor([0, 1])
    assert paper.average_initial_energy(torch.tensor([[50.0, 0], [0, 50.0]]), y) < 1e-12
    assert paper.average_initial_energy(torch.zeros(2, 2), y) == pytest.approx(math.sqrt(0.5))


def test_feature_change_matches_a_loop():
    rng = np.random.default_rng(0)
    z0, z = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    got = paper.feature_change(torch.tensor(z0), torch.tensor(z))
    cos = [a @ b / np.linalg.norm(a) / np.linalg.norm(b) for a, b in zip(z, z0)]
    assert got["euclidean"] == pytest.approx(
        np.mean([np.linalg.norm(a - b) for a, b in zip(z, z0)])
    )
    assert got["cosine"] == pytest.approx(np.mean([1 - c for c in cos]))
    assert got["dot"] == pytest.approx(np.mean([a @ b for a, b in zip(z, z0)]))
    assert got["norm"] == pytest.approx(np.mean([np.linalg.norm(a) for a in z]))


def test_spearman_matches_pearson_of_ranks():
    a, b = [3.0, 1.0, 2.0, 5.0], [10.0, 2.0, 1.0, 7.0]
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    assert paper.spearman(a, b) == pytest.approx(np.corrcoef(ra, rb)[0, 1])
    assert paper.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_presets_validate():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(hp_epochs=())


def test_smoke_runs_and_round_trips(tmp_path):
    result = paper.run(paper.PRESETS["smoke"], out_dir=tmp_path)
    cfg = paper.PRESETS["smoke"]
    assert len(result.arms) == len(cfg.hp_epochs) + len(cfg.head_scales) + len(cfg.permuted_classes)
    again = EnergyResult.load(tmp_path / "result.json")
    assert again.arms[0].energy == result.arms[0].energy
    # head probing only lowers the training energy here
    hp = [a for a in result.arms if a.arm == "hp"]
    assert hp[-1].energy < hp[0].energy
    # the control keeps the probed head's weights (a row permutation: same norm), more energy
    ladder = [a for a in result.arms if a.arm == "permuted"]
    assert [a.permuted for a in ladder] == sorted(cfg.permuted_classes)
    for perm in ladder:
        assert perm.tau == hp[-1].tau
        assert perm.head_norm == pytest.approx(hp[-1].head_norm, rel=1e-6)
        # all arms start FT from the same backbone
        assert perm.norm0 == pytest.approx(hp[-1].norm0, rel=1e-12)
    assert ladder[-1].energy > hp[-1].energy


def test_permute_classes_cycles_the_first_k_rows():
    w = torch.arange(15.0).reshape(5, 3)
    b = torch.arange(5.0)
    out = paper.experiment.permute_classes({"weight": w, "bias": b}, 3)
    # row i < 3 now holds the old row i - 1 (mod 3): it scores class i with class i - 1's weights
    assert out["bias"].tolist() == [2.0, 0.0, 1.0, 3.0, 4.0]
    assert torch.equal(out["weight"][0], w[2]) and torch.equal(out["weight"][4], w[4])
    full = paper.experiment.permute_classes({"weight": w, "bias": b}, 5)
    assert torch.equal(full["weight"], w.roll(1, dims=0))
    assert torch.equal(out["weight"].sort(dim=0).values, w.sort(dim=0).values)


def test_pretrain_gives_the_runs_starting_point():
    cfg = paper.PRESETS["smoke"]
    from companion.data import load_digits

    backbone, head, (xd, yd), _ = pretrain(cfg, 0, load_digits(seed=0))
    with torch.no_grad():
        z0 = backbone(xd)
        energy = paper.average_initial_energy(head(z0), yd)
    result = paper.run(cfg)
    assert result.arms[0].tau == 0 and result.arms[0].energy == pytest.approx(energy, rel=1e-9)


def test_rise_and_fall():
    assert rise_and_fall([1.0, 2.0, 1.5]) == (1, pytest.approx(0.5), pytest.approx(0.25))
    k, up, down = rise_and_fall([3.0, 2.0, 1.0])
    assert k == 0 and up == 0.0


def _arm(seed, tau, energy, euclid, cosine, dot, arm="hp", norm=None, permuted=5):
    return ArmResult(
        seed=seed,
        arm=arm,
        tau=tau,
        head_scale=1.0,
        energy=energy,
        init_loss=1.0,
        init_accuracy=0.5,
        euclidean=euclid,
        cosine=cosine,
        dot=dot,
        norm=dot if norm is None else norm,
        norm0=1.0,
        test_accuracy=0.9,
        head_norm=1.0,
        permuted=permuted if arm == "permuted" else 0,
    )


def _report(arms):
    return paper.check_claims(EnergyResult(config={}, arms=arms, seconds=0.0))


def test_claims_on_fixtures_hold_and_fail():
    points = [(0, 0.9, 1.0), (1, 0.7, 2.0), (2, 0.5, 1.5)]  # (τ, energy, dot)
    good = [_arm(0, t, e, e, e, d) for t, e, d in points]
    good.append(_arm(0, 2, 1.2, 2.0, 2.0, 0.5, arm="permuted"))
    assert all(r.holds for r in _report(good).rows)
    # features move less with more energy, the dot product only rises, the control is flat
    bad = [_arm(0, t, e, -e, -e, d) for t, e, d in [(0, 0.9, 1.0), (1, 0.7, 2.0), (2, 0.5, 3.0)]]
    bad.append(_arm(0, 2, 1.2, -0.5, -0.5, 1.0, arm="permuted"))
    report = _report(bad)
    assert report.rows[0].holds and not any(r.holds for r in report.rows[1:])
    # a bump smaller than the margin does not count as rise-then-fall
    tiny = [_arm(0, t, e, e, e, d) for t, e, d in [(0, 0.9, 1.0), (1, 0.7, 1.001), (2, 0.5, 0.5)]]
    tiny.append(_arm(0, 2, 1.2, 2.0, 2.0, 0.5, arm="permuted"))
    assert not _report(tiny).rows[3].holds
    # the control needs both the distance and the cosine to grow by the margin
    weak = good[:3] + [_arm(0, 2, 1.2, 2.0, 0.55, 0.5, arm="permuted")]
    assert not _report(weak).rows[4].holds
    # no energy spread: the premise fails and gates every row
    flat = [_arm(0, t, 0.9, 1, 1, 1) for t in (0, 1, 2)]
    report = _report(flat)
    assert not report.rows[0].holds
    assert all(r.verdict.startswith("not tested") for r in report.rows[1:])
    # permuting that does not raise the energy also fails the premise
    noraise = good[:3] + [_arm(0, 2, 0.52, 2.0, 2.0, 0.5, arm="permuted")]
    assert not _report(noraise).rows[0].holds


def test_fixed_head_rows_on_fixtures():
    points = [(0, 0.9, 1.0), (1, 0.7, 2.0), (2, 0.5, 1.5)]  # (τ, energy, dot)
    hp = [_arm(0, t, e, e, e, d) for t, e, d in points]
    five = _arm(0, 2, 1.2, 2.0, 2.0, 0.5, arm="permuted", permuted=5)
    three = _arm(0, 2, 0.9, 1.5, 1.5, 1.0, arm="permuted", permuted=3)
    report = _report(hp + [five, three])  # the ladder is sorted by classes cycled
    assert len(report.rows) == 7 and all(r.holds for r in report.rows)
    # distances that do not grow along the fixed-head ladder
    flat = _arm(0, 2, 1.2, 0.4, 0.4, 0.5, arm="permuted", permuted=5)
    report = _report(hp + [_arm(0, 2, 0.9, 0.45, 0.45, 1.0, arm="permuted", permuted=3), flat])
    assert not report.rows[5].holds
    # a dot product and norm that rise along the ladder: no "then fall"
    rising = [
        _arm(0, 2, 0.9, 1.5, 1.5, 2.0, arm="permuted", permuted=3),
        _arm(0, 2, 1.2, 2.0, 2.0, 2.5, arm="permuted", permuted=5),
    ]
    report = _report(hp + rising)
    assert report.rows[5].holds and not report.rows[6].holds
    # with only one permuted arm there is no ladder: the two rows are left out
    assert len(_report(hp + [five]).rows) == 5
