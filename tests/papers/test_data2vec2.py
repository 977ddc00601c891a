"""data2vec2 against independent computations (loops, closed forms, brute force)."""

import math

import pytest
import torch

from companion.errors import CompanionError
from companion.nn.vit import Block
from companion.papers import data2vec2 as paper


def tiny_model(target="contextualized", clones=3, **kw):
    torch.manual_seed(0)
    enc = paper.Encoder(8, 2, 1, dim=16, depth=2, heads=2, prenet_depth=1, mlp_ratio=2.0)
    return paper.Data2Vec2(
        enc,
        target=target,
        clones=clones,
        top_k=2,
        mask_ratio=0.75,
        mask_block=2,
        decoder_dim=16,
        **kw,
    )


def test_block_squares_matches_a_loop():
    torch.manual_seed(0)
    grid, block = 7, 3
    centres = torch.randint(0, grid * grid, (4, 3))
    got = paper.block_squares(centres, grid, block)
    for b in range(4):
        want = torch.zeros(grid, grid)
        for c in centres[b].tolist():
            r0, c0 = divmod(c, grid)
            for i in range(block):  # offsets i - block // 2, clipped (compute_block_mask_2d)
                for j in range(block):
                    rr = min(max(r0 + i - block // 2, 0), grid - 1)
                    cc = min(max(c0 + j - block // 2, 0), grid - 1)
                    want[rr, cc] = 1
        assert torch.equal(got[b], want.flatten())


@pytest.mark.parametrize("grid,ratio,block", [(6, 0.8, 2), (7, 0.8, 2), (14, 0.8, 3), (4, 0.5, 2)])
def test_inverse_block_mask_keeps_exactly_the_official_count(grid, ratio, block):
    g = torch.Generator().manual_seed(1)
    mask = paper.inverse_block_mask(64, grid, ratio, block, 0.07, g)
    n_keep = int(grid * grid * (1 - ratio))  # final_target_len = int(L * mask_prob)
    assert mask.shape == (64, grid * grid)
    assert ((~mask).sum(1) == n_keep).all()


def test_inverse_block_mask_keeps_squares_when_they_fit():
    # one centre, keep share exactly one 2×2 square: the kept patches are that square
    g = torch.Generator().manual_seed(3)
    grid = 8
    mask = paper.inverse_block_mask(200, grid, 1 - 4 / 64, 2, adjust=0.0, generator=g)
    for row in mask:
        kept = torch.nonzero(~row.view(grid, grid))
        rows, cols = kept[:, 0], kept[:, 1]
        if rows.max() - rows.min() == 1 and cols.max() - cols.min() == 1:
            continue  # an unclipped square
        # a square clipped at the border collapses to fewer cells, topped up at random
        assert (
            (rows.min() == 0)
            | (cols.min() == 0)
            | (rows.max() == grid - 1)
            | (cols.max() == grid - 1)
        )


def test_visible_indices_are_the_unmasked_patches_in_order():
    mask = torch.tensor([[True, False, True, False], [False, False, True, True]])
    assert paper.visible_indices(mask).tolist() == [[1, 3], [0, 1]]


def test_sincos_positions_match_mae_formula():
    dim, grid = 8, 3
    pos = paper.sincos_positions_2d(dim, grid)
    omega = [1 / 10000 ** (k / 2) for k in range(2)]
    for r in range(grid):
        for c in range(grid):
            want = (
                [math.sin(c * w) for w in omega]
                + [math.cos(c * w) for w in omega]
                + [math.sin(r * w) for w in omega]
                + [math.cos(r * w) for w in omega]
            )
            assert pos[r * grid + c].tolist() == pytest.approx(want, abs=1e-6)


def test_block_forward_equals_the_vit_block():
    torch.manual_seed(0)
    block = Block(16, 2, 2.0)
    x = torch.randn(3, 5, 16)
    out, ffn = paper.block_forward(block, x)
    torch.testing.assert_close(out, block(x))  # residual kept (not the pre-LN 2·FFN bug)
    h = x + block.attn(block.norm1(x))
    torch.testing.assert_close(ffn, block.mlp(block.norm2(h)))


def test_make_targets_against_loops():
    torch.manual_seed(0)
    layers = [torch.randn(2, 5, 4) * (i + 1) + i for i in range(3)]
    got = paper.make_targets(layers, top_k=2)
    normed = []
    for a in layers[-2:]:  # instance norm: per image and feature, over tokens (biased var)
        mu = a.mean(dim=1, keepdim=True)
        var = a.var(dim=1, unbiased=False, keepdim=True)
        normed.append((a - mu) / torch.sqrt(var + 1e-5))
    y = (normed[0] + normed[1]) / 2
    mu, var = y.mean(-1, keepdim=True), y.var(-1, unbiased=False, keepdim=True)
    torch.testing.assert_close(got, (y - mu) / torch.sqrt(var + 1e-5), atol=1e-5, rtol=1e-5)


def test_ema_decay_schedule_and_update():
    assert paper.ema_decay(0, 0.99, 0.999, 100) == pytest.approx(0.99)
    assert paper.ema_decay(50, 0.99, 0.999, 100) == pytest.approx(0.9945)
    assert paper.ema_decay(500, 0.99, 0.999, 100) == 0.999
    s, t = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    want = 0.9 * t.weight.detach() + 0.1 * s.weight.detach()
    paper.ema_update(t, s, 0.9)
    torch.testing.assert_close(t.weight, want)


def test_student_output_ignores_masked_patches():
    model = tiny_model()
    x = torch.rand(2, 1, 8, 8)
    mask = paper.inverse_block_mask(2, 4, 0.75, 2, generator=torch.Generator().manual_seed(0))
    keep = paper.visible_indices(mask)
    y = x.clone()
    patches = y.view(2, 1, 4, 2, 4, 2)
    for b in range(2):
        for k in torch.nonzero(mask[b]).flatten().tolist():  # scramble every masked patch
            patches[b, 0, k // 4, :, k % 4, :] = torch.rand(2, 2) * 10
    with torch.no_grad():
        torch.testing.assert_close(model.student(x, keep=keep), model.student(y, keep=keep))
        assert not torch.allclose(model.student(x), model.student(y))


def test_decoder_input_and_decoder_shapes():
    torch.manual_seed(0)
    visible = torch.randn(2, 3, 16)
    keep = torch.tensor([[0, 5, 9], [1, 2, 15]])
    x = paper.decoder_input(visible, keep, 16, noise_std=0.01)
    torch.testing.assert_close(x[0, [0, 5, 9]], visible[0])
    others = [i for i in range(16) if i not in (1, 2, 15)]
    assert x[1, others].abs().max() < 0.1  # N(0, 0.01²) noise at masked slots
    dec = paper.Decoder2d(16, 4, 16, layers=2, kernel=3, groups=4)
    assert dec(x).shape == (2, 16, 16)


def test_d2v_loss_and_pixel_targets():
    p, t = torch.ones(3, 4), torch.zeros(3, 4)
    assert paper.d2v_loss(p, t).tolist() == pytest.approx([4 / 2] * 3)  # sum / sqrt(D)
    img = torch.arange(16.0).view(1, 1, 4, 4)
    t = paper.pixel_targets(img, 2)
    first = torch.tensor([0.0, 1.0, 4.0, 5.0])
    torch.testing.assert_close(t[0, 0], (first - first.mean()) / (first.var() + 1e-6) ** 0.5)


def test_one_teacher_pass_serves_all_clones():
    model = tiny_model(clones=3).train()
    calls = []
    model.teacher.register_forward_hook(lambda *a: calls.append(1))
    x = torch.rand(4, 1, 8, 8)
    loss, metrics = model(x)
    assert len(calls) == 1 and torch.isfinite(loss)
    assert {"regression", "cls", "target_var", "pred_var"} <= set(metrics)
    loss.backward()
    assert all(p.grad is None for p in model.teacher.parameters())
    assert model.student.patch_embed.weight.grad is not None


def test_flop_share_and_equal_flop_schedule():
    model = tiny_model()
    share = paper.encoder_flop_share(model, torch.rand(2, 1, 8, 8))
    assert share["visible_patches"] == 4 and share["patches"] == 16
    assert share["encoder_flop_share"] < 0.5  # visible share 0.25 (+ the class token)
    cfg = paper.PRESETS["smoke"]
    costs = {"flops_per_step": {"multi_mask": 4e9, "single_mask": 2e9, "pixel_target": 1e9}}
    assert paper.arm_schedule(cfg, costs, "single_mask") == (cfg.steps, 2 * cfg.batch_size)
    steps_cfg = cfg.replace(equalize="steps")
    assert paper.arm_schedule(steps_cfg, costs, "pixel_target") == (4 * cfg.steps, cfg.batch_size)
    # the control: the multi-mask arm's steps and images, whatever the costs
    for c in (cfg, steps_cfg):
        assert paper.arm_schedule(c, costs, "single_mask_images") == (c.steps, c.batch_size)
        # the equal-clones control: the multi-mask arm's steps and its clones as distinct images
        clones = (c.steps, c.clones * c.batch_size)
        assert paper.arm_schedule(c, costs, "single_mask_clones") == clones


def test_probe_subset_covers_every_class():
    """The split is sorted by class: a prefix of the training set would miss whole classes."""
    cfg = paper.PRESETS["notebook"].replace(probe_images=600)
    train, test, channels, classes = paper.load_data(cfg)
    seen = []
    import companion.papers.data2vec2.experiment as ex

    real = ex.ridge_probe_accuracy
    try:
        ex.ridge_probe_accuracy = lambda tx, ty, *a: seen.append(ty) or 0.0
        enc = paper.build_model(cfg, "multi_mask", channels).student
        ex.probe(enc, train, test, classes, cfg, "cpu")
    finally:
        ex.ridge_probe_accuracy = real
    assert len(seen[0]) == 600 and len(torch.unique(seen[0])) == classes


def _result(random, multi, single, images, ratio=2.0, clones=None):
    arm = lambda name, acc, m: paper.ArmResult(  # noqa: E731
        arm=name,
        clones=m,
        target="contextualized",
        steps=10,
        batch_size=4,
        flops_per_step=1e6 * (4 if m > 1 else 1),
        loss_steps=[],
        loss=[],
        target_var=[],
        pred_var=[],
        probe_accuracy=acc,
        seconds=1.0,
    )
    single_arm = arm("single_mask", single, 1)
    single_arm.batch_size, single_arm.flops_per_step = 16, 4e6
    costs = {
        "encoder_flop_share": 0.15,
        "visible_patches": 7,
        "patches": 36,
        "sample_seconds": {"multi_mask": 1.0, "single_mask": ratio},
        "flops_per_sample": {"multi_mask": 1.0, "single_mask": 1.5, "pixel_target": 0.8},
    }
    arms = {
        "multi_mask": arm("multi_mask", multi, 4),
        "single_mask": single_arm,
        "single_mask_images": arm("single_mask_images", images, 1),
        "single_mask_clones": arm("single_mask_clones", images if clones is None else clones, 1),
    }
    return paper.Data2Vec2Result(
        config={"clones": 4, "mask_ratio": 0.8}, random_probe=random, arms=arms, costs=costs
    )


def test_claims_are_gated_on_the_premise_and_can_fail():
    # rows: trained premise, compute premise, equal images, equal clones, equal FLOPs, time
    ok = paper.check_claims(_result(0.60, 0.74, 0.72, 0.70))
    assert [r.holds for r in ok.rows] == [True] * 6
    tie = paper.check_claims(_result(0.60, 0.72, 0.72, 0.70, ratio=1.0))
    assert [r.holds for r in tie.rows] == [True, True, True, True, False, False]
    # the equal-clones control (M × distinct images) well above M clones: that row fails alone
    more_views = paper.check_claims(_result(0.60, 0.74, 0.72, 0.70, clones=0.76))
    assert [r.holds for r in more_views.rows] == [True, True, True, False, True, True]
    assert "0.740 vs 0.760" in more_views.rows[3].measured
    flat = paper.check_claims(_result(0.60, 0.70, 0.61, 0.61))  # the probe barely moved
    assert not flat.rows[0].holds and not flat.rows[2].premise_ok and not flat.rows[3].holds
    # compute does not show in the probe: the comparisons are not tested, whatever M clones do
    blind = paper.check_claims(_result(0.60, 0.80, 0.70, 0.70))
    assert blind.rows[0].holds and not blind.rows[1].holds
    assert not any(blind.rows[i].premise_ok or blind.rows[i].holds for i in (2, 3, 4))
    # a run without the equal-clones control (one stored before it existed) has no such row
    older = _result(0.60, 0.74, 0.72, 0.70)
    del older.arms["single_mask_clones"]
    rows = paper.check_claims(older).rows
    assert len(rows) == 5 and not any("equal clones" in r.claim for r in rows)


def test_paired_gain_reads_the_headline_row():
    def row(d, ok=True):
        return {"measured": f"probe 0.7 vs 0.7 (Δ {d:+.3f})", "holds": d > 0, "premise_ok": ok}

    claims = {
        "claims": [
            {"claim": "premise: x", "per_seed": {}},
            {
                "claim": paper.claims.HEADLINE + ", M = 4 clones beat M = 1",
                "per_seed": {
                    "0": row(0.01),
                    "1": row(0.012),
                    "2": row(0.008),
                    "3": row(-0.5, ok=False),
                },
            },
        ]
    }
    g = paper.paired_gain(claims)
    assert g["seeds"] == [0, 1, 2] and abs(g["mean"] - 0.01) < 1e-9 and g["holds"]
    assert abs(g["t"] - 4.303) < 1e-3  # t(0.975, 2), not 2
    claims["claims"][1]["per_seed"]["4"] = row(-0.03)
    assert not paper.paired_gain(claims)["holds"]
    # a premise-holding seed whose text does not parse raises instead of being dropped
    claims["claims"][1]["per_seed"]["5"] = {"measured": "arm not trained", "premise_ok": True}
    with pytest.raises(ValueError):
        paper.paired_gain(claims)
    # no seed with the premises: too few to test, never holds
    none = {"claims": [{"claim": paper.claims.HEADLINE, "per_seed": {"0": row(0.1, ok=False)}}]}
    g = paper.paired_gain(none)
    assert not g["holds"] and "too few" in paper.describe_gain(g, "x")


def test_bad_options_are_refused():
    cfg = paper.PRESETS["smoke"]
    with pytest.raises(CompanionError, match="valid"):
        cfg.replace(arms=("nope",))
    with pytest.raises(CompanionError, match="valid"):
        cfg.replace(equalize="time")
    with pytest.raises(CompanionError, match="top_k"):
        cfg.replace(top_k=5)


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/data2vec2.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def test_exercise_checks_fail_on_trivial_answers():
    from companion.core.exercises import ExerciseError

    fails = (ExerciseError, RuntimeError, TypeError, AttributeError)

    targets_check = _notebook_cell('report_ok("contextualized targets")')

    def run_targets(answer):
        exec(targets_check, {"torch": torch, "paper": paper, "my_targets": answer})

    official = paper.make_targets
    run_targets(lambda f, k: official(f, k))  # the formula passes (through a private copy)
    assert paper.make_targets is official  # the check restores the package's function
    planted = (
        paper.make_targets,  # the package's own function
        lambda f, k: paper.make_targets(f, k),  # a call to it
        lambda f, k: torch.zeros_like(f[0]),  # a constant
        lambda f, k: None,
        lambda f, k: f[-1],  # the last block, not normalized
    )
    for answer in planted:
        with pytest.raises(fails):
            run_targets(answer)
        assert paper.make_targets is official

    cfg = paper.PRESETS["smoke"].replace(image_size=24, patch_size=4)
    grid = cfg.image_size // cfg.patch_size
    masking_check = _notebook_cell('report_ok("random masking")')

    def run_masking(mask_fn, predicted):
        from companion.core import check, report_ok

        env = {"torch": torch, "paper": paper, "cfg": cfg, "grid": grid}
        env |= {"check": check, "report_ok": report_ok}
        exec(masking_check, env | {"random_mask": mask_fn, "random_neighbours": predicted})

    def uniform(batch, grid, ratio):
        length = grid * grid
        keep = torch.rand(batch, length).argsort(dim=1)[:, : int(length * (1 - ratio))]
        return torch.ones(batch, length, dtype=torch.bool).scatter_(1, keep, False)

    # independent: a visible patch's 2·pairs/L neighbour slots, each visible w.p. (keep-1)/(L-1)
    length, keep = grid * grid, int(grid * grid * (1 - cfg.mask_ratio))
    right = 2 * (2 * grid * (grid - 1)) / length * (keep - 1) / (length - 1)
    run_masking(uniform, right)  # the reference passes

    def fixed(batch, grid, ratio):  # the same patches visible in every row
        length = grid * grid
        mask = torch.ones(batch, length, dtype=torch.bool)
        mask[:, : int(length * (1 - ratio))] = False
        return mask

    planted = (
        (paper.inverse_block_mask, right),  # the block masks themselves
        (fixed, right),
        (lambda b, g, r: None, right),
        (uniform, None),  # no prediction
        (uniform, 0.0),
        (uniform, right + 0.1),  # a wrong prediction
        (uniform, 4 * (keep - 1) / (length - 1)),  # ignoring the grid's edges
    )
    for mask_fn, predicted in planted:
        with pytest.raises(fails):
            run_masking(mask_fn, predicted)
