"""neural_stego_optimizer (LISO) against independent computations: closed forms for a linear
decoder, the official seq_loss formula, brute-force loops over iterates and bits."""

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

from companion.errors import CompanionError
from companion.papers import neural_stego_optimizer as paper


def _linear_decoder(channels=1, bits=2, seed=0):
    """A 1×1 convolution: logits z = W x + b per pixel, so ∇ₓ Σ BCE = Wᵀ(σ(z) − m)."""
    torch.manual_seed(seed)
    return nn.Conv2d(channels, bits, kernel_size=1)


def test_message_gradient_matches_the_closed_form_for_a_linear_decoder():
    dec = _linear_decoder()
    x = torch.rand(3, 1, 5, 5) * 2 - 1
    m = torch.randint(0, 2, (3, 2, 5, 5)).float()
    z = dec(x)
    w = dec.weight[:, :, 0, 0]  # [bits, channels]
    expected = torch.einsum("bc,nbhw->nchw", w, torch.sigmoid(z) - m)
    got = paper.message_gradient(dec, x, m)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    assert not got.requires_grad


def test_gradient_descent_step_is_x_minus_lr_times_the_per_image_mean_gradient():
    dec = _linear_decoder(seed=1)
    x = torch.rand(2, 1, 4, 4) * 0.2  # far from the clip at ±1
    m = torch.randint(0, 2, (2, 2, 4, 4)).float()
    lr = 0.05
    (x1,) = paper.optimize_image(dec, x, m, iters=1, lr=lr, method="gd")
    grad_sum = paper.message_gradient(dec, x, m)
    expected = x - lr * grad_sum / (2 * 4 * 4)  # mean over one image's 2×4×4 bits
    torch.testing.assert_close(x1, expected, atol=1e-6, rtol=1e-5)


def test_sequence_loss_is_the_official_gamma_weighted_sum():
    torch.manual_seed(2)
    dec = _linear_decoder(seed=2)
    cover = torch.rand(2, 1, 4, 4) * 2 - 1
    m = torch.randint(0, 2, (2, 2, 4, 4)).float()
    its = [cover + 0.1 * k * torch.randn_like(cover) for k in range(1, 5)]
    gamma, w_mse = 0.8, 0.7
    # liso/models.py seq_loss: weights [γ^x for x in range(len-1, -1, -1)], unnormalized
    weights = [gamma**x for x in range(len(its) - 1, -1, -1)]
    mse = sum(w * ((x - cover) ** 2).mean() for w, x in zip(weights, its))
    bce = 0.0
    for w, x in zip(weights, its):
        p = torch.sigmoid(dec(x))
        bce = bce + w * -(m * torch.log(p) + (1 - m) * torch.log(1 - p)).mean()
    loss, metrics = paper.sequence_loss(its, cover, m, dec, gamma, w_mse)
    assert loss.item() == pytest.approx((w_mse * mse + bce).item(), rel=1e-5)
    assert metrics["mse"] == pytest.approx(mse.item(), rel=1e-5)


def test_quantize_is_the_nearest_8_bit_level():
    x = torch.rand(1000) * 2.2 - 1.1
    q = paper.quantize(x)
    levels = np.clip(np.round((np.clip(x.numpy(), -1, 1) + 1) / 2 * 255), 0, 255)
    np.testing.assert_allclose(q.numpy(), levels / 127.5 - 1, atol=1e-6)
    assert torch.equal(paper.quantize(q), q)
    assert (q - x.clamp(-1, 1)).abs().max().item() <= 0.5 / 127.5 + 1e-6


def test_psnr_of_a_uniform_shift_by_k_levels():
    cover = paper.quantize(torch.rand(2, 1, 6, 6) * 1.6 - 0.8)
    for k in (1, 3, 10):
        stego = cover + k / 127.5
        expected = 20 * math.log10(255 / k)
        assert paper.psnr(stego, cover).tolist() == pytest.approx([expected] * 2, rel=1e-4)


def test_bit_error_counts_wrong_bits_per_image():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 2, 3, 3, generator=g)
    m = torch.randint(0, 2, (4, 2, 3, 3), generator=g).float()
    for n in range(4):
        wrong = sum(
            int((logits[n].flatten()[i] >= 0).item() != (m[n].flatten()[i] == 1).item())
            for i in range(18)
        )
        assert paper.bit_error(logits, m)[n].item() == pytest.approx(wrong / 18)


def _brute_select(errors, psnrs):
    out = []
    for n in range(errors.shape[1]):
        zero = [t for t in range(errors.shape[0]) if errors[t, n] == 0]
        if zero:
            out.append(max(zero, key=lambda t: psnrs[t, n].item()))
        else:
            out.append(min(range(errors.shape[0]), key=lambda t: errors[t, n].item()))
    return out


def test_best_iterate_selection_matches_brute_force():
    g = torch.Generator().manual_seed(4)
    errors = torch.randint(0, 4, (6, 20), generator=g).float() / 10  # many exact zeros
    psnrs = torch.rand(6, 20, generator=g) * 20 + 20
    assert paper.select_best_iterate(errors, psnrs).tolist() == _brute_select(errors, psnrs)
    curve_e, _ = paper.best_curves(errors, psnrs)
    for t in range(1, 7):
        kept = _brute_select(errors[:t], psnrs[:t])
        assert curve_e[t - 1] == pytest.approx(
            float(np.mean([errors[k, n].item() for n, k in enumerate(kept)]))
        )
    assert all(a >= b - 1e-12 for a, b in zip(curve_e, curve_e[1:]))  # keeping more never hurts


