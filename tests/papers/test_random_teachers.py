"""random_teachers against independent computations (direct formulas, scikit-learn, counts)."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError
from companion.papers import random_teachers as paper


def small_model(seed: int = 0, widths=(8, 8, 8)) -> paper.DINOModel:
    model = paper.DINOModel(
        paper.ConvEncoder(1, widths, pool_after=(1,)), paper.DINOHead(widths[-1], (32,), 16, 64)
    )
    return paper.reset_parameters(model, torch.Generator().manual_seed(seed))


# --- Eq. 1 -------------------------------------------------------------------------------------


def test_distillation_loss_matches_direct_formula():
    torch.manual_seed(0)
    s, t = torch.randn(5, 7), torch.randn(5, 7)
    tau_s, tau_t = 0.3, 0.7
    ce, kl = paper.distillation_loss(s, t, tau_s, tau_t)
    ce_direct, kl_direct = 0.0, 0.0
    for i in range(5):  # written out: p_T,k = exp(t_k/τ_t) / Σ_j exp(t_j/τ_t), likewise p_S
        p_t = [math.exp(v / tau_t) for v in t[i].tolist()]
        p_t = [v / sum(p_t) for v in p_t]
        p_s = [math.exp(v / tau_s) for v in s[i].tolist()]
        p_s = [v / sum(p_s) for v in p_s]
        ce_direct += -sum(a * math.log(b) for a, b in zip(p_t, p_s)) / 5
        kl_direct += sum(a * math.log(a / b) for a, b in zip(p_t, p_s)) / 5
    assert ce.item() == pytest.approx(ce_direct, rel=1e-5)
    assert kl.item() == pytest.approx(kl_direct, rel=1e-4)
    reference = F.kl_div(
        F.log_softmax(s / tau_s, -1),
        F.log_softmax(t / tau_t, -1),
        log_target=True,
        reduction="batchmean",
    )
    assert kl.item() == pytest.approx(reference.item(), rel=1e-4)


def test_loss_is_minimal_and_kl_zero_when_student_matches_teacher():
    t = torch.randn(4, 10)
    s = t.clone().requires_grad_(True)
    ce, kl = paper.distillation_loss(s, t)
    entropy = -(t.softmax(-1) * t.log_softmax(-1)).sum(-1).mean()
    assert kl.item() == pytest.approx(0.0, abs=1e-6)
    assert ce.item() == pytest.approx(entropy.item(), rel=1e-6)
    ce.backward()
    assert s.grad.abs().max().item() < 1e-7  # softmax(s) - softmax(t) = 0


def test_no_gradient_reaches_teacher_logits():
    t = torch.randn(3, 5, requires_grad=True)
    s = torch.randn(3, 5, requires_grad=True)
    paper.distillation_loss(s, t)[0].backward()
    assert t.grad is None and s.grad is not None


# --- symmetry breaking and the frozen teacher ------------------------------------------------


def test_identical_weights_and_modes_give_zero_gradient():
    """The symmetry argument: only the BatchNorm mode makes a copied student move. (The gradient
    is zero in exact arithmetic; float64 leaves rounding of order 1e-16.)"""
    teacher, student = paper.make_teacher_student(small_model, 0.0, seed=3)
    teacher, student = teacher.double(), student.double()
    x = torch.randn(16, 1, 8, 8, dtype=torch.float64)
    step = paper.DistillationStep(teacher)
    student.eval()  # same weights, same mode (running statistics) as the teacher
    step(student, (x,))[0].backward()
    assert max(p.grad.abs().max().item() for p in student.parameters()) < 1e-12
    student.zero_grad(set_to_none=True)
    student.train()  # batch statistics: outputs differ, the gradient does not vanish
    step(student, (x,))[0].backward()
    assert max(p.grad.abs().max().item() for p in student.parameters()) > 1e-4


def test_teacher_stays_frozen_while_student_learns():
    teacher, student = paper.make_teacher_student(small_model, 0.0, seed=1)
    before = copy.deepcopy(teacher.state_dict())
    start = copy.deepcopy(student.state_dict())
    step = paper.DistillationStep(teacher)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-3, weight_decay=0)
    assert not any(p.requires_grad for p in teacher.parameters()) and not teacher.training
    for _ in range(5):
        student.train()
        loss, metrics = step(student, (torch.randn(32, 1, 8, 8),))
        opt.zero_grad()
        loss.backward()
        opt.step()
    for name, value in teacher.state_dict().items():  # weights and BN running statistics
        torch.testing.assert_close(value, before[name], rtol=0, atol=0)
    assert not teacher.training
    assert not torch.equal(
        student.state_dict()["head.bottleneck.weight"], start["head.bottleneck.weight"]
    )
    assert paper.parameter_distance(student, teacher) > 0 and metrics["kl"] >= 0


# --- initialisation and interpolation --------------------------------------------------------


def test_interpolation_endpoints_and_midpoint():
    a, b = small_model(0), small_model(1)
    at0, at1, mid = (
        paper.interpolate(a, b, 0.0),
        paper.interpolate(a, b, 1.0),
        paper.interpolate(a, b, 0.5),
    )
    for p0, p1, pm, pa, pb in zip(*(m.parameters() for m in (at0, at1, mid, a, b))):
        torch.testing.assert_close(p0, pa, rtol=0, atol=0)  # α = 0: an exact copy
        torch.testing.assert_close(p1, pb)
        torch.testing.assert_close(pm, (pa + pb) / math.sqrt(2))
    assert paper.parameter_distance(at0, a) == 0.0
    with pytest.raises(ValueError):
        paper.interpolate(a, b, 1.5)


def test_interpolation_preserves_variance_of_iid_weights():
    torch.manual_seed(0)
    a, b = nn.Linear(1000, 1000, bias=False), nn.Linear(1000, 1000, bias=False)
    for m in (a, b):
        nn.init.normal_(m.weight, std=0.05)
    for alpha in (0.2, 0.5, 0.8):
        w = paper.interpolate(a, b, alpha).weight
        assert w.std().item() == pytest.approx(0.05, rel=0.01)


def test_distance_to_teacher_grows_with_alpha():
    teacher, _ = paper.make_teacher_student(small_model, 0.0, seed=2)
    dists = []
    for alpha in (0.0, 0.25, 0.5, 1.0):
        t, s = paper.make_teacher_student(small_model, alpha, seed=2)
        for p, q in zip(t.parameters(), teacher.parameters()):  # same teacher for every α
            torch.testing.assert_close(p, q, rtol=0, atol=0)
        dists.append(paper.parameter_distance(s, t))
    assert dists[0] == 0.0 and all(x < y for x, y in zip(dists, dists[1:]))


def test_official_initialisation_statistics():
    conv = nn.Conv2d(64, 128, 3, bias=False)
    lin = nn.Linear(512, 512)
    bn = nn.BatchNorm2d(8)
    with torch.no_grad():
        bn.weight.fill_(3.0)
        bn.running_mean.fill_(5.0)
    paper.reset_parameters(nn.ModuleList([conv, lin, bn]), torch.Generator().manual_seed(0))
    # Kaiming normal, fan_out = 128·3·3, ReLU gain √2
    assert conv.weight.std().item() == pytest.approx(math.sqrt(2 / (128 * 9)), rel=0.02)
    assert lin.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert lin.bias.abs().max().item() == 0
    assert bn.weight.eq(1).all() and bn.bias.eq(0).all() and bn.running_mean.eq(0).all()
    a, b = small_model(7), small_model(7)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


# --- architecture ----------------------------------------------------------------------------


def test_head_normalises_bottleneck_and_weight_norm_bounds_logits():
    head = paper.DINOHead(16, (32, 32), 8, 50, weight_norm=True)
    with torch.no_grad():
        head.last_layer.weight.mul_(100.0)
    x = torch.randn(6, 16)
    z = F.normalize(head.bottleneck(head.mlp(x)), dim=-1)
    assert z.norm(dim=-1).sub(1).abs().max() < 1e-6
    logits = head(x)  # cosine similarities with unit-length prototypes
    assert logits.shape == (6, 50) and logits.abs().max() <= 1 + 1e-6
    head.weight_norm = False
    assert head(x).abs().max() > 1


def test_resnet18_size_and_shapes():
    model = paper.ResNet18(3)
    x = torch.randn(2, 3, 32, 32)
    assert model(x).shape == (2, 512) and model.embed_dim == 512
    # torchvision's resnet18 has 11,689,512 parameters: minus its fc (513,000) and 7×7 stem
    # (9,408), plus the 3×3 stem of the tiny-input variant (1,728)
    assert sum(p.numel() for p in model.parameters()) == 11_689_512 - 513_000 - 9_408 + 1_728


def test_recalibrated_batchnorm_holds_data_statistics_and_keeps_weights():
    model = small_model(4)
    x = torch.randn(200, 1, 8, 8) * 2 + 1
    recal = paper.recalibrate_batchnorm(model, x)
    conv, bn = recal.encoder.features[0], recal.encoder.features[1]
    h = conv(x)  # the first BatchNorm sees the first convolution's output
    torch.testing.assert_close(bn.running_mean, h.mean(dim=(0, 2, 3)), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(
        bn.running_var, h.transpose(0, 1).flatten(1).var(dim=1), rtol=1e-4, atol=1e-5
    )
    assert not recal.training
    for p, q in zip(recal.parameters(), model.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    assert model.encoder.features[1].running_mean.eq(0).all()  # the original is untouched


# --- probes ----------------------------------------------------------------------------------


def test_embed_restores_training_mode():
    model = small_model()
    model.train()
    out = paper.embed(model.encoder, torch.randn(5, 1, 8, 8), batch_size=2)
    assert out.shape == (5, 8) and model.encoder.training


# --- experiment ------------------------------------------------------------------------------


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"].replace(lr=3e-4)
    assert cfg.lr == 3e-4 and paper.PRESETS["notebook"].lr == 1e-3
    for bad, text in (
        ({"lrr": 1}, "lrr"),
        ({"lr": "fast"}, "lr"),
        ({"device": "tpu"}, "tpu"),
        ({"dataset": "imagenet"}, "imagenet"),
        ({"encoder": "vit"}, "vit"),
        ({"alphas": (0.0, 1.5)}, "alphas"),
        ({"alphas": (0.5, 0.5)}, "distinct"),
        ({"pool_after": (9,)}, "pool_after"),
        ({"teacher_temp": 0.0}, "temperatures"),
    ):
        with pytest.raises(CompanionError, match=text):
            paper.PRESETS["smoke"].replace(**bad)


def test_smoke_run_save_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    result = paper.run(cfg, out_dir=tmp_path)
    assert result.alphas == [0.0, 1.0]
    arm = result.arm(0.0)
    assert arm.probe_steps == [0, 10, 20] and len(arm.loss) == cfg.steps
    # α = 0 starts as the teacher: at step 0 its encoder is the teacher's (eval mode), exactly
    assert arm.linear[0] == result.teacher["linear"] and arm.knn[0] == result.teacher["knn"]
    assert arm.distance_to_teacher[0] == 0 and arm.distance_to_teacher[-1] > 0
    # for α = 0 the start is the teacher: both distances are the same numbers
    assert arm.distance_to_start == pytest.approx(arm.distance_to_teacher)
    assert result.arm(1.0).distance_to_teacher[0] > 0
    assert all(v >= -1e-6 for v in arm.kl)
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.arm(1.0).knn == result.arm(1.0).knn and loaded.teacher == result.teacher
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)  # everything finished: reloaded
    assert resumed.to_dict() == result.to_dict()
    report = paper.check_claims(result)
    assert len(report.rows) == 3
    assert str(report).endswith(f"claims hold: {report.n_hold}/3")
    # by construction, never counted as claims: the copy starts at the teacher, KL >= 0
    assert len(report.invariants) == 2 and all(inv.holds for inv in report.invariants)
    _, test, _, _ = paper.load_data(cfg)
    assert result.n_test == len(test[1]) == loaded.n_test
    assert set(paper.figures(result)) == {"probes", "locality", "training"}


def test_interrupted_student_resumes_to_the_same_result(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(alphas=(0.0,), steps=20, checkpoint_every=10)
    straight = paper.run(cfg)
    paper.run(cfg.replace(steps=10), out_dir=tmp_path)  # "interrupted" after 10 steps
    (tmp_path / "alpha_0" / "arm.json").unlink()
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    a, b = straight.arm(0.0), resumed.arm(0.0)
    assert b.loss_steps == list(range(1, 21)) and b.probe_steps == [0, 10, 20]
    assert a.loss == b.loss and a.knn == b.knn and a.linear == b.linear


def test_run_is_deterministic():
    cfg = paper.PRESETS["smoke"].replace(alphas=(0.5,), steps=10)
    first, second = paper.run(cfg).arm(0.5), paper.run(cfg).arm(0.5)
    first.seconds = second.seconds = 0.0  # wall-clock time is the one thing allowed to differ
    assert first == second


def test_check_claims_reports_failure_when_effect_is_absent():
    """Claims are computed, not typed: a teacher as good as its students fails them."""
    result = paper.run(paper.PRESETS["smoke"].replace(steps=10))
    best = {
        p: max(getattr(a, f"final_{p}") for a in result.students.values())
        for p in ("linear", "knn")
    }
    result.teacher = best
    report = paper.check_claims(result)
    assert not report.rows[0].holds and not report.rows[1].holds
    # the note's resolution is computed from this run's held-out set, not typed for the digits
    assert f"one of the {result.n_test} held-out images is {100 / result.n_test:.2f} pts" in (
        report.note
    )
    result.n_test = 300
    assert "one of the 300 held-out images is 0.33 pts" in paper.check_claims(result).note


def test_cifar_path_with_resnet18_on_a_fixture(tmp_path):
    from companion.data import write_cifar_fixture

    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=16, n_test=8)
    cfg = paper.PRESETS["full"].replace(
        data_root=str(folder),
        hidden_dims=(32,),
        bottleneck_dim=8,
        out_dim=16,
        alphas=(0.0,),
        batch_size=4,
        steps=1,
        measure_every=1,
        probe_k=5,
        probe_epochs=1,
        checkpoint_every=0,
        device="cpu",
    )
    result = paper.run(cfg)
    assert result.arm(0.0).probe_steps == [0, 1]
    assert 0 <= result.teacher["linear"] <= 1
