"""hrrformer against independent computations (loops, closed forms, brute force)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.papers import hrrformer as paper


def circular_convolution_loop(a, b):
    """(a ⊛ b)_i = Σ_j a_j b_{(i−j) mod H}, by a double loop."""
    n = len(a)
    return torch.tensor([sum(a[j] * b[(i - j) % n] for j in range(n)) for i in range(n)])


@pytest.mark.parametrize("n", [7, 8])
def test_binding_is_circular_convolution(n):
    torch.manual_seed(0)
    a, b = torch.randn(n, dtype=torch.float64), torch.randn(n, dtype=torch.float64)
    expected = circular_convolution_loop(a.tolist(), b.tolist()).float()
    torch.testing.assert_close(paper.binding(a.float(), b.float()), expected, atol=1e-5, rtol=1e-5)


def test_approx_inverse_indexes_minus_i():
    y = torch.arange(6.0)
    assert paper.approx_inverse(y).tolist() == [0.0, 5.0, 4.0, 3.0, 2.0, 1.0]


def test_unbinding_recovers_a_bound_value():
    # HRR vectors with i.i.d. N(0, 1/H) entries: y† ⊛ y ≈ identity, so (k ⊛ v) ⊛ k† ≈ v
    torch.manual_seed(1)
    h = 1024
    k, v = torch.randn(h) / math.sqrt(h), torch.randn(h) / math.sqrt(h)
    v_hat = paper.unbinding(paper.binding(k, v), k)
    assert paper.cosine_similarity(v, v_hat).item() > 0.6
    other = torch.randn(h) / math.sqrt(h)
    assert abs(paper.cosine_similarity(other, v_hat).item()) < 0.15


def test_hrr_attention_matches_a_loop_over_tokens():
    torch.manual_seed(2)
    b, h, t, d = 2, 3, 5, 8
    q, k, v = (torch.randn(b, h, t, d, dtype=torch.float64) for _ in range(3))
    out, weights = paper.hrr_attention(q.float(), k.float(), v.float())
    for bi in range(b):
        for hi in range(h):
            beta = sum(
                circular_convolution_loop(k[bi, hi, s].tolist(), v[bi, hi, s].tolist())
                for s in range(t)
            )
            scores = []
            for s in range(t):
                q_dag = torch.tensor([q[bi, hi, s, (-i) % d].item() for i in range(d)])
                v_hat = circular_convolution_loop(beta.tolist(), q_dag.tolist())
                scores.append(torch.nn.functional.cosine_similarity(v[bi, hi, s], v_hat, dim=0))
            w = torch.softmax(torch.stack(scores), 0)
            torch.testing.assert_close(weights[bi, hi, :, 0].double(), w, atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(
                out[bi, hi].double(), w[:, None] * v[bi, hi], atol=1e-5, rtol=1e-4
            )


def test_padding_does_not_enter_beta():
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    mask = torch.tensor([[True] * 4 + [False] * 2])
    out, w = paper.hrr_attention(q, k, v, mask)
    ref, w_ref = paper.hrr_attention(q[:, :, :4], k[:, :, :4], v[:, :, :4])
    torch.testing.assert_close(out[:, :, :4], ref)
    assert w[:, :, 4:].abs().max().item() == 0.0


def test_softmax_attention_matches_torch():
    torch.manual_seed(4)
    q, k, v = (torch.randn(2, 3, 7, 8) for _ in range(3))
    out, _ = paper.softmax_attention(q, k, v)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)


def test_hrr_output_position_is_a_rescaled_own_value():
    # the critique in one line: output_t is parallel to v_t (one weight per head)
    torch.manual_seed(5)
    layer = paper.SelfAttention(16, 2, "hrr")
    x = torch.randn(1, 10, 16)
    _, weights = layer(x, return_weights=True)
    v = paper.method.split_heads(layer.value(x), 2)
    q, k = (paper.method.split_heads(f(x), 2) for f in (layer.query, layer.key))
    out, _ = paper.hrr_attention(q, k, v)
    torch.testing.assert_close(out, weights * v)
    torch.testing.assert_close(weights.sum(dim=-2), torch.ones(1, 2, 1))


def test_peak_memory_counts_allocations():
    x = torch.randn(1000)
    with paper.PeakMemory() as mem:
        a = x * 2  # 4000 bytes
        b = a + 1  # 4000 more, both live
        del a
        c = b * 3  # a was freed: peak stays 8000
        del b, c
    assert mem.peak == 8000 and mem.live == 0


def test_measured_memory_matches_the_score_matrix_analytically():
    cost = paper.measure_cost("softmax", [64, 128], 16, 2, 1)
    for n, peak in zip(cost.lengths, cost.peak_bytes):
        assert peak >= 2 * n * n * 4  # scores of 2 heads, float32
    hrr = paper.measure_cost("hrr", [64, 128], 16, 2, 1)
    assert hrr.peak_bytes[1] == 2 * hrr.peak_bytes[0]  # exactly linear in T


def test_loglog_slope_of_a_power_law():
    lengths = [256, 512, 1024, 2048]
    assert paper.loglog_slope(lengths, [3e-6 * n**2 for n in lengths]) == pytest.approx(2.0)
    assert paper.loglog_slope(lengths, [1.0, 9.0, 2.0, 4.0], fit_from=1024) == pytest.approx(1.0)
    # Theil-Sen: one slow point (x3) among five on a line of slope 1 does not move the estimate
    lengths = [1024, 2048, 4096, 8192, 16384]
    values = [n * 1e-6 for n in lengths[:-1]] + [3 * 16384e-6]
    assert paper.loglog_slope(lengths, values) == pytest.approx(1.0)


def test_sinusoidal_positions_closed_form():
    table = paper.sinusoidal_positions(5, 4)
    assert table[3, 0].item() == pytest.approx(math.sin(3))
    assert table[3, 3].item() == pytest.approx(math.cos(3 / 100), abs=1e-6)


def test_grey_pixels_tokens():
    img = torch.zeros(1, 3, 32, 32)
    img[0, :, 0, 1] = 1.0
    tokens = paper.grey_pixels(img)
    assert tokens.shape == (1, 1024) and tokens[0, 1].item() == 255 and tokens[0, 0].item() == 0


def test_bad_options_are_refused():
    with pytest.raises(CompanionError, match="attention"):
        paper.SelfAttention(8, 2, "linear")
    with pytest.raises(CompanionError, match="task"):
        paper.PRESETS["smoke"].replace(task="listops")
    with pytest.raises(CompanionError, match="fit_from"):
        paper.PRESETS["smoke"].replace(fit_from=10**6)


def test_official_lr_decay_in_the_full_preset_only():
    def lrs(cfg, steps):
        opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr)
        sched = paper.experiment.lr_schedule(opt, cfg)
        out = []
        for _ in range(steps):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            if sched is not None:
                sched.step()
        return out

    assert paper.experiment.lr_schedule(None, paper.PRESETS["medium"]) is None  # constant
    full = paper.PRESETS["full"]
    assert full.lr_decay_every == 60_000 // full.batch_size and full.lr_decay == 0.95
    cfg = paper.PRESETS["smoke"].replace(lr=1e-3, lr_decay_every=10, lr_decay=0.5, lr_end=2e-4)
    got = lrs(cfg, 31)
    assert got[0] == pytest.approx(1e-3) and got[10] == pytest.approx(5e-4)  # x0.5 per 10
    assert got[5] == pytest.approx(1e-3 * 0.5**0.5)  # smooth, not a staircase
    assert got[30] == pytest.approx(2e-4)  # never below lr_end
    with pytest.raises(CompanionError, match="lr_decay"):
        paper.PRESETS["smoke"].replace(lr_decay=1.5)


def test_smoke_run_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        steps=3, critique_steps=3, n_train=64, n_test=32, timing_lengths=(32, 64), fit_from=32
    )
    result = paper.run(cfg, out_dir=tmp_path)
    again = paper.Result.load(tmp_path / "result.json")
    assert again.arms.keys() == result.arms.keys()
    report = paper.check_claims(again)
    assert len(report.rows) == 7 and str(report).splitlines()[-1].startswith("claims hold: ")
    assert set(result.costs) == {"hrr", "softmax"}  # the control has no attention to time
    arm = result.arms["sort/none"]
    assert arm.eval_steps[-1] == cfg.steps - 1 and len(arm.eval_accuracy) == len(arm.eval_steps)


def test_no_mixing_control_sees_only_its_own_token():
    # with attention removed, changing one token changes no other position's logits
    torch.manual_seed(0)
    model = paper.SequenceModel(8, 12, 8, dim=16, heads=2, depth=2, kind="none", pool=False)
    x = torch.randint(0, 8, (1, 12))
    x2 = x.clone()
    x2[0, 3] = (x[0, 3] + 1) % 8
    with torch.no_grad():
        diff = (model(x2) - model(x)).abs().amax(-1)[0]
    assert diff[3] > 0 and torch.all(diff[torch.arange(12) != 3] == 0)
    hrr = paper.SequenceModel(8, 12, 8, dim=16, heads=2, depth=2, kind="hrr", pool=False)
    with torch.no_grad():
        assert (hrr(x2) - hrr(x)).abs().amax(-1)[0, 0] > 0  # Hrrformer's β does carry it


def test_deeper_critique_arms_and_claim(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        steps=2,
        critique_steps=2,
        n_train=64,
        n_test=32,
        timing_lengths=(32, 64),
        fit_from=32,
        critique_depths=(2,),
        attentions=("hrr", "softmax", "none"),
    )
    result = paper.run(cfg)
    deep = result.arms["reverse/hrr@2"]
    assert deep.depth == 2 and deep.task == "reverse"
    again = paper.Result.from_dict(result.to_dict())
    assert again.arms["reverse/hrr@2"].depth == 2
    rows = paper.check_claims(again).rows
    assert len(rows) == 8 and rows[-1].claim.startswith("depth helps")


def test_medium_rows_depth_and_training_length(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        steps=4,
        critique_steps=4,
        eval_every=1,
        n_train=64,
        n_test=32,
        timing_lengths=(32, 64),
        fit_from=32,
        task_depths=(2,),
        critique_depths=(2,),
        early_fraction=0.25,
    )
    result = paper.run(cfg)
    assert result.arms["sort/hrr@2"].depth == 2 and result.arms["reverse/hrr@2"].depth == 2
    rows = paper.check_claims(result).rows
    names = [r.claim for r in rows]
    assert len(rows) == 13 and names[-2].startswith("more training narrows")
    assert "(from 25% of the steps to the end)" in names[-1]  # read at eval step 1 of 0-3
    # the training-length row reads the curves: a gap that shrinks by 0.2 holds, a flat one fails
    for arm, curve in (("reverse/softmax", [0.5, 0.6, 0.8, 0.9]), ("reverse/hrr", [0.1] * 4)):
        result.arms[arm].eval_accuracy = curve
    row = paper.check_claims(result).rows[-1]
    assert not row.holds and "0.50 -> 0.80" in row.measured
    result.arms["reverse/hrr"].eval_accuracy = [0.1, 0.2, 0.6, 0.8]
    row = paper.check_claims(result).rows[-1]
    assert row.holds and "0.40 -> 0.10" in row.measured
    with pytest.raises(CompanionError, match="early_fraction"):
        paper.PRESETS["smoke"].replace(early_fraction=0.25, eval_every=0).validate()


def test_baseline_depth_compares_like_with_like():
    cfg = paper.PRESETS["smoke"].replace(
        steps=4,
        critique_steps=4,
        eval_every=1,
        n_train=64,
        n_test=32,
        timing_lengths=(32, 64),
        fit_from=32,
        task_depths=(2,),
        critique_depths=(2,),
        baseline_depth=2,
        early_fraction=0.25,
    )
    result = paper.run(cfg)
    for name in ("sort/softmax@2", "sort/none@2", "reverse/softmax@2", "reverse/none@2"):
        assert result.arms[name].depth == 2
    again = paper.Result.from_dict(result.to_dict())
    assert str(paper.check_claims(again)) == str(paper.check_claims(result))
    names = [r.claim for r in paper.check_claims(result).rows]
    assert "with 2 layers Hrrformer's accuracy is comparable to 2-layer softmax" in names[9]
    assert names[8] == "depth helps Hrrformer sort (2 layers vs 1, at 25% of the steps)"

    def speed_row(hrr_curve, sm_curve):
        result.arms["reverse/hrr@2"].eval_accuracy = hrr_curve
        result.arms["reverse/softmax@2"].eval_accuracy = sm_curve
        rows = paper.check_claims(result).rows
        i = next(
            i for i, r in enumerate(rows) if r.claim.startswith("speed:") and "reverse" in r.claim
        )
        return rows[i - 1], rows[i]  # (premise, claim)

    # eval steps 0..3: softmax reaches 0.95 at step 1; Hrrformer at step 3 (3x) holds, 2 fails
    premise, row = speed_row([0.1, 0.5, 0.9, 0.96], [0.1, 0.97, 1.0, 1.0])
    assert premise.holds and row.holds and "Hrrformer 3 vs softmax 1" in row.measured
    _, row = speed_row([0.1, 0.5, 0.96, 0.99], [0.1, 0.97, 1.0, 1.0])
    assert not row.holds
    _, row = speed_row([0.1] * 4, [0.1, 0.97, 1.0, 1.0])  # never: more than step 3 >= 3 x 1
    assert row.holds and "> 3" in row.measured
    premise, row = speed_row([0.1] * 4, [0.1, 0.5, 0.9, 0.9])  # softmax never: not tested
    assert not premise.holds and not row.holds and not row.premise_ok
    with pytest.raises(CompanionError, match="baseline_depth"):
        cfg.replace(task_depths=(3,)).validate()
