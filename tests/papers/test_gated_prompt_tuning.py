"""gated_prompt_tuning against independent computations (explicit loops, closed forms, the
official formulas on tiny inputs)."""

import json
import math

import pytest
import torch

from companion.errors import CompanionError
from companion.nn import ViT
from companion.papers import gated_prompt_tuning as paper


def _vit(depth=3, seed=0):
    torch.manual_seed(seed)
    return ViT(
        image_size=8, patch_size=2, in_channels=1, num_classes=1, dim=16, depth=depth, heads=2
    ).eval()


def _official_attention(block, x, temp):
    """The official Attention.forward: ((q @ kᵀ) * scale / temp).softmax(-1) @ v, per head by a
    loop over heads."""
    a = block.attn
    q, k, v = a.q(x), a.k(x), a.v(x)
    outs = []
    for h in range(a.heads):
        s = slice(h * a.head_dim, (h + 1) * a.head_dim)
        att = ((q[..., s] @ k[..., s].transpose(-2, -1)) * a.head_dim**-0.5 / temp).softmax(-1)
        outs.append(att @ v[..., s])
    return a.proj(torch.cat(outs, dim=-1))


def test_temperature_attention_matches_the_official_formula_and_the_block():
    vit = _vit()
    x = torch.randn(2, 7, 16)
    block = vit.blocks[0]
    for temp in (0.3, 1.0, 4.0):
        torch.testing.assert_close(
            paper.attention_with_temperature(block, x, temp), _official_attention(block, x, temp)
        )
    torch.testing.assert_close(paper.block_forward(block, x), block(x))


def _run_blocks(vit, h, blocks):
    for i in blocks:
        h = vit.blocks[i](h)
    return h


def test_vpt_at_block_k_is_prompts_concatenated_before_block_k():
    vit = _vit(depth=3)
    x = torch.rand(4, 1, 8, 8)
    for k in range(3):
        model = paper.PromptedViT(vit, 5, num_prompts=3, insert_block=k, prompt_dropout=0.0).eval()
        h = _run_blocks(vit, vit.tokens(x), range(k))
        h = torch.cat([h[:, :1], model.prompts.expand(4, -1, -1), h[:, 1:]], dim=1)
        h = _run_blocks(vit, h, range(k, 3))
        expected = model.head(vit.norm(h[:, 1:].mean(1)))
        torch.testing.assert_close(model(x), expected)


def test_gates_mix_prompt_output_and_input_as_a_loop_does():
    vit = _vit(depth=3)
    x = torch.rand(2, 1, 8, 8)
    model = paper.PromptedViT(vit, 5, num_prompts=2, gated=True, prompt_dropout=0.0).eval()
    with torch.no_grad():
        model.gate_logit.copy_(torch.tensor([-1.0, 0.5]))
        model.temperature.copy_(torch.tensor([0.5, 2.0, 1.5]))
    # loop: token by token group, official forward_features
    h = vit.tokens(x)
    h = torch.cat([h[:, :1], model.prompts.expand(2, -1, -1), h[:, 1:]], dim=1)
    for i in range(3):
        p_in = h[:, 1:3].clone()
        h = paper.block_forward(vit.blocks[i], h, model.temperature[i])
        if i < 2:
            g = 1 / (1 + math.exp(-model.gate_logit[i].item()))
            h = torch.cat([h[:, :1], g * h[:, 1:3] + (1 - g) * p_in, h[:, 3:]], dim=1)
    torch.testing.assert_close(model.features(x), vit.norm(h[:, 1:].mean(1)))


def test_open_gates_are_vpt_at_the_input_and_closed_gates_freeze_the_prompts():
    vit = _vit(depth=3)
    x = torch.rand(3, 1, 8, 8)
    vpt = paper.PromptedViT(vit, 5, num_prompts=2, prompt_dropout=0.0).eval()
    gated = paper.PromptedViT(vit, 5, num_prompts=2, gated=True, prompt_dropout=0.0).eval()
    with torch.no_grad():
        gated.prompts.copy_(vpt.prompts)
        gated.gate_logit.fill_(1e4)  # g = 1
    torch.testing.assert_close(gated.features(x), vpt.features(x))
    with torch.no_grad():
        gated.gate_logit.fill_(-1e4)  # g = 0: prompts enter every block unchanged
    h = vit.tokens(x)
    p = gated.prompts.expand(3, -1, -1)
    for i in range(3):
        h = vit.blocks[i](torch.cat([h[:, :1], p, h[:, 1:]], dim=1))
        if i < 2:
            h = torch.cat([h[:, :1], h[:, 3:]], dim=1)
    torch.testing.assert_close(gated.features(x), vit.norm(h[:, 1:].mean(1)))


