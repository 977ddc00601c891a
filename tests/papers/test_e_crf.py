"""e_crf against independent computations: the official module's formulas written as loops over
pixels and neighbours, a brute-force superpixel mean, hand-made IoUs."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import e_crf as paper
from companion.papers.e_crf.claims import BOUNDARY_GAIN, GAP_DROP, PREMISE_GAP


def _official_position_encoding(d_model, h, w):
    """``PositionEncode.forward`` of ecrf_sp.py, line by line."""
    x = torch.zeros((d_model, 1, w))
    y = torch.zeros((d_model, h, 1))
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    xp = torch.arange(0, w).unsqueeze(0)
    yp = torch.arange(0, h).unsqueeze(1)
    x[0::2, :, :] = torch.sin(xp.unsqueeze(0) * div_term.unsqueeze(1).unsqueeze(2))
    x[1::2, :, :] = torch.cos(xp.unsqueeze(0) * div_term.unsqueeze(1).unsqueeze(2))
    y[0::2, :, :] = torch.sin(yp.unsqueeze(0) * div_term.unsqueeze(1).unsqueeze(2))
    y[1::2, :, :] = torch.cos(yp.unsqueeze(0) * div_term.unsqueeze(1).unsqueeze(2))
    return torch.cat((x.repeat(1, h, 1), y.repeat(1, 1, w)), dim=0)


def test_position_encoding_matches_official():
    torch.testing.assert_close(
        paper.position_encoding(8, 5, 7), _official_position_encoding(8, 5, 7)
    )


def test_neighbours_match_unfold():
    x = torch.randn(2, 3, 6, 7)
    expected = F.unfold(x, 3, dilation=2, padding=2).reshape(2, 3, 9, 6, 7)
    torch.testing.assert_close(paper.neighbours(x), expected)


def test_ecrf_message_matches_a_loop_over_pixels():
    """m_i = Σ_j ⟨g_i, g_j⟩ sigmoid(wᵀF_j) F_j over the 3×3 window of dilation 2 (zeros
    outside the image), computed pixel by pixel."""
    torch.manual_seed(0)
    b, c, h, w = 2, 5, 6, 5
    module = paper.ECRF(c, channel=4)
    feat, img = torch.randn(b, c, h, w), torch.rand(b, 3, h, w)
    with torch.no_grad():
        out = module(feat, img)
        pe = _official_position_encoding(4, h, w)
        g = torch.cat(
            [
                torch.einsum("oc,bchw->bohw", module.img_conv.weight[:, :, 0, 0], img),
                torch.einsum("oc,chw->ohw", module.pos_conv.weight[:, :, 0, 0], pe).expand(
                    b, -1, -1, -1
                ),
            ],
            dim=1,
        )
        wc = module.comp_conv.weight[0, :, 0, 0]
        expected = torch.zeros_like(feat)
        for n in range(b):
            for i in range(h):
                for j in range(w):
                    for di in (-2, 0, 2):
                        for dj in (-2, 0, 2):
                            ii, jj = i + di, j + dj
                            if 0 <= ii < h and 0 <= jj < w:
                                k = (g[n, :, i, j] * g[n, :, ii, jj]).sum()
                                mu = torch.sigmoid(wc @ feat[n, :, ii, jj])
                                expected[n, :, i, j] += k * mu * feat[n, :, ii, jj]
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


def test_centre_only_control_keeps_only_the_centre_term():
    """The control arm's message is k_ii μ_i F_i = ‖g_i‖² sigmoid(wᵀF_i) F_i, pixel by pixel."""
    torch.manual_seed(4)
    module = paper.ECRF(5, channel=4, centre_only=True)
    feat, img = torch.randn(2, 5, 6, 5), torch.rand(2, 3, 6, 5)
    with torch.no_grad():
        out = module(feat, img)
        g = module.embedding(feat, img)
        wc = module.comp_conv.weight[0, :, 0, 0]
        expected = torch.zeros_like(feat)
        for n in range(2):
            for i in range(6):
                for j in range(5):
                    mu = torch.sigmoid(wc @ feat[n, :, i, j])
                    expected[n, :, i, j] = (g[n, :, i, j] ** 2).sum() * mu * feat[n, :, i, j]
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
    full = paper.ECRF(5, channel=4)
    full.load_state_dict(module.state_dict())
    with torch.no_grad():
        assert (full(feat, img) - out).abs().max() > 1e-2  # the neighbours do speak in E-CRF


