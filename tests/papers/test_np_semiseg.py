"""np_semiseg against independent computations (loops, torch.distributions, brute force)."""

import dataclasses
import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers import np_semiseg as paper


def test_aggregate_matches_a_loop_over_pixels_channels_and_classes():
    torch.manual_seed(0)
    emb = torch.randn(2, 3, 2, 2)
    centres = torch.randn(4, 3)
    present = torch.tensor([True, False, True, True])
    out = paper.aggregate(emb, centres, present)
    for b in range(2):
        for d in range(3):
            for i in range(2):
                for j in range(2):
                    sims = [-((emb[b, d, i, j] - centres[c, d]) ** 2) for c in (0, 2, 3)]
                    w = torch.softmax(torch.stack(sims), 0)
                    expect = sum(wk * centres[c, d] for wk, c in zip(w, (0, 2, 3)))
                    assert out[b, d, i, j].item() == pytest.approx(expect.item(), abs=1e-6)


def test_aggregate_matches_the_official_formula_when_every_class_is_present():
    torch.manual_seed(1)
    B, C, D, W, H = 2, 3, 4, 3, 3
    x = torch.randn(B, D, W, H)
    centres = torch.randn(C, D)
    # np_head.py, verbatim in its operations
    expand = centres.unsqueeze(2).unsqueeze(3).unsqueeze(0).expand(B, -1, -1, W, H)
    residual = x.unsqueeze(1).expand(-1, C, -1, -1, -1) - expand
    attention = torch.softmax(-1.0 * torch.square(residual), dim=1)
    official = torch.sum(attention * expand, dim=1)
    ours = paper.aggregate(x, centres, torch.ones(C, dtype=torch.bool))
    torch.testing.assert_close(ours, official)


def test_kl_matches_torch_distributions():
    torch.manual_seed(2)
    mu_t, mu_c = torch.randn(3, 5), torch.randn(3, 5)
    s_t, s_c = torch.rand(3, 5) + 0.1, torch.rand(3, 5) + 0.1
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu_t, s_t), torch.distributions.Normal(mu_c, s_c)
    ).sum(-1)
    torch.testing.assert_close(paper.gaussian_kl(mu_t, s_t, mu_c, s_c), ref)
    assert paper.gaussian_kl(mu_t, s_t, mu_t, s_t).abs().max() < 1e-6


def test_memory_is_a_fifo_queue_per_class_and_ignores_255():
    mem = paper.ClassMemory(num_classes=2, dim=1, max_length=3)
    emb = torch.arange(6.0).reshape(1, 1, 2, 3)  # pixels 0..5
    labels = torch.tensor([[[0, 1, 0], [255, 0, 0]]])
    mem.push(emb, labels)
    assert mem.queues[0].flatten().tolist() == [2.0, 4.0, 5.0]  # oldest (0) dropped
    assert mem.queues[1].flatten().tolist() == [1.0]
    centres, present = mem.centres()
    assert centres[0].item() == pytest.approx(11 / 3) and present.tolist() == [True, True]
    empty = paper.ClassMemory(3, 2, 5)
    assert empty.centres()[1].tolist() == [False, False, False]


def test_mean_iou_against_brute_force():
    torch.manual_seed(3)
    pred = torch.randint(0, 4, (50,))
    truth = torch.randint(0, 4, (50,))
    truth[:5] = 255
    conf = paper.confusion(pred, truth, 4)
    ious = []
    keep = truth != 255
    for c in range(4):
        inter = ((pred == c) & (truth == c) & keep).sum().item()
        union = (((pred == c) | (truth == c)) & keep).sum().item()
        if union:
            ious.append(inter / union)
    assert paper.mean_iou(conf) == pytest.approx(sum(ious) / len(ious))


def test_threshold_pseudo_labels_and_uncertainties():
    probs = torch.tensor([[0.97, 0.6], [0.03, 0.4]])[None, :, :, None]  # [1, K=2, 2, 1]
    labels = paper.threshold_pseudo_labels(probs, 0.95)
    assert labels.flatten().tolist() == [0, 255]
    ent = paper.predictive_entropy(torch.full((1, 4, 1, 1), 0.25))
    assert ent.item() == pytest.approx(1.0)
    assert paper.max_prob_uncertainty(probs).flatten().tolist() == pytest.approx([0.03, 0.4])