def test_temperature_is_clamped_and_only_prompt_parts_train():
    vit = _vit(depth=2)
    model = paper.PromptedViT(vit, 5, num_prompts=2, gated=True).train()
    assert not vit.training  # the backbone stays in eval mode
    with torch.no_grad():
        model.temperature.copy_(torch.tensor([100.0, 1e-4]))
    model(torch.rand(2, 1, 8, 8)).sum().backward()
    assert model.temperature.tolist() == pytest.approx([10.0, 0.01])
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"prompts", "gate_logit", "temperature", "head.weight", "head.bias"}
    assert all(p.grad is None for p in vit.parameters())
    assert model.gates().tolist() == pytest.approx([1 / (1 + math.exp(5.0))])


def test_prompt_init_bound_is_xavier_of_the_patch_embedding():
    assert paper.prompt_init_bound(16, 3, 768) == pytest.approx(math.sqrt(6 / (3 * 256 + 768)))
    model = paper.PromptedViT(_vit(), 5, num_prompts=50)
    assert model.prompts.abs().max() <= paper.prompt_init_bound(2, 1, 16)


def test_patchify_matches_a_loop_and_masking_keeps_the_right_count():
    x = torch.rand(2, 3, 8, 8)
    patches = paper.patchify(x, 4)
    for b in range(2):
        for i in range(2):
            for j in range(2):
                expected = x[b, :, 4 * i : 4 * i + 4, 4 * j : 4 * j + 4].permute(1, 2, 0).flatten()
                torch.testing.assert_close(patches[b, 2 * i + j], expected)
    keep, mask = paper.random_masking(5, 16, 0.75, generator=torch.Generator().manual_seed(0))
    assert keep.shape == (5, 4) and mask.sum(1).tolist() == [12.0] * 5
    assert mask.gather(1, keep).sum() == 0


def test_mae_encoder_with_every_patch_visible_is_the_vit():
    vit = _vit(depth=2)
    mae = paper.MAE(vit)
    x = torch.rand(3, 1, 8, 8)
    keep = torch.arange(16).expand(3, -1)
    expected = vit.norm(_run_blocks(vit, vit.tokens(x), range(2)))
    torch.testing.assert_close(mae.encode(x, keep), expected)
    loss = mae.loss(x)
    assert loss.ndim == 0 and torch.isfinite(loss)


def test_bad_options_are_refused():
    with pytest.raises(CompanionError, match="unknown method 'deep'"):
        paper.PRESETS["smoke"].replace(methods=("deep",))
    with pytest.raises(CompanionError, match="unknown dataset"):
        paper.PRESETS["smoke"].replace(dataset="imagenet")


def test_tiny_run_gives_every_arm_and_a_claim_table(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        device="cpu",
        dim=16,
        depth=2,
        pretrain_steps=3,
        steps=3,
        measure_every=1,
        labels_per_class=2,
        batch_size=20,
    )
    result = paper.run(cfg, out_dir=tmp_path)
    assert list(result.arms) == ["linear", "vpt@0", "vpt@1", "gated", "tempered"]
    assert len(result.arms["gated"].gates) == 1 and len(result.arms["gated"].temperatures) == 2
    assert result.arms["tempered"].gates == [] and len(result.arms["tempered"].temperatures) == 2
    # the gated arm tried every gate_init of the grid and kept the best on validation
    tried = result.arms["gated"].selection
    assert [c["gate_init"] for c in tried] == list(cfg.gate_inits)
    best = max(c["val_accuracy"] for c in tried)
    assert result.arms["gated"].val_accuracy == best
    assert result.arms["gated"].gate_init == next(
        c["gate_init"] for c in tried if c["val_accuracy"] == best
    )
    report = paper.check_claims(result)
    assert len(report.rows) == 7 and str(report).splitlines()[-1].startswith("claims hold: ")
    assert set(result.probes) == {"pixels", "backbone", "random_backbone"}
    loaded = paper.Result.load(tmp_path / "result.json")
    assert loaded.to_dict() == json.loads(json.dumps(result.to_dict()))


