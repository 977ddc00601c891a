"""sigma_reparam against independent computations (SVD, closed forms, brute force)."""

import math

import pytest
import torch
from torch import nn

from companion.core import ExerciseError
from companion.errors import CompanionError
from companion.nn import ViT
from companion.papers import sigma_reparam as paper


def test_power_iteration_converges_to_spectral_norm():
    torch.manual_seed(0)
    layer = paper.SigmaReparam(nn.Linear(40, 30))
    with torch.no_grad():
        layer.weight.normal_()  # a new W: u starts far from its top vector
        for _ in range(200):
            layer.spectral_norm()
    assert layer.sigma.item() == pytest.approx(
        torch.linalg.matrix_norm(layer.weight, 2).item(), rel=1e-4
    )


def test_reparametrized_weight_has_spectral_norm_gamma():
    torch.manual_seed(1)
    layer = paper.SigmaReparam(nn.Linear(16, 24))
    with torch.no_grad():
        layer.gamma.fill_(2.5)
        w_hat = layer.reparametrized_weight()
    # u starts at the top singular vector, so one step is already exact
    assert torch.linalg.matrix_norm(w_hat, 2).item() == pytest.approx(2.5, rel=1e-4)


def test_conversion_keeps_the_function_at_initialization():
    torch.manual_seed(2)
    model = ViT(image_size=8, patch_size=2, in_channels=1, dim=16, depth=2, heads=2)
    x = torch.rand(4, 1, 8, 8)
    before = model(x)
    paper.convert_to_sigma_reparam(model)
    assert not any(type(m) in (nn.Linear, nn.Conv2d) for m in model.modules())
    n_sr = sum(isinstance(m, paper.SigmaReparam) for m in model.modules())
    assert n_sr == 1 + 2 * 6 + 1  # patch conv, 6 linears per block, head
    torch.testing.assert_close(model(x), before, atol=1e-5, rtol=1e-4)


def test_gradient_flows_through_sigma_and_gamma():
    torch.manual_seed(3)
    layer = paper.SigmaReparam(nn.Linear(8, 8))
    layer(torch.randn(5, 8)).pow(2).sum().backward()
    assert layer.weight.grad is not None and layer.gamma.grad is not None
    # the gradient of γ/σ(W)·W wrt W is orthogonal to W's top singular direction scaled...:
    # scaling W leaves Ŵ unchanged, so the gradient has no component along W itself
    assert abs((layer.weight.grad * layer.weight).sum().item()) < 1e-4


def test_eval_mode_does_not_update_u():
    torch.manual_seed(4)
    layer = paper.SigmaReparam(nn.Linear(12, 10))
    with torch.no_grad():
        layer.weight.normal_()
    layer.eval()
    u0 = layer.u.clone()
    layer(torch.randn(3, 12))
    torch.testing.assert_close(layer.u, u0, atol=0, rtol=0)
    layer.train()
    layer(torch.randn(3, 12))
    assert not torch.equal(layer.u, u0)


def test_u_is_saved_in_state_dict():
    layer = paper.SigmaReparam(nn.Linear(6, 6))
    assert {"u", "sigma", "gamma", "weight", "bias"} <= set(layer.state_dict())


def test_conv_layer_matches_flattened_linear_spectral_norm():
    torch.manual_seed(5)
    layer = paper.SigmaReparam(nn.Conv2d(3, 8, 2, stride=2))
    out = layer(torch.randn(2, 3, 8, 8))
    assert out.shape == (2, 8, 4, 4)
    assert layer.sigma.item() == pytest.approx(
        torch.linalg.matrix_norm(layer.weight.flatten(1), 2).item(), rel=1e-4
    )


def test_entropy_of_uniform_attention_is_log_T():
    for T in (2, 17, 100):
        probs = torch.full((3, T, T), 1.0 / T)
        torch.testing.assert_close(paper.attention_entropy(probs), torch.full((3, T), math.log(T)))


def test_entropy_of_one_hot_attention_is_zero():
    assert paper.attention_entropy(torch.eye(5)).abs().max().item() < 1e-9


def test_bound_holds_on_random_logits_and_is_tight():
    torch.manual_seed(6)
    T = 17
    for sigma in (0.1, 1.0, 3.0, 8.0, 20.0):
        z = torch.nn.functional.normalize(torch.randn(5000, T, dtype=torch.float64), dim=-1)
        ent = paper.attention_entropy(torch.softmax(sigma * z, -1))
        bound = paper.entropy_lower_bound(sigma, T)
        assert (ent >= bound - 1e-9).all()
        c = sigma / math.sqrt(T * (T - 1))
        z_star = c * torch.tensor([T - 1.0] + [-1.0] * (T - 1), dtype=torch.float64)
        tight = paper.attention_entropy(torch.softmax(z_star, -1))
        assert tight.item() == pytest.approx(bound.item(), abs=1e-9)
    assert paper.entropy_lower_bound(0.0, T).item() == pytest.approx(math.log(T))


def test_bound_decreases_in_sigma():
    values = paper.entropy_lower_bound(torch.linspace(0, 30, 100), 17)
    assert (values[1:] < values[:-1]).all()