def test_np_head_shapes_sigma_floor_and_mean_prediction():
    torch.manual_seed(4)
    head = paper.NPHead(in_dim=6, num_classes=3, latent_dim=4, width=8)
    mems = [paper.ClassMemory(3, 4, 10) for _ in range(2)]
    f = torch.randn(2, 6, 5, 5)
    labels = torch.randint(0, 3, (2, 5, 5))
    for m in mems:
        m.push(head.embed(f), labels)
    logits, (mu, sigma), (mu_c, sigma_c) = head(f, *mems, samples=5)
    assert logits.shape == (5, 2, 3, 5, 5) and mu.shape == (2, 4)
    assert sigma.min() >= 0.1 and sigma_c.min() >= 0.1
    probs = paper.predictive(logits)
    torch.testing.assert_close(probs.sum(1), torch.ones(2, 5, 5))
    # φ gets gradient only through the attention of the aggregator (f is detached)
    f.requires_grad_(True)
    logits, _, _ = head(f, *mems, samples=2)
    logits.sum().backward()
    assert head.phi.net[0].weight.grad is not None


def test_presets_and_validation():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    for cfg in paper.PRESETS.values():
        cfg.validate()
    with pytest.raises(CompanionError, match="unknown arm 'np'.*valid: supervised"):
        paper.PRESETS["notebook"].replace(arms=("np",))
    with pytest.raises(CompanionError, match="threshold"):
        paper.PRESETS["notebook"].replace(threshold=1.5)
    with pytest.raises(CompanionError, match="shape_classes"):
        paper.PRESETS["notebook"].replace(shape_classes=9)
    with pytest.raises(CompanionError, match="shape_size"):
        paper.PRESETS["notebook"].replace(shape_size=(2, 30))


def test_cutmix_moves_pixels_with_their_labels_like_u2pl():
    """U2PL's cutmix: a box of half the image (rounded) from image i + 1 pasted into image i,
    the same box for the image, its pseudo-labels and its true labels (checked by a loop)."""
    from companion.papers.np_semiseg.experiment import cutmix

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1, 16, 16)
    y = torch.randint(0, 4, (3, 16, 16))
    xm, ym = cutmix([x, y], gen)
    for i in range(3):
        box = xm[i, 0] != x[i, 0]
        assert 0.4 <= box.float().mean() <= 0.6
        rows, cols = box.any(1).nonzero(), box.any(0).nonzero()
        assert box.sum() == len(rows) * len(cols)  # one rectangle
        j = (i + 1) % 3
        assert torch.equal(xm[i, 0][box], x[j, 0][box])
        assert torch.equal(ym[i][box], y[j][box]) and torch.equal(ym[i][~box], y[i][~box])


def test_ema_restarts_after_the_warm_up():
    """The teacher copies the student during the labelled-only warm-up (d = 0), then d =
    min(1 - 1/(k + 1), ema) with k counted from its end (AugSeg's train_semi.py)."""
    from torch import nn

    from companion.papers.np_semiseg.experiment import ema_update

    t, s = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    for k, d in ((-3, 0.0), (0, 0.0), (1, 0.5), (3, 0.75), (500, 0.99)):
        t.weight.data.fill_(1.0)
        s.weight.data.fill_(0.0)
        ema_update(t, s, k, 0.99)
        assert float(t.weight) == pytest.approx(d)


