"""DFPC against independent computations: the official code's hand-written couplings, dense
Toeplitz matrices built by loops, masking instead of slicing, and a brute-force selection."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers.dfpc.method import (
    BottleneckResNet,
    conv_matrix,
    dfpc_saliency,
    l1_fanin_saliency,
    l1_saliency,
    prune,
    saliencies,
    select_channels,
    select_matched,
    trace_dfcs,
)


def _tiny(widths=(2, 3), blocks=2, stem=3, seed=0):
    torch.manual_seed(seed)
    m = BottleneckResNet(in_channels=2, num_classes=3, widths=widths, blocks=blocks, stem=stem)
    for mod in m.modules():  # non-trivial BatchNorm statistics, some negative γ
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.weight.data.normal_()
            mod.bias.data.normal_()
            mod.running_mean.normal_()
            mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


def _official_constraints(stages, blocks):
    """``ResnetGeometricConstraints`` of genthin.py, rewritten for our stage count (as sets)."""
    out = [({"conv1"}, {"layer1.0.conv1", "layer1.0.downsample.0"}, {"bn1"})]
    for s in range(1, stages + 1):
        for b in range(blocks):
            n = f"layer{s}.{b}"
            out.append(({n + ".conv1"}, {n + ".conv2"}, {n + ".bn1"}))
            out.append(({n + ".conv2"}, {n + ".conv3"}, {n + ".bn2"}))
        a = {f"layer{s}.0.downsample.0"} | {f"layer{s}.{b}.conv3" for b in range(blocks)}
        bns = {f"layer{s}.0.downsample.1"} | {f"layer{s}.{b}.bn3" for b in range(blocks)}
        cons = {f"layer{s}.{b}.conv1" for b in range(1, blocks)}
        cons |= {f"layer{s + 1}.0.conv1", f"layer{s + 1}.0.downsample.0"} if s < stages else {"fc"}
        out.append((a, cons, bns))
    return out


def test_traced_couplings_match_the_official_list():
    m = _tiny(widths=(2, 2, 2), blocks=3)
    dfcs = trace_dfcs(m, torch.zeros(1, 2, 8, 8))

    def key(t):
        return tuple(tuple(sorted(s)) for s in t)

    got = [key((d.producers, d.consumers, d.batchnorms)) for d in dfcs]
    assert sorted(got) == sorted(key(t) for t in _official_constraints(3, 3))
    for d in dfcs:
        assert d.coupled == (len(d.producers) > 1 or len(d.consumers) > 1)


def test_pairs_follow_data_flow_not_name_order():
    # 11 blocks: the official string comparison drops 'layer1.9.conv3' -> 'layer1.10.conv1'.
    m = _tiny(widths=(1,), blocks=11, stem=2)
    dfc = [d for d in trace_dfcs(m, torch.zeros(1, 2, 4, 4)) if len(d.producers) > 1][0]
    feeding = {a for a, b in dfc.pairs if b == "layer1.10.conv1"}
    assert feeding == {"layer1.0.downsample.0"} | {f"layer1.{i}.conv3" for i in range(10)}
    assert {a for a, b in dfc.pairs if b == "fc"} == set(dfc.producers)


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 1), (2, 0)])
def test_conv_matrix_is_the_convolution(stride, padding):
    torch.manual_seed(1)
    w, x = torch.randn(3, 2, 3, 3), torch.randn(2, 5, 6)
    y = F.conv2d(x[None], w, stride=stride, padding=padding)[0]
    m = conv_matrix(w, 5, 6, stride, padding)
    torch.testing.assert_close(m @ x.flatten(), y.flatten(), atol=1e-5, rtol=1e-5)


def _dense(mod, shape):
    if isinstance(mod, torch.nn.Linear):
        return mod.weight.detach()
    return conv_matrix(mod.weight.detach(), shape[1], shape[2], mod.stride[0], mod.padding[0])


def test_saliency_equals_dense_matrix_products():
    """s(c) = Σ_pairs sum(|M_b|[:, F_c] @ |D_a M_a|[F_c, :]) with every matrix built densely."""
    m = _tiny()
    dfcs = trace_dfcs(m, torch.zeros(1, 2, 6, 6))
    mods = dict(m.named_modules())
    for dfc in dfcs:
        want = torch.zeros(dfc.channels, dtype=torch.float64)
        for a, b in dfc.pairs:
            ma = _dense(mods[a], dfc.input_shapes[a]).double().abs()
            per = ma.shape[0] // dfc.channels
            if a in dfc.bn_after:
                bn = mods[dfc.bn_after[a]]
                d = (bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)).abs().double()
                ma = torch.diag(d.repeat_interleave(per)) @ ma
            mb = _dense(mods[b], dfc.input_shapes[b]).double().abs()
            if b in dfc.pooled:  # fc ∘ global average pooling: averaging matrix by loops
                pool = torch.zeros(dfc.channels, dfc.channels * per, dtype=torch.float64)
                for c in range(dfc.channels):
                    pool[c, c * per : (c + 1) * per] = 1.0 / per
                mb = mb @ pool
            for c in range(dfc.channels):
                f = slice(c * per, (c + 1) * per)
                want[c] += (mb[:, f] @ ma[f, :]).sum()
        torch.testing.assert_close(dfpc_saliency(m, dfc), want, rtol=1e-6, atol=1e-8)


def test_l1_saliency_and_bad_scoring():
    m = _tiny()
    dfcs = trace_dfcs(m, torch.zeros(1, 2, 6, 6))
    mods = dict(m.named_modules())
    for dfc in dfcs:
        want = [
            sum(float(mods[a].weight.detach()[c].abs().sum()) for a in dfc.producers)
            for c in range(dfc.channels)
        ]
        torch.testing.assert_close(l1_saliency(m, dfc), torch.tensor(want, dtype=torch.float64))
        fanin = [
            sum(
                float(mods[a].weight.detach()[c].abs().sum()) / mods[a].weight[c].numel()
                for a in dfc.producers
            )
            for c in range(dfc.channels)
        ]
        torch.testing.assert_close(
            l1_fanin_saliency(m, dfc), torch.tensor(fanin, dtype=torch.float64)
        )
    with pytest.raises(CompanionError, match="unknown scoring 'l2'.*dfpc, l1, l1_fanin, random"):
        saliencies(m, dfcs, "l2")


def test_pruning_equals_masking_the_channels():
    """Cutting channels out equals zeroing them (BN γ = β = 0 on every producer's BatchNorm)."""
    m = _tiny()
    x = torch.randn(4, 2, 6, 6)
    dfcs = trace_dfcs(m, x[:1])
    removed = [[0] if d.channels > 1 else [] for d in dfcs]
    removed[1] = [0, 2] if dfcs[1].channels > 2 else removed[1]
    masked = _tiny()
    mods = dict(masked.named_modules())
    for dfc, rem in zip(dfcs, removed):
        for bn in dfc.batchnorms:
            mods[bn].weight.data[rem] = 0.0
            mods[bn].bias.data[rem] = 0.0
    pruned = prune(m, dfcs, removed)
    with torch.no_grad():
        torch.testing.assert_close(pruned(x), masked(x), atol=1e-5, rtol=1e-5)
        assert not torch.allclose(pruned(x), m(x), atol=1e-3)
    n_before = sum(p.numel() for p in m.parameters())
    assert sum(p.numel() for p in pruned.parameters()) < n_before
    with pytest.raises(CompanionError):
        prune(m, dfcs, [list(range(d.channels)) for d in dfcs])


def test_selection_is_the_global_minimum():
    m = _tiny()
    dfcs = trace_dfcs(m, torch.zeros(1, 2, 6, 6))
    scores = saliencies(m, dfcs, "random", torch.Generator().manual_seed(3))
    for coupled, count in itertools.product([True, False], [1, 5, 9]):
        removed = select_channels(scores, dfcs, count, prune_coupled=coupled)
        assert sum(map(len, removed)) == count
        for d, r in zip(dfcs, removed):
            assert len(r) < d.channels
            if not coupled and d.coupled:
                assert r == []
        # brute force: no kept allowed channel (in a DFC with room left) scores below a removed one
        worst = max(float(scores[i][c]) for i, r in enumerate(removed) for c in r)
        for i, (d, r) in enumerate(zip(dfcs, removed)):
            if (coupled or not d.coupled) and d.channels - len(r) > 1:
                kept = [float(scores[i][c]) for c in range(d.channels) if c not in r]
                assert min(kept) >= worst


def test_matched_selection_copies_counts_and_ranks_inside_each_dfc():
    m = _tiny()
    dfcs = trace_dfcs(m, torch.zeros(1, 2, 6, 6))
    own = saliencies(m, dfcs, "random", torch.Generator().manual_seed(3))
    other = saliencies(m, dfcs, "random", torch.Generator().manual_seed(4))
    for count in (1, 5, 9):
        removed = select_channels(own, dfcs, count)
        counts = [len(r) for r in removed]
        # ranked by the selection's own scores, the control is the selection itself
        assert select_matched(own, counts) == removed
        control = select_matched(other, counts)
        assert [len(r) for r in control] == counts
        for s, r in zip(other, control):  # the lowest of each DFC under the other scores
            kept = [float(s[c]) for c in range(len(s)) if c not in r]
            assert all(float(s[c]) <= min(kept) for c in r)
    with pytest.raises(CompanionError):
        select_matched(own, [d.channels for d in dfcs])


def _result(acc_c, acc_u, flops_c, flops_u, t_c, t_u):
    from companion.papers.dfpc.experiment import Arm, DFPCResult

    def arm(scoring, coupled, acc, flops):
        ok = [i for i, a in enumerate(acc) if a >= 0.9 - 0.05]
        return Arm(
            scoring,
            coupled,
            [0.1, 0.2],
            [1, 2],
            [[1], [2]],
            list(acc),
            [1.0, 1.0],
            [1, 1],
            list(flops),
            max(ok, default=-1),
        )

    arms = [
        arm("dfpc", True, acc_c, flops_c),
        arm("dfpc", False, acc_u, flops_u),
        arm("l1", True, (0.1, 0.1), (1.0, 1.0)),
    ]
    return DFPCResult(
        config={"scorings": ("dfpc", "l1"), "widths": (2, 4)},
        dfcs=[{"coupled": True}] * 3 + [{"coupled": False}],
        base_accuracy=0.9,
        base_latency_seconds=1.0,
        base_params=1,
        base_flops=100.0,
        arms=arms,
        claim_latency_seconds={"base": [1.0, 1.0, 3.0], "coupled": t_c, "uncoupled": t_u},
        train_seconds=0.0,
        prune_seconds=0.0,
    )


def test_claims_use_operating_points_and_paired_median_ratios():
    from companion.papers.dfpc import check_claims, flop_speedup_at_drop, speedup_at_drop

    # coupled keeps accuracy to step 2 (FLOPs 100/80), uncoupled only to step 1 (100/95)
    r = _result(
        (0.89, 0.86), (0.88, 0.5), (90.0, 80.0), (95.0, 50.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )
    assert flop_speedup_at_drop(r, r.arm("dfpc", True)) == pytest.approx(100 / 80)
    assert flop_speedup_at_drop(r, r.arm("dfpc", False)) == pytest.approx(100 / 95)
    # paired ratios base/t per round: coupled (2, 0.5, 1.5) -> median 1.5; uncoupled all 1
    assert speedup_at_drop(r, True) == pytest.approx(1.5)
    assert speedup_at_drop(r, False) == pytest.approx(1.0)
    assert [row.holds for row in check_claims(r).rows] == [True, True]
    # no gain from coupling: both speed rows fail (a tie is not a hold)
    tie = _result(
        (0.89, 0.5), (0.88, 0.5), (95.0, 80.0), (95.0, 50.0), [1.0, 1.0, 3.0], [1.0, 1.0, 3.0]
    )
    assert [row.holds for row in check_claims(tie).rows][:2] == [False, False]


def test_matched_controls_are_counted_against_dfpc():
    from companion.papers.dfpc import check_claims
    from companion.papers.dfpc.experiment import Arm

    r = _result(
        (0.89, 0.86), (0.88, 0.5), (90.0, 80.0), (95.0, 50.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )

    def arm(scoring, acc):
        return Arm(
            scoring,
            True,
            [0.1, 0.2],
            [1, 2],
            [[1], [2]],
            list(acc),
            [1.0] * 2,
            [1] * 2,
            [90.0, 80.0],
            -1,
        )

    r.config = {"scorings": ("dfpc", "random"), "widths": (2, 4), "matched_controls": ("random",)}
    r.arms += [arm("random", (0.1, 0.1)), arm("matched_random", (0.88, 0.85))]
    rows = {row.criterion: row.holds for row in check_claims(r).rows}
    # DFPC's mean 0.875 vs matched 0.865: within the margin, not a hold; allocation 0.865 vs 0.1
    assert rows["DFPC ≥ matched_random + 0.02"] is False
    assert rows["matched_random ≥ random + 0.1"] is True
    assert rows["DFPC ≥ random + 0.1"] is True
    r.arms[-1] = arm("matched_random", (0.5, 0.3))
    rows = {row.criterion: row.holds for row in check_claims(r).rows}
    assert rows["DFPC ≥ matched_random + 0.02"] is True
    assert rows["matched_random ≥ random + 0.1"] is True


def test_doubling_speed_row_is_gated_on_its_flop_row():
    from companion.papers.dfpc import check_claims

    wide = _result(
        (0.89, 0.86), (0.88, 0.5), (90.0, 80.0), (95.0, 50.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )
    wide.config = {"scorings": ("dfpc", "l1"), "widths": (2, 8)}
    # at the doubling the timing "wins" but the FLOP speed-ups tie: not tested, never a hold
    tie = _result(
        (0.89, 0.86), (0.88, 0.86), (90.0, 80.0), (90.0, 80.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )
    wide.doubling = tie.to_dict()
    rows = check_claims(wide).rows
    assert "favourable to the effect" in rows[0].claim and "favourable" in rows[1].claim
    speed, flops = rows[2], rows[3]
    assert flops.claim.startswith("premise: ") and not flops.holds
    assert not speed.premise_ok and not speed.holds
    assert rows[0].premise_ok and rows[0].holds
    # with more FLOPs removed the same timing counts
    more = _result(
        (0.89, 0.86), (0.88, 0.5), (90.0, 80.0), (95.0, 50.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )
    wide.doubling = more.to_dict()
    speed, flops = check_claims(wide).rows[2:4]
    assert speed.premise_ok and speed.holds and flops.holds


def test_reversed_ranking_premise_gates_the_ranking_rows():
    from companion.papers.dfpc import check_claims
    from companion.papers.dfpc.experiment import REVERSED, Arm

    r = _result(
        (0.89, 0.86), (0.88, 0.5), (90.0, 80.0), (95.0, 50.0), [0.5, 2.0, 2.0], [1.0, 1.0, 3.0]
    )

    def arm(scoring, acc):
        return Arm(scoring, True, [0.1, 0.2], [1, 2], [[1], [2]], list(acc), [1.0] * 2,
                   [1] * 2, [90.0, 80.0], -1)  # fmt: skip

    r.config = {
        "scorings": ("dfpc", "random"),
        "widths": (2, 4),
        "matched_controls": ("random", REVERSED),
    }
    # DFPC's mean 0.875; random ranking 0.4 (DFPC's ranking clearly better)
    r.arms += [arm("random", (0.1, 0.1)), arm("matched_random", (0.5, 0.3))]
    # the reversed ranking barely worse (0.85): no power, the ranking row is not tested
    r.arms.append(arm(f"matched_{REVERSED}", (0.86, 0.84)))
    rows = {row.criterion: row for row in check_claims(r).rows}
    premise = rows[f"DFPC ≥ matched_{REVERSED} + 0.1"]
    assert premise.claim.startswith("premise: ") and not premise.holds
    ranking = rows["DFPC ≥ matched_random + 0.02"]
    assert not ranking.premise_ok and not ranking.holds
    assert rows["matched_random ≥ random + 0.1"].premise_ok  # the allocation row is not gated
    # the reversed ranking collapses: the premise holds and the ranking row counts
    r.arms[-1] = arm(f"matched_{REVERSED}", (0.3, 0.1))
    rows = {row.criterion: row for row in check_claims(r).rows}
    assert rows[f"DFPC ≥ matched_{REVERSED} + 0.1"].holds
    assert rows["DFPC ≥ matched_random + 0.02"].premise_ok
    assert rows["DFPC ≥ matched_random + 0.02"].holds


def test_reversed_control_removes_dfpcs_counts_most_salient_first():
    m = _tiny()
    x = torch.randn(1, 2, 8, 8)
    dfcs = trace_dfcs(m, x)
    scores = saliencies(m, dfcs, "dfpc")
    own = select_channels(scores, dfcs, 5)
    counts = [len(r) for r in own]
    reversed_ = select_matched([-s for s in scores], counts)
    for s, r, k in zip(scores, reversed_, counts, strict=True):
        assert len(r) == k
        if k:
            assert sorted(r) == sorted(torch.argsort(s, descending=True)[:k].tolist())


def test_latency_rounds_run_every_model_once_in_shuffled_orders(monkeypatch):
    from companion.papers.dfpc import experiment

    calls = []

    class Probe(torch.nn.Module):
        def __init__(self, i):
            super().__init__()
            self.i = i

        def forward(self, x):
            calls.append(self.i)
            return x

    models = [Probe(i) for i in range(4)]
    out = experiment.cpu_latency_seconds(models, torch.zeros(1), repeats=6)
    assert len(out) == 4 and all(t >= 0 for t in out)
    warm, rounds = calls[:4], [calls[4 + 4 * r : 8 + 4 * r] for r in range(6)]
    assert warm == [0, 1, 2, 3] and all(sorted(r) == [0, 1, 2, 3] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round