def test_superpixel_mean_brute_force_covers_every_id():
    torch.manual_seed(1)
    feat = torch.randn(2, 3, 5, 6)
    sp = torch.randint(0, 4, (2, 5, 6))
    sp[0, 0, 0] = 7  # the largest id: the official loop range(max) would skip it
    out = paper.superpixel_mean(feat, sp)
    for n in range(2):
        for s in sp[n].unique():
            mask = sp[n] == s
            mean = feat[n][:, mask].mean(dim=1)
            torch.testing.assert_close(out[n][:, mask], mean[:, None].expand(-1, int(mask.sum())))


def test_message_pass_combines_prior_and_message():
    torch.manual_seed(2)
    mp = paper.MessagePass(4, use_superpixels=True, channel=4)
    feat, img = torch.randn(1, 4, 6, 6), torch.rand(1, 3, 6, 6)
    sp = torch.randint(0, 3, (1, 6, 6))
    with torch.no_grad():
        out = mp(feat, img, sp)
        expected = feat + 0.1 * paper.superpixel_mean(feat, sp) + 0.2 * mp.ecrf(feat, img)
    torch.testing.assert_close(out, expected)
    mp.use_superpixels = False
    with torch.no_grad():
        torch.testing.assert_close(mp(feat, img), feat + 0.2 * mp.ecrf(feat, img))


def test_class_weight_similarity():
    w = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, -2.0]])
    sim = paper.class_weight_similarity(w)
    assert sim[0, 1].item() == pytest.approx(1 / math.sqrt(2))
    assert sim[1, 2].item() == pytest.approx(-1 / math.sqrt(2))
    assert sim[0, 2].item() == pytest.approx(0.0, abs=1e-7)


def test_mean_iou_and_band_by_hand():
    labels = torch.tensor([[[0, 0, 1, 1]]])
    pred = torch.tensor([[[0, 1, 1, 1]]])
    # class 0: TP 1, union 2 -> 0.5; class 1: TP 2, union 3 -> 2/3
    assert paper.mean_iou(pred, labels) == pytest.approx((0.5 + 2 / 3) / 2)
    band = paper.boundary_band(labels, 1)
    assert band.tolist() == [[[False, True, True, False]]]