def test_every_arm_is_scored_by_an_ema_on_one_schedule(monkeypatch):
    """Labelled-only training keeps an EMA of its weights on the mean teacher's schedule (same
    decay, same restart), and is scored by it: the arms differ only in the unsupervised loss."""
    from companion.papers.np_semiseg import experiment

    calls = {arm: [] for arm in experiment.ARMS}
    scored = {arm: [] for arm in experiment.ARMS}
    real_update, real_evaluate = experiment.ema_update, experiment.evaluate
    cfg = paper.PRESETS["smoke"].replace(steps=6, eval_every=3)
    current = {}

    def record_update(teacher, student, step, ema):
        calls[current["arm"]].append((step, ema))
        real_update(teacher, student, step, ema)

    def record_evaluate(cfg_, model, *args, **kwargs):
        scored[current["arm"]].append(model)
        return real_evaluate(cfg_, model, *args, **kwargs)

    monkeypatch.setattr(experiment, "ema_update", record_update)
    monkeypatch.setattr(experiment, "evaluate", record_evaluate)
    for arm in experiment.ARMS:
        current["arm"] = arm
        experiment.train_arm(None, cfg, arm, None, False)
    expected = [(k - cfg.sup_only_steps, cfg.ema) for k in range(cfg.steps)]
    assert calls["supervised"] == calls["mean_teacher"] == expected
    # the final measurement is of the EMA copy (frozen parameters) in every arm, not the student
    for arm in experiment.ARMS:
        assert not any(p.requires_grad for p in scored[arm][-1].parameters()), arm


def test_scenes_are_deterministic_and_labelled():
    cfg = paper.PRESETS["smoke"]
    x1, y1 = paper.make_scenes(cfg, 4, 7)
    x2, y2 = paper.make_scenes(cfg, 4, 7)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == (4, 1, 16, 16) and set(y1.unique().tolist()) <= set(range(cfg.num_classes))
    assert (y1 > 0).any()


@pytest.fixture(scope="module")
def smoke_result():
    return paper.run(paper.PRESETS["smoke"])


def test_smoke_run_round_trip_and_claims(smoke_result, tmp_path):
    r = smoke_result
    assert set(r.arms) == set(paper.ARMS)
    again = paper.Result.from_dict(r.to_dict())
    assert again.to_dict() == r.to_dict()
    report = paper.check_claims(r)
    assert len(report.rows) == 7 and str(report).splitlines()[-1].startswith("claims hold: ")


def _fake(result, **arms):
    out = paper.Result.from_dict(result.to_dict())
    for name, changes in arms.items():
        out.arms[name] = dataclasses.replace(out.arms[name], **changes)
    return out


def _good(result):
    return _fake(
        result,
        supervised=dict(miou=0.6),
        mean_teacher=dict(miou=0.6, auroc_entropy=0.8, auroc_max_prob=0.8),
        np_semiseg=dict(miou=0.7, auroc_entropy=0.85, pseudo_accuracy=[0.95], kl=[0.1]),
    )


