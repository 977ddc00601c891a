"""mega against independent computations (direct sums, loops, the official formulas)."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers import mega as paper
from companion.papers.mega.claims import steps_to


def _kernel_by_loops(ema, length):
    """K_d[l] = (1/√n) Σ_j γ_dj α_dj β_dj (1 − α_dj δ_dj)^l, one number at a time."""
    a, dl = torch.sigmoid(ema.alpha[..., 0]), torch.sigmoid(ema.delta[..., 0])
    b, g = ema.beta[..., 0], ema.gamma
    k = torch.zeros(a.shape[0], length, dtype=torch.float64)
    for d in range(a.shape[0]):
        for j in range(a.shape[1]):
            for lag in range(length):
                k[d, lag] += (
                    g[d, j] * a[d, j] * b[d, j] * (1 - a[d, j] * dl[d, j]) ** lag
                ).item() / math.sqrt(ema.ndim)
    return k


def test_kernel_matches_the_closed_form():
    torch.manual_seed(0)
    ema = paper.MultiDimEMA(3, ndim=4)
    with torch.no_grad():
        k = ema.kernel(7)
    torch.testing.assert_close(k.double(), _kernel_by_loops(ema, 7), atol=1e-6, rtol=1e-5)


def test_fft_equals_direct_convolution_and_recurrence():
    torch.manual_seed(1)
    ema = paper.MultiDimEMA(4, ndim=3)
    x = torch.randn(2, 13, 4)
    k = _kernel_by_loops(ema, 13)
    direct = torch.zeros(2, 13, 4, dtype=torch.float64)
    for t in range(13):
        for s in range(t + 1):
            direct[:, t] += k[:, t - s] * x[:, s].double()
    with torch.no_grad():
        fft, rec = ema.ema(x), paper.ema_recurrence(ema, x)
    torch.testing.assert_close(fft.double(), direct, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(rec, fft, atol=1e-5, rtol=1e-4)


def test_fft_of_length_L_would_wrap_around():
    """The pitfall the 2L FFT avoids: a length-L circular convolution adds the tail back."""
    torch.manual_seed(2)
    ema = paper.MultiDimEMA(2, ndim=2)
    with torch.no_grad():
        ema.delta.fill_(-4.0)  # slow decay: the wrapped tail is large
        x = torch.randn(1, 16, 2)
        k = ema.kernel(16)
        n = 16
        wrapped = torch.fft.irfft(
            torch.fft.rfft(x.transpose(1, 2), n=n) * torch.fft.rfft(k, n=n), n=n
        ).transpose(1, 2)
        assert (wrapped - paper.ema_recurrence(ema, x)).abs().max() > 1e-2
        torch.testing.assert_close(ema.ema(x), paper.ema_recurrence(ema, x), atol=1e-5, rtol=1e-4)


def test_bidirectional_ema_is_the_two_sided_sum():
    torch.manual_seed(3)
    ema = paper.MultiDimEMA(3, ndim=2, bidirectional=True)
    x = torch.randn(2, 9, 3)
    k = _kernel_by_loops(ema, 9)
    k1, k2 = k[:3], k[3:]
    direct = torch.zeros(2, 9, 3, dtype=torch.float64)
    for t in range(9):
        for s in range(9):
            w = k1[:, t - s] if s <= t else k2[:, s - t]
            direct[:, t] += w * x[:, s].double()
    with torch.no_grad():
        torch.testing.assert_close(ema.ema(x).double(), direct, atol=1e-5, rtol=1e-4)


def test_ema_layer_output_and_initialization():
    torch.manual_seed(4)
    ema = paper.MultiDimEMA(5, ndim=4)
    x = torch.randn(1, 6, 5)
    with torch.no_grad():
        torch.testing.assert_close(ema(x), F.silu(ema.ema(x) + ema.omega * x))
    signs = torch.sign(ema.beta[..., 0])
    assert (signs == torch.tensor([1.0, -1.0, 1.0, -1.0])).all()


def test_laplace_is_a_gaussian_cdf():
    x = torch.linspace(-1, 2, 31, dtype=torch.float64)
    normal = torch.distributions.Normal(0.707107, 0.282095)
    torch.testing.assert_close(paper.laplace(x), normal.cdf(x))
    assert paper.laplace(torch.tensor(0.707107)).item() == pytest.approx(0.5)


def test_relative_position_bias_matches_the_official_tiling():
    torch.manual_seed(5)
    rpb = paper.RelativePositionBias(6)
    length = 4
    # fairseq/modules/relative_positional_bias.py SimpleRelativePositionalBias.forward
    b = rpb.bias[(6 - length) : (6 + length - 1)]
    t = F.pad(b, (0, length))
    t = torch.tile(t, (length,))[:-length].view(length, 3 * length - 2)
    r = (2 * length - 1) // 2
    official = t[:, r : t.size(1) - r]
    torch.testing.assert_close(rpb(length), official)
    with pytest.raises(CompanionError, match="max_positions"):
        rpb(7)


def _layer_by_loops(layer, x):
    """The layer's equations for one sequence, attention query by query within its chunk."""
    x0 = x[0]
    length = x0.shape[0]
    xn = layer.norm(x0)
    v = F.silu(xn @ layer.v_proj.weight.T + layer.v_proj.bias)
    mx = layer.move(xn[None])[0] if layer.use_ema else xn
    base = mx @ layer.mx_proj.weight.T + layer.mx_proj.bias
    d, z_, h_ = layer.embed_dim, layer.zdim, layer.hdim
    phi = torch.sigmoid(base[:, :d])
    z = F.silu(base[:, d : d + z_])
    r = F.silu(base[:, d + z_ : d + z_ + h_])
    hx = base[:, d + z_ + h_ :]
    q = z * layer.kappa[0] + layer.mu[0]
    k = z * layer.kappa[1] + layer.mu[1]
    c = layer.chunk_size if 0 < layer.chunk_size < length else length
    bias = layer.rel_pos_bias.bias
    m = layer.rel_pos_bias.max_positions
    o = torch.zeros(length, h_)
    for i in range(length):
        lo = (i // c) * c
        keys = range(lo, lo + c)
        s = torch.stack([q[i] @ k[j] for j in keys])
        b = torch.stack([bias[(j - lo) - (i - lo) + m - 1] for j in keys])
        if layer.attention == "softmax":
            w = torch.softmax(s / math.sqrt(z_) + b, dim=0)
        else:
            w = paper.laplace(s / c + b)
        o[i] = sum(w[n] * v[j] for n, j in enumerate(keys))
    hh = F.silu(hx + (o * r) @ layer.h_proj.weight.T + layer.h_proj.bias)
    return (phi * hh + (1 - phi) * x0)[None]


@pytest.mark.parametrize(
    "attention,chunk,use_ema", [("laplace", -1, True), ("softmax", 4, True), ("laplace", 4, False)]
)
def test_mega_layer_matches_equations_by_loops(attention, chunk, use_ema):
    torch.manual_seed(6)
    layer = paper.MegaLayer(8, 6, 10, 3, attention, chunk, 12, use_ema)
    with torch.no_grad():  # larger weights than the 0.02 init, so every term matters
        for p in layer.parameters():
            p.add_(0.3 * torch.randn_like(p))
        x = torch.randn(1, 12, 8)
        torch.testing.assert_close(layer(x), _layer_by_loops(layer, x), atol=1e-5, rtol=1e-4)


def test_chunk_as_long_as_the_sequence_is_full_attention():
    torch.manual_seed(7)
    full = paper.MegaLayer(8, 4, 8, 2, "laplace", -1, 16)
    chunked = paper.MegaLayer(8, 4, 8, 2, "laplace", 16, 16)
    chunked.load_state_dict(full.state_dict())
    x = torch.randn(2, 16, 8)
    with torch.no_grad():
        torch.testing.assert_close(chunked(x), full(x))
        with pytest.raises(CompanionError, match="divisible"):
            paper.MegaLayer(8, 4, 8, 2, "laplace", 5, 16)(x)


def test_motif_task_labels_by_brute_force():
    x, y = paper.motif_task(300, 20, 7, 3, seed=0)
    for row, label in zip(x.tolist(), y.tolist()):
        assert sorted(t for t in row if t < 3) == [0, 1, 2]
        found = any(row[i : i + 3] == [0, 1, 2] for i in range(18))
        assert found == bool(label)
    assert 0.35 < y.float().mean().item() < 0.65
    again = paper.motif_task(5, 20, 7, 3, 1)[0]
    torch.testing.assert_close(paper.motif_task(5, 20, 7, 3, 1)[0], again)


def test_loglog_slope_of_power_laws():
    n = [100, 200, 400, 800]
    assert paper.loglog_slope(n, [3e-3 * v for v in n]) == pytest.approx(1.0)
    assert paper.loglog_slope(n, [1e-6 * v**2 for v in n]) == pytest.approx(2.0)


def test_transformer_has_the_same_size():
    cfg = paper.PRESETS["notebook"]
    sizes = [paper.n_params(paper.build_model(cfg, arm)) for arm in paper.ARMS]
    assert max(sizes) / min(sizes) < 1.1  # the no-EMA arm lacks only the EMA's parameters
    mega, tf = sizes[0], sizes[2]
    assert abs(mega - tf) / mega < 0.01


def test_bad_options_name_the_choices():
    with pytest.raises(CompanionError, match="laplace"):
        paper.MegaLayer(8, 4, 8, 2, attention="relu")
    with pytest.raises(CompanionError, match="mega_no_ema"):
        paper.PRESETS["smoke"].replace(arms=("mega", "lstm"))


def test_smoke_run_saves_loads_and_claims_can_fail(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(device="cpu", steps=3, eval_every=3, timing_repeats=1)
    result = paper.run(cfg, out_dir=tmp_path)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert json.dumps(loaded.to_dict()) == json.dumps(result.to_dict())
    assert loaded.chunk_slope == result.chunk_slope
    report = paper.check_claims(loaded)
    assert len(report.rows) == 5 and str(report).splitlines()[-1].startswith("claims hold: ")
    assert len(result.full_seconds) >= 3  # full attention's slope is fitted on >= 3 lengths
    assert result.arms["mega"].fft_vs_recurrence < 1e-4
    figs = paper.figures(loaded)
    assert set(figs) == {"kernels", "accuracy", "timing"}
    assert all(f.axes and f.axes[0].has_data() for f in figs.values())
    # the same result with numbers that must fail every row, then hold every row
    result.timing_lengths = [100, 200, 400]
    result.chunk_seconds = [1e-6 * n**2 for n in result.timing_lengths]  # quadratic
    result.full_seconds = list(result.chunk_seconds)
    for arm in result.arms.values():
        arm.test_accuracy_curve = [0.5] * len(arm.eval_steps)
    assert paper.check_claims(result).n_hold == 0
    result.chunk_seconds = [1e-3 * n for n in result.timing_lengths]
    result.arms["mega"].test_accuracy_curve[0] = 0.95  # the target at the first evaluation
    assert paper.check_claims(result).n_hold == 5
    # reaching it at the same step as the others is a tie, not "faster"
    for arm in result.arms.values():
        arm.test_accuracy_curve = [0.95] * len(arm.eval_steps)
    assert paper.check_claims(result).n_hold == 3


def test_steps_to_target_and_the_baseline_position_bias():
    arm = paper.ArmResult("mega", 1, [], [], [0, 25, 50], [0.5, 0.92, 0.97], 0.97, [], [], 0.0, 1)
    assert steps_to(arm, 0.9) == 26 and steps_to(arm, 0.99) is None
    cfg = paper.PRESETS["smoke"]
    tf = paper.build_model(cfg, "transformer")
    biases = [m for m in tf.modules() if isinstance(m, paper.RelativePositionBias)]
    assert len(biases) == cfg.depth and not hasattr(tf, "pos")  # Mega's position encoding only