def test_scenes_touch_only_in_pairs():
    cfg = paper.PRESETS["smoke"]
    images, labels, sp = paper.make_scenes(cfg, 16, seed=0)
    assert images.shape == (16, 3, 16, 16) and sp.shape == labels.shape
    for lab in labels:
        present = sorted(lab.unique().tolist())
        assert present in ([0, 1], [2, 3]) or len(present) == 1


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "medium", "full"}
    for bad, text in (
        ({"lrr": 1}, "lrr"),
        ({"methods": ("baseline", "magic")}, "magic"),
        ({"methods": ("ecrf",)}, "baseline"),
        ({"steps": 0}, "steps"),
        ({"noise": -1.0}, "noise"),
        ({"device": "tpu"}, "tpu"),
        ({"ecrf_channels": 3}, "ecrf_channels"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_arms_share_backbone_initialization():
    cfg = paper.PRESETS["smoke"]
    a, b = paper.build_model(cfg, "baseline"), paper.build_model(cfg, "ecrf")
    torch.testing.assert_close(a.classifier.weight, b.classifier.weight)
    torch.testing.assert_close(a.backbone[0].weight, b.backbone[0].weight)


@pytest.fixture(scope="module")
def smoke_result():
    return paper.run(paper.PRESETS["smoke"].replace(device="cpu"))


def test_smoke_run_round_trip_and_claims(smoke_result, tmp_path):
    result = smoke_result
    assert set(result.arms) == set(paper.METHODS)
    result.save(tmp_path / "r.json")
    loaded = paper.Result.load(tmp_path / "r.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))  # tuples -> lists
    report = paper.check_claims(result)
    assert len(report.rows) == 5
    assert str(report).endswith(f"claims hold: {report.n_hold}/5")
    assert all(inv.holds for inv in report.invariants)


def _set(arm, touch, apart, bmiou):
    n = len(arm.measure_steps)
    arm.sim_touching[:], arm.sim_apart[:] = [touch] * n, [apart] * n
    arm.boundary_miou = bmiou


def test_claims_on_fake_results_can_fail(smoke_result):
    import copy

    r = copy.deepcopy(smoke_result)
    low = 0.3 - 1.5 * GAP_DROP  # clearly below 0.3 by more than the margin
    # rows: premise, E-CRF vs baseline, control vs centre-only, boundary mIoU, ablation
    _set(r.arms["baseline"], 0.3, 0.0, 0.90)
    _set(r.arms["ecrf"], low, 0.0, 0.90 + 2 * BOUNDARY_GAIN)
    _set(r.arms["ecrf_nosp"], low, 0.0, 0.90)
    _set(r.arms["centre_only"], 0.3, 0.0, 0.90)
    assert [row.holds for row in paper.check_claims(r).rows] == [True] * 5
    # the centre-only control narrows the gap as much as E-CRF: only the control row fails
    _set(r.arms["centre_only"], low, 0.0, 0.90)
    assert [row.holds for row in paper.check_claims(r).rows] == [True, True, False, True, True]
    # a tie is not a hold
    _set(r.arms["ecrf"], 0.3 - GAP_DROP / 2, 0.0, 0.90)
    _set(r.arms["ecrf_nosp"], 0.3, 0.0, 0.90)
    _set(r.arms["centre_only"], 0.3, 0.0, 0.90)
    assert [row.holds for row in paper.check_claims(r).rows] == [True, False, False, False, False]
    # premise fails: every dependent row is not tested
    _set(r.arms["baseline"], PREMISE_GAP / 2, 0.0, 0.90)
    _set(r.arms["ecrf"], -0.5, 0.0, 0.99)
    rows = paper.check_claims(r).rows
    assert not rows[0].holds and not any(row.premise_ok for row in rows[1:])
    assert not any(row.holds for row in rows)


def test_gap_is_averaged_over_the_last_quarter(smoke_result):
    import copy

    from companion.papers.e_crf.claims import LATE_FRACTION, confusion_gap

    arm = copy.deepcopy(smoke_result.arms["baseline"])
    total = smoke_result.config["steps"]
    late = [s >= LATE_FRACTION * total for s in arm.measure_steps]
    assert 1 < sum(late) < len(late)  # several late measurements, not all of them
    arm.sim_apart[:] = [0.0] * len(late)
    arm.sim_touching[:] = [0.9 if not is_late else 0.1 * k for k, is_late in enumerate(late)]
    expected = sum(0.1 * k for k, is_late in enumerate(late) if is_late) / sum(late)
    assert confusion_gap(arm, total) == pytest.approx(expected)
    arm.sim_touching[-1] += 1.0  # one end point moves the mean by 1/(number of late points)
    assert confusion_gap(arm, total) == pytest.approx(expected + 1.0 / sum(late))


def test_figures(smoke_result):
    import matplotlib.pyplot as plt

    figs = paper.figures(smoke_result)
    assert set(figs) == {"scenes", "similarity", "gap", "examples"}
    plt.close("all")