def test_claims_hold_on_a_good_fake_and_every_row_can_fail(smoke_result):
    good = paper.check_claims(_good(smoke_result))
    assert all(row.holds and row.premise_ok for row in good.rows)
    good_result = _good(smoke_result)
    np_ok = dict(miou=0.7, auroc_entropy=0.85, pseudo_accuracy=[0.95], kl=[0.1])
    failing = [
        dict(supervised=dict(miou=0.95)),  # premise: no room
        dict(np_semiseg={**np_ok, "pseudo_accuracy": [0.5]}),  # premise: inaccurate labels
        dict(mean_teacher=dict(miou=0.55)),  # premise: pseudo-labels hurt
        dict(np_semiseg={**np_ok, "auroc_entropy": 0.7}),  # AUROC below 0.75
        dict(np_semiseg={**np_ok, "miou": 0.61}),  # NP gains less than the margin over sup
        dict(mean_teacher=dict(auroc_entropy=0.95)),  # softmax entropy ranks errors better
        dict(np_semiseg={**np_ok, "miou": 0.5}),  # NP mIoU far below the softmax mean teacher
    ]
    for i, change in enumerate(failing):
        report = paper.check_claims(_fake(good_result, **change))
        assert not report.rows[i].holds, (i, str(report))
    # a failed premise marks the mIoU control as not tested (and never holding)
    for premise in (
        dict(supervised=dict(miou=0.95)),
        dict(np_semiseg={**np_ok, "pseudo_accuracy": [0.5]}),
        dict(mean_teacher=dict(miou=0.55)),
    ):
        report = paper.check_claims(_fake(good_result, **premise))
        assert not report.rows[6].premise_ok, str(report)
        assert report.rows[3].premise_ok and report.rows[5].premise_ok
    # the gain over labelled-only needs room and accurate pseudo-labels, not the softmax premise
    for premise, ok in (
        (dict(supervised=dict(miou=0.95)), False),
        (dict(np_semiseg={**np_ok, "pseudo_accuracy": [0.5]}), False),
        (dict(mean_teacher=dict(miou=0.55)), True),
    ):
        assert paper.check_claims(_fake(good_result, **premise)).rows[4].premise_ok == ok
    # the gain row: just above the margin holds, just below fails
    sup = good_result.arms["supervised"].miou
    for delta, holds in ((0.002, True), (-0.002, False)):
        r = _fake(good_result, np_semiseg={**np_ok, "miou": sup + paper.claims.GAIN_MARGIN + delta})
        assert paper.check_claims(r).rows[4].holds == holds
    # non-inferiority: just inside the margins holds, just outside fails
    mt = good_result.arms["mean_teacher"]
    inside = paper.check_claims(
        _fake(
            good_result,
            np_semiseg={
                **np_ok,
                "miou": mt.miou - paper.claims.MIOU_MARGIN + 0.002,
                "auroc_entropy": mt.auroc_entropy - paper.claims.AUROC_MARGIN + 0.002,
            },
        )
    )
    assert inside.rows[5].holds and inside.rows[6].holds, str(inside)
    outside = paper.check_claims(
        _fake(
            good_result,
            np_semiseg={
                **np_ok,
                "miou": mt.miou - paper.claims.MIOU_MARGIN - 0.002,
                "auroc_entropy": mt.auroc_entropy - paper.claims.AUROC_MARGIN - 0.002,
            },
        )
    )
    assert not outside.rows[5].holds and not outside.rows[6].holds, str(outside)


def test_margins_are_a_priori_and_a_clearly_worse_np_head_fails(smoke_result):
    """The margins are the fixed 'comparable' of about 2 points, and an NP head 0.05 mIoU below
    labelled-only (with the softmax mean teacher equal to labelled-only) fails the mIoU row."""
    assert paper.claims.MIOU_MARGIN == 0.02 and paper.claims.AUROC_MARGIN == 0.02
    assert paper.claims.GAIN_MARGIN == 0.02
    good = _good(smoke_result)
    np_ok = dict(auroc_entropy=0.85, pseudo_accuracy=[0.95], kl=[0.1])
    r = _fake(
        good,
        supervised=dict(miou=0.6),
        mean_teacher=dict(miou=0.6, auroc_entropy=0.8, auroc_max_prob=0.8),
        np_semiseg={**np_ok, "miou": 0.6 - 0.05},
    )
    report = paper.check_claims(r)
    assert report.rows[2].holds, str(report)  # a tie: pseudo-labelling does not hurt
    assert report.rows[6].premise_ok and not report.rows[6].holds, str(report)
    assert not report.rows[4].holds  # and no gain over labelled-only


def test_auroc_control_changes_only_the_head(smoke_result):
    """The AUROC control compares entropy with entropy: the softmax head's 1 - max-prob score
    plays no part in the verdict (it is only printed)."""
    good = _good(smoke_result)
    high_max_prob = _fake(good, mean_teacher=dict(miou=0.6, auroc_entropy=0.8, auroc_max_prob=0.99))
    assert paper.check_claims(high_max_prob).rows[5].holds
    high_entropy = _fake(good, mean_teacher=dict(miou=0.6, auroc_entropy=0.9, auroc_max_prob=0.5))
    report = paper.check_claims(high_entropy)
    assert not report.rows[5].holds, str(report)
    assert "1 - max-prob" in report.rows[5].measured


def test_nan_pseudo_accuracy_fails_the_premise(smoke_result):
    r = _fake(
        _good(smoke_result),
        np_semiseg=dict(pseudo_accuracy=[math.nan], miou=0.7, auroc_entropy=0.85, kl=[0.1]),
    )
    assert not paper.check_claims(r).rows[1].holds