def test_shipped_backbone_loads_into_the_notebook_preset(tmp_path):
    cfg = paper.PRESETS["notebook"]
    path = paper.experiment.backbone_path(cfg.backbone_file)
    assert path.stat().st_size <= 5_000_000
    blob = paper.load_backbone_file(cfg, 1)
    vit = paper.build_backbone(cfg, 1)
    vit.load_state_dict(blob["state_dict"])  # strict: every weight present, shapes equal
    info, prov = blob["pretrain"], blob["provenance"]
    assert info["steps"] == len(info["loss"]) or info["loss_steps"][-1] <= info["steps"]
    assert info["loss"][-1] < info["loss"][0]  # the MAE learned to reconstruct
    assert {"command", "commit", "date", "machine", "data"} <= set(prov)
    with pytest.raises(CompanionError, match="the config needs"):
        paper.load_backbone_file(cfg.replace(dim=32, heads=4), 1)
    # a short run loads it and keeps it frozen
    tiny = cfg.replace(
        device="cpu", methods=("linear",), steps=2, labels_per_class=2, batch_size=20
    )
    result = paper.run(tiny, out_dir=tmp_path)
    assert result.pretrain.loss == info["loss"]
    assert torch.equal(
        torch.load(tmp_path / "pretrain" / "backbone.pt")["pos_embed"],
        blob["state_dict"]["pos_embed"],
    )


def test_labelled_images_are_drawn_per_seed_and_balanced():
    cfg = paper.PRESETS["smoke"].replace(labels_per_class=3)
    _, (x0, y0), _, _, _, _ = paper.load_data(cfg)
    _, (x1, y1), _, _, _, _ = paper.load_data(cfg.replace(seed=1))
    assert torch.bincount(y0).tolist() == [3] * 10 == torch.bincount(y1).tolist()
    assert not torch.equal(x0, x1)


def test_test_and_validation_sets_are_fixed_across_seeds_and_unseen_by_the_backbone():
    cfg = paper.PRESETS["notebook"]
    images, train, val, test, _, _ = paper.load_data(cfg)
    for seed in (1, 7):
        other = paper.load_data(cfg.replace(seed=seed))
        assert torch.equal(other[2][0], val[0]) and torch.equal(other[3][0], test[0])
        assert torch.equal(other[3][1], test[1]) and torch.equal(other[0], images)
    # no pre-training image (which the shipped backbone was trained on) is a test or val image
    seen = {row.numpy().tobytes() for row in images.flatten(1)}
    for split in (val, test):
        assert not any(row.numpy().tobytes() in seen for row in split[0].flatten(1))
    assert len(set(map(bytes, (r.numpy().tobytes() for r in train[0].flatten(1)))) - seen) == 0


def test_the_control_without_gates_is_vpt_at_the_input_with_temperatures():
    vit = _vit(depth=3)
    x = torch.rand(3, 1, 8, 8)
    vpt = paper.PromptedViT(vit, 5, num_prompts=2, prompt_dropout=0.0).eval()
    torch.manual_seed(0)
    control = paper.PromptedViT(
        vit, 5, num_prompts=2, gated=True, use_gates=False, prompt_dropout=0.0
    ).eval()
    torch.manual_seed(0)
    gated = paper.PromptedViT(vit, 5, num_prompts=2, gated=True, prompt_dropout=0.0).eval()
    assert torch.equal(control.prompts, gated.prompts)  # the same initialization as the arm
    assert control.gates().numel() == 0
    with torch.no_grad():
        control.prompts.copy_(vpt.prompts)
        gated.prompts.copy_(vpt.prompts)
    torch.testing.assert_close(control.features(x), vpt.features(x))  # temperatures 1
    with torch.no_grad():
        control.temperature.copy_(torch.tensor([0.5, 2.0, 1.5]))
        gated.temperature.copy_(control.temperature)
        gated.gate_logit.fill_(1e4)  # open gates: the gated arm equals its control
    torch.testing.assert_close(control.features(x), gated.features(x))
    trainable = {n for n, p in control.named_parameters() if p.requires_grad}
    assert trainable == {"prompts", "temperature", "head.weight", "head.bias"}


def _arm(val, name="gated", gate_init=5.0, lr=0.5, gates=(0.0067,)):
    return paper.ArmResult(name, [], [], [], [], list(gates), [], 1.0, 0.5, 0.0, val, lr, gate_init)


def test_selection_takes_the_best_validation_accuracy_and_breaks_ties_by_grid_order():
    chosen = paper.experiment.select([_arm(0.8, gate_init=5), _arm(0.9, gate_init=2)])
    assert chosen.gate_init == 2 and len(chosen.selection) == 2
    tie = paper.experiment.select([_arm(0.9, gate_init=5), _arm(0.9, gate_init=0)])
    assert tie.gate_init == 5  # the official init wins a tie


def test_gates_that_stay_at_their_start_leave_the_gated_rows_untested():
    from companion.papers.gated_prompt_tuning.claims import MOVED, gate_moves

    g0 = 1 / (1 + math.exp(5.0))
    assert max(gate_moves(_arm(0.9, gates=(g0, g0)))) == pytest.approx(0.0, abs=1e-9)
    moved = 1 / (1 + math.exp(5.0 - MOVED - 0.01))
    assert max(gate_moves(_arm(0.9, gates=(g0, moved)))) >= MOVED