def test_centered_logit_norm():
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    assert paper.centered_logit_norm(scores).item() == pytest.approx(math.sqrt(2))


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"].replace(lr=1e-3)
    assert cfg.lr == 1e-3 and paper.PRESETS["notebook"].lr != 1e-3
    for bad, text in (
        ({"lrr": 1}, "lrr"),
        ({"lr": "fast"}, "lr"),
        ({"device": "tpu"}, "tpu"),
        ({"methods": ("baseline", "magic")}, "magic"),
        ({"dataset": "imagenet21k"}, "imagenet21k"),
        ({"heads": 5}, "heads"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert set(result.arms) == {"baseline", "sigma_reparam"}
    arm = result.arms["sigma_reparam"]
    assert len(arm.entropy) == cfg.depth
    assert len(arm.loss) == cfg.steps
    assert all(0 <= e <= result.log_T + 1e-6 for layer in arm.entropy for e in layer)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.arms["baseline"].loss == result.arms["baseline"].loss
    report = paper.check_claims(result)
    assert len(report.rows) == 4
    assert str(report).endswith(f"claims hold: {report.n_hold}/4")
    assert "loss spikiness" in report.note  # measured, printed, not counted
    # the bound is a theorem: an invariant at any scale, not a claim counted in K/N
    assert [inv.holds for inv in report.invariants] == [True]
    assert "Theorem 3.1" in str(report)


def test_check_claims_reports_failure_when_effect_is_absent(tmp_path):
    """Claims are computed, not typed: swapping the arms must make the entropy claims fail."""
    result = paper.run(paper.PRESETS["smoke"])
    swapped = paper.Result(
        config=result.config,
        tokens=result.tokens,
        arms={"baseline": result.arms["sigma_reparam"], "sigma_reparam": result.arms["baseline"]},
    )
    for arm in swapped.arms.values():
        arm.min_head_entropy[-1] = 0.0  # both collapsed: σReparam claim must fail
    assert not paper.check_claims(swapped).rows[1].holds


def test_a_tie_is_not_a_hold():
    """Comparative rows need their margin: identical arms fail them."""
    result = paper.run(paper.PRESETS["smoke"])
    twin = paper.Result(
        config=result.config,
        tokens=result.tokens,
        arms={"baseline": result.arms["baseline"], "sigma_reparam": result.arms["baseline"]},
    )
    rows = {row.claim: row for row in paper.check_claims(twin).rows}
    assert not rows["σReparam keeps the attention logits small"].holds


def test_loss_spikiness_on_known_curves():
    from companion.papers.sigma_reparam.claims import loss_spikiness

    def arm(loss):
        return paper.ArmResult(
            method="baseline",
            loss_steps=list(range(len(loss))),
            loss=list(loss),
            measure_steps=[],
            entropy=[],
            min_head_entropy=[],
            logit_norm=[],
            bound_points=[],
            test_accuracy=0.0,
            diverged=False,
            seconds=0.0,
        )

    falling = [2.0 - 0.01 * i for i in range(100)]
    assert loss_spikiness(arm(falling)) == 0.0
    spiked = list(falling)
    spiked[80:90] = [s + 0.5 for s in spiked[80:90]]  # ten steps 0.5 higher
    # the 10-step mean over the spike is 0.5 higher, less the 0.1 the loss fell in ten steps
    assert loss_spikiness(arm(spiked)) == pytest.approx(0.5 - 0.1, abs=1e-9)
    assert loss_spikiness(arm(falling[:50] + [float("nan")] * 50)) == float("inf")


def test_exercise_checks_reject_wrong_answers():
    from companion.core import check_close

    with pytest.raises(ExerciseError, match="differs"):
        check_close(torch.ones(3), torch.zeros(3), "x")
    with pytest.raises(ExerciseError, match="shape"):
        check_close(torch.ones(3), torch.zeros(4), "x")


def test_attention_measurements_are_float32_under_bf16_mixed():
    """Under bf16-mixed, Fabric's wrapper runs the forward under autocast; attention statistics
    are measured on the float32 model all the same (bf16 probabilities broke Theorem 3.1)."""
    from lightning_fabric import Fabric

    torch.manual_seed(0)
    model = paper.build_model(paper.PRESETS["smoke"], "baseline", 1, 10).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8.0)  # sharper attention than at initialization
    probe = torch.rand(8, 1, 8, 8)
    with torch.no_grad():
        expected = paper.attention_stats(model, probe)
        wrapped = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed").setup_module(model)
        assert paper.attention_stats(wrapped, probe) == expected


def test_theorem_bound_holds_at_bf16_mixed_on_the_cifar_fixture(tmp_path):
    """The full preset (bf16-mixed) on the CIFAR fixture: every measured row is on or above
    Theorem 3.1's bound, so the invariant holds as it does at 32-true."""
    from companion.core.fullscale import full_config
    from companion.papers.sigma_reparam.claims import bound_holds_fraction

    _, _, cfg = full_config("sigma_reparam", tmp_path / "data", "tiny", device="cpu")
    assert cfg.precision == "bf16-mixed"
    result = paper.run(cfg.replace(lr=1e-2, steps=6, checkpoint_every=0))
    assert bound_holds_fraction(result) == 1.0
    assert paper.check_claims(result).invariants[0].holds