def test_encoder_iterates_stay_in_range_and_in_the_constraint():
    torch.manual_seed(5)
    enc = paper.LISOEncoder(channels=1, bits=1, hidden=8, motion_hidden=8, motion_out=16)
    dec = paper.Decoder(1, 1, 8)
    cover = torch.rand(2, 1, 8, 8) * 2 - 1
    m = torch.randint(0, 2, (2, 1, 8, 8)).float()
    its = enc(cover, m, dec, iters=5, step_size=5.0, constraint=0.05)
    assert len(its) == 5
    for x in its:
        assert x.abs().max() <= 1.0
        assert (x - cover).abs().max() <= 0.05 + 1e-6


def test_a_zero_step_head_leaves_the_cover_unchanged_and_the_gradient_reaches_the_head():
    torch.manual_seed(6)
    enc = paper.LISOEncoder(channels=1, bits=1, hidden=8, motion_hidden=8, motion_out=16)
    nn.init.zeros_(enc.update.head[-1].weight)
    nn.init.zeros_(enc.update.head[-1].bias)
    dec = paper.Decoder(1, 1, 8)
    cover = torch.rand(2, 1, 8, 8) * 1.8 - 0.9
    m = torch.randint(0, 2, (2, 1, 8, 8)).float()
    its = enc(cover, m, dec, iters=3, step_size=1.0)
    for x in its:
        torch.testing.assert_close(x, cover)
    loss, _ = paper.sequence_loss(its, cover, m, dec)
    loss.backward()
    assert enc.update.head[-1].weight.grad.abs().sum() > 0


def test_conv_gru_is_the_gru_update_per_pixel():
    """With 3×3 kernels whose only non-zero tap is the centre, the ConvGRU is a GRU per pixel."""
    torch.manual_seed(7)
    gru = paper.ConvGRU(hidden=3, inputs=2)
    with torch.no_grad():
        for conv in (gru.convz, gru.convr, gru.convq):
            centre = conv.weight[:, :, 1, 1].clone()
            conv.weight.zero_()
            conv.weight[:, :, 1, 1] = centre
    h, u = torch.randn(1, 3, 4, 4), torch.randn(1, 2, 4, 4)
    out = gru(h, u)
    wz, wr, wq = (c.weight[:, :, 1, 1] for c in (gru.convz, gru.convr, gru.convq))
    bz, br, bq = gru.convz.bias, gru.convr.bias, gru.convq.bias
    for i in range(4):
        for j in range(4):
            hv, uv = h[0, :, i, j], u[0, :, i, j]
            z = torch.sigmoid(wz @ torch.cat([hv, uv]) + bz)
            r = torch.sigmoid(wr @ torch.cat([hv, uv]) + br)
            q = torch.tanh(wq @ torch.cat([r * hv, uv]) + bq)
            torch.testing.assert_close(out[0, :, i, j], (1 - z) * hv + z * q, atol=1e-5, rtol=1e-5)


def test_matched_step_size_is_the_best_error_at_or_above_the_psnr_floor():
    b = paper.BaselineResult(
        method="gd",
        lrs=[0.1, 0.3, 1.0],
        best_error_curve=[[0.4, 0.3], [0.2, 0.1], [0.05, 0.01]],
        best_psnr_curve=[[40.0, 38.0], [30.0, 28.0], [20.0, 18.0]],
    )
    assert b.matched(2, 25.0) == 1
    assert b.matched(1, 19.0) == 2
    assert b.matched(2, 50.0) is None


def test_message_batches_are_a_function_of_the_step():
    cfg = paper.PRESETS["smoke"]
    images = torch.rand(40, 1, 6, 6)
    a, b = paper.MessageBatches(images, cfg), paper.MessageBatches(images, cfg)
    for step in (7, 0, 12):
        for x, y in zip(a(step), b(step)):
            assert torch.equal(x, y)
    assert not torch.equal(a(0)[1], a(1)[1])


def test_bad_options_name_the_valid_choices():
    with pytest.raises(CompanionError, match="dataset 'imagenet'.*mnist_subset"):
        paper.PRESETS["smoke"].replace(dataset="imagenet")
    with pytest.raises(CompanionError, match="baseline 'lbfgs'.*gd, adam"):
        paper.PRESETS["smoke"].replace(baselines=("lbfgs",))
    with pytest.raises(ValueError, match="unknown method"):
        paper.optimize_image(
            _linear_decoder(),
            torch.zeros(1, 1, 2, 2),
            torch.zeros(1, 2, 2, 2),
            1,
            0.1,
            method="sgd",
        )


def test_tiny_run_round_trips_and_its_claims_print(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        device="cpu", steps=2, eval_images=4, baseline_iters=3, gd_lrs=(0.3,), adam_lrs=(0.03,)
    )
    result = paper.run(cfg, out_dir=tmp_path)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))
    assert len(loaded.liso.best_error_curve) == cfg.iters
    assert set(loaded.baselines) == {"gd", "adam"}
    text = str(paper.check_claims(loaded))
    assert text.splitlines()[-1].startswith("claims hold: ")
