"""SFAT against independent computations: PGD by hand, the official aggregation formula on a
tiny input, the skew split's counts, the dissimilarity by brute force."""

import copy

import pytest
import torch
import torch.nn.functional as F

from companion.core.federated import Update
from companion.errors import CompanionError
from companion.papers import sfat as paper


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)
    )


def _batch(seed=0, n=12):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 4, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_pgd_one_step_without_start_is_fgsm_by_hand():
    model, (x, y) = _model(), _batch()
    eps, step = 0.1, 0.04
    xr = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(F.cross_entropy(model(xr), y), xr)
    expected = (x + step * grad.sign()).clamp(0, 1)
    got = paper.pgd_attack(model, x, y, eps=eps, step_size=step, steps=1, random_start=False)
    torch.testing.assert_close(got, expected)
    assert all(p.grad is None for p in model.parameters()), "PGD must not leave weight grads"


def test_pgd_matches_official_loop_and_stays_in_the_ball():
    model, (x, y) = _model(1), _batch(1)
    eps, step, steps = 0.15, 0.05, 4
    g = torch.Generator().manual_seed(3)
    got = paper.pgd_attack(model, x, y, eps=eps, step_size=step, steps=steps, generator=g)
    # official attack_generator.PGD ("Madry", "cent"), with the same uniform start
    noise = torch.rand(x.shape, generator=torch.Generator().manual_seed(3)) * 2 * eps - eps
    x_adv = torch.clamp(x + noise, 0.0, 1.0)
    for _ in range(steps):
        x_adv.requires_grad_()
        loss = torch.nn.CrossEntropyLoss(reduction="mean")(model(x_adv), y)
        model.zero_grad()
        loss.backward()
        x_adv = x_adv.detach() + step * x_adv.grad.sign()
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps)
        x_adv = torch.clamp(x_adv, 0.0, 1.0)
    torch.testing.assert_close(got, x_adv)
    assert (got - x).abs().max() <= eps + 1e-6 and got.min() >= 0 and got.max() <= 1
    with torch.no_grad():
        assert F.cross_entropy(model(got), y) > F.cross_entropy(model(x), y)


def test_skew_split_counts_follow_the_official_rule():
    labels = torch.arange(10).repeat_interleave(50)[torch.randperm(500)]  # 50 per class
    parts = paper.skew_split(labels, 5, 2.0, torch.Generator().manual_seed(0))
    everything = torch.cat(parts)
    assert len(everything.unique()) == len(everything), "clients must not share samples"
    for i, part in enumerate(parts):
        counts = torch.bincount(labels[part], minlength=10).view(5, 2).sum(1)  # per block
        # block of 100 samples: 100 - 4*2 = 92 % stay, 2 % go to each other client
        assert counts[i] == 92 and all(counts[j] == 2 for j in range(5) if j != i)
    with pytest.raises(CompanionError, match="skew"):
        paper.skew_split(labels, 5, 30.0, torch.Generator())


def _official_average_weights_alpha(w, lw, idx, p):
    """utils.average_weights_alpha of ZFancy/SFAT, as published (lw: scores = -loss)."""
    w_avg = copy.deepcopy(w[0])
    for key in w_avg.keys():
        cou = 0
        if lw[0] >= idx:
            w_avg[key] = w_avg[key] * p
        for i in range(1, len(w)):
            if (lw[i] >= idx) and ("bn" not in key):
                w_avg[key] = w_avg[key] + w[i][key] * p
            else:
                cou += 1
                w_avg[key] = w_avg[key] + w[i][key]
        w_avg[key] = torch.div(w_avg[key], cou + (len(w) - cou) * p)
    return w_avg


@pytest.mark.parametrize("top", [0, 3])
def test_slack_weights_against_the_official_formula(top):
    g = torch.Generator().manual_seed(0)
    thetas = [{"fc.weight": torch.randn(4, 3, generator=g)} for _ in range(5)]
    losses = torch.tensor([0.9, 0.8, 1.1, 0.7, 1.3])
    losses[top] = 0.1  # the client with the smallest adversarial loss
    ratio = 1.4
    alpha = paper.alpha_from_ratio(ratio)
    assert (1 + alpha) / (1 - alpha) == pytest.approx(ratio)
    w = paper.slack_weights(losses, alpha, topk=1)
    assert w.sum().item() == pytest.approx(1.0) and w.argmax().item() == top
    assert w[top] / w[(top + 1) % 5] == pytest.approx(ratio, rel=1e-6)
    ours = sum(w[k] * thetas[k]["fc.weight"] for k in range(5))
    scores = (-losses).tolist()
    official = _official_average_weights_alpha(thetas, scores, sorted(scores)[-1], ratio)
    if top == 0:  # the official normaliser is right only when client 0 is the top client
        torch.testing.assert_close(official["fc.weight"], ours)
    else:  # otherwise it divides by (4 + 1.4) instead of (4·1 + 1.4): the model shrinks
        unnormalised = sum(thetas[k]["fc.weight"] * (ratio if k == top else 1) for k in range(5))
        torch.testing.assert_close(official["fc.weight"], unnormalised / (4 + 2 * ratio - 1))
        assert not torch.allclose(official["fc.weight"], ours)


def test_slack_weights_topk_ties_and_no_slack():
    w = paper.slack_weights([0.5, 0.2, 0.2, 0.9], alpha=0.2, topk=1)
    # a tie at the threshold up-weights both tied clients (official: score >= threshold)
    torch.testing.assert_close(w, torch.tensor([0.8, 1.2, 1.2, 0.8]) / 4.0)
    torch.testing.assert_close(paper.slack_weights([3.0, 1.0, 2.0], 0.0), torch.full((3,), 1 / 3))
    w2 = paper.slack_weights([3.0, 1.0, 2.0], 0.5, topk=2)
    torch.testing.assert_close(w2, torch.tensor([0.5, 1.5, 1.5]) / 3.5)
    with pytest.raises(CompanionError, match="α"):
        paper.slack_weights([1.0], 1.0)


def test_dissimilarity_by_brute_force():
    g = torch.Generator().manual_seed(0)
    m = torch.randn(5, 7, generator=g)
    mean = m.mean(0)
    spread = sum(float((m[k] - mean).norm() ** 2) for k in range(5)) / 5
    energy = sum(float(m[k].norm() ** 2) for k in range(5)) / 5
    assert paper.client_dissimilarity(m) == pytest.approx(spread / energy, rel=1e-6)
    assert paper.client_dissimilarity(m[:1].repeat(4, 1)) == pytest.approx(0.0, abs=1e-12)
    assert paper.client_dissimilarity(torch.stack([m[0], -m[0]])) == pytest.approx(1.0)


def test_slack_weigh_is_fedavg_in_round_zero_and_records_heterogeneity():
    updates = [
        Update(torch.full((3,), float(k)), info={"loss": 1.0 - 0.1 * k, "round": 0.0})
        for k in range(4)
    ]
    weigh = paper.SlackWeigh(alpha=0.3)
    torch.testing.assert_close(weigh(updates), torch.full((4,), 0.25))
    for u in updates:
        u.info["round"] = 2.0
    w = weigh(updates)
    assert w.argmax().item() == 3 and w.sum().item() == pytest.approx(1.0)
    assert updates[0].info["loss_spread"] == pytest.approx(0.3)
    assert 0 < updates[2].info["dissimilarity"] < 1


def test_client_reports_last_epoch_adversarial_loss():
    cfg = paper.PRESETS["smoke"].replace(batch_size=4, local_epochs=2, lr=0.0, eps=0.2)
    model, (x, y) = _model(2), _batch(2, n=8)
    natural = paper.AdversarialClient(x, y, cfg, adversarial=False)
    adversarial = paper.AdversarialClient(x, y, cfg, adversarial=True)
    u_nat = natural(model, 0, torch.Generator().manual_seed(0))
    u_adv = adversarial(model, 0, torch.Generator().manual_seed(0))
    with torch.no_grad():  # lr 0: the model never moves, so every epoch's mean is the full loss
        full = F.cross_entropy(model(x), y).item()
    assert u_nat.info["loss"] == pytest.approx(full, rel=1e-5)
    assert u_adv.info["loss"] > full + 0.01
    assert u_nat.message.abs().max() == 0


def test_bad_options_name_the_choices():
    with pytest.raises(CompanionError, match="valid: fedavg, fat, sfat"):
        paper.PRESETS["smoke"].replace(methods=("fedavg", "krum"))
    with pytest.raises(CompanionError, match="1"):
        paper.PRESETS["smoke"].replace(slack_ratio=0.5)
    partial = paper.Result(config={}, client_sizes=[], client_classes=[], arms={})
    with pytest.raises(CompanionError, match="fedavg, fat and sfat"):
        paper.check_claims(partial)


def test_official_shrink_matches_the_official_formula_for_every_first_client():
    g = torch.Generator().manual_seed(1)
    thetas = [{"fc.weight": torch.randn(3, 2, generator=g)} for _ in range(5)]
    losses = torch.tensor([0.9, 0.3, 1.1, 0.7, 1.3])  # client 1 is the top client
    ratio = 1.2
    w = paper.slack_weights(losses, paper.alpha_from_ratio(ratio), topk=1)
    ours = sum(w[k] * thetas[k]["fc.weight"] for k in range(5))
    for first in range(5):  # the official loop lists the clients in a random order
        order = [first] + [k for k in range(5) if k != first]
        scores = [-float(losses[k]) for k in order]
        official = _official_average_weights_alpha(
            [thetas[k] for k in order], scores, max(scores), ratio
        )["fc.weight"]
        s = paper.official_shrink(5, 1, first_is_top=first == 1, ratio=ratio)
        torch.testing.assert_close(official, s * ours)
    assert paper.official_shrink(5, 1, False, 1.2) == pytest.approx(5.2 / 5.4)  # 0.963
    assert paper.official_shrink(5, 1, False, 1.4) == pytest.approx(5.4 / 5.8)  # 0.931


def test_official_weigh_and_shrink_server_reproduce_the_official_model():
    model = _model(3)
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()
    g = torch.Generator().manual_seed(4)
    deltas = [torch.randn_like(theta, generator=g) * 0.1 for _ in range(5)]
    losses = [0.9, 0.8, 1.1, 0.2, 1.3]
    r, seed, ratio = 3, 0, 1.2
    first = paper.first_client(seed, r, 5)
    for slack in (True, False):
        m = copy.deepcopy(model)
        server = paper.ShrinkServer()
        weigh = paper.OfficialWeigh(server, ratio, 1, seed, slack=slack)
        updates = [
            Update(deltas[k].clone(), info={"loss": losses[k], "round": float(r)}) for k in range(5)
        ]
        w = weigh(updates)
        server.step(m, (w[:, None] * torch.stack(deltas)).sum(0))
        got = torch.nn.utils.parameters_to_vector(m.parameters()).detach()
        # official: whole local models, ratio on the top client (3) only when slack,
        # normaliser that assumes the first listed client is up-weighted
        p = [ratio if (slack and k == 3) else 1.0 for k in range(5)]
        if slack:
            z = sum(p) if first == 3 else 3 + 2 * ratio
        else:  # FAT with the same shrink: plain mean, scaled by the same factor
            z = 5 * (3 + 2 * ratio) / (4 + ratio) if first != 3 else 5
        want = sum(p[k] * (theta + deltas[k]) for k in range(5)) / z
        torch.testing.assert_close(got, want)
        assert updates[0].info["shrink"] == pytest.approx(1.0 if first == 3 else 5.2 / 5.4)
    round0 = [Update(deltas[k], info={"loss": losses[k], "round": 0.0}) for k in range(5)]
    server = paper.ShrinkServer()
    w0 = paper.OfficialWeigh(server, ratio, 1, seed, slack=True)(round0)
    torch.testing.assert_close(w0, torch.full((5,), 0.2))
    assert server.factor == 1.0


def test_premise_gates_the_gain_rows():
    def arm(method, robust):
        n = len(robust)
        return paper.ArmResult(
            method, list(range(n)), [0.8] * n, robust, [1.0] * n, [0.9] * n, [0.1] * n, 0.0
        )

    classes = [[92, 92, 2, 2, 2, 2, 2, 2, 2, 2]] * 5
    flat = [0.0, 0.3, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4]
    decay = [0.0, 0.3, 0.5, 0.45, 0.4, 0.4, 0.35, 0.35]
    for fat, tested in ((flat, False), (decay, True)):
        result = paper.Result(
            config={},
            client_sizes=[196] * 5,
            client_classes=classes,
            arms={
                "fedavg": arm("fedavg", [0.0] * 8),
                "fat": arm("fat", fat),
                "sfat": arm("sfat", [x + 0.05 for x in fat]),
            },
        )
        report = paper.check_claims(result)
        premise = [r for r in report.rows if r.claim.startswith("premise:")][0]
        gain = [r for r in report.rows if r.claim == "SFAT's robust accuracy beats FAT's"][0]
        assert premise.holds is tested and gain.premise_ok is tested and gain.holds is tested
        assert "rounds 6–7" in premise.measured
        # the natural-accuracy row needs no decay: it is tested either way
        natural = [r for r in report.rows if r.claim.startswith("SFAT's natural accuracy")][0]
        assert natural.premise_ok and natural.holds


def test_random_slack_weigh_up_weights_random_clients_with_the_same_weights():
    updates = [
        Update(torch.full((3,), float(k)), info={"loss": 1.0 - 0.1 * k, "round": 0.0})
        for k in range(5)
    ]
    weigh = paper.RandomSlackWeigh(alpha=0.3, topk=1, seed=0)
    torch.testing.assert_close(weigh(updates), torch.full((5,), 0.2))  # round 0: FedAvg
    chosen = []
    for r in range(1, 41):
        for u in updates:
            u.info["round"] = float(r)
        w = weigh(updates)
        # the same weights as SFAT's, whoever is up-weighted
        torch.testing.assert_close(w.sort().values, paper.slack_weights([1, 1, 1, 1, 0], 0.3))
        torch.testing.assert_close(w, weigh(updates))  # the same draw for the same round
        chosen.append(w.argmax().item())
    # the choice ignores the losses (SFAT would pick client 4 every round) and varies
    assert len(set(chosen)) == 5


def test_iid_control_keeps_the_samples_and_sizes_and_mixes_the_classes():
    y = torch.arange(10).repeat_interleave(50)
    parts = paper.skew_split(y, 5, 2.0, torch.Generator().manual_seed(0))
    iid = paper.iid_like(parts, torch.Generator().manual_seed(1))
    assert [len(p) for p in iid] == [len(p) for p in parts]
    torch.testing.assert_close(torch.cat(iid).sort().values, torch.cat(parts).sort().values)
    for p in iid:  # no client is dominated by two classes any more
        top2 = torch.bincount(y[p], minlength=10).sort().values[-2:].sum().item()
        assert top2 / len(p) < 0.5


def test_control_rows_appear_with_their_arms_and_can_fail():
    def arm(method, robust, dissimilarity):
        n = len(robust)
        return paper.ArmResult(
            method,
            list(range(n)),
            [0.8] * n,
            robust,
            [1.0] * n,
            [dissimilarity] * n,
            [0.1] * n,
            0.0,
        )

    decay = [0.0, 0.3, 0.5, 0.45, 0.4, 0.4, 0.35, 0.35]
    base = {
        "fedavg": arm("fedavg", [0.0] * 8, 0.97),
        "fat": arm("fat", decay, 0.99),
        "sfat": arm("sfat", [x + 0.05 for x in decay], 0.99),
    }
    classes = [[92, 92, 2, 2, 2, 2, 2, 2, 2, 2]] * 5

    def rows(**extra):
        result = paper.Result(
            config={}, client_sizes=[196] * 5, client_classes=classes, arms=base | extra
        )
        return {r.claim.split(":")[0]: r for r in paper.check_claims(result).rows}

    assert "control" not in rows()
    assert not any(k.startswith("SFAT's selection") for k in rows())
    # IID clients that keep far more of FedAvg's update than FAT's: the control fails
    iid = rows(fedavg_iid=arm("fedavg_iid", [0.0] * 8, 0.2), fat_iid=arm("fat_iid", decay, 0.7))
    assert not iid["control"].holds
    iid = rows(fedavg_iid=arm("fedavg_iid", [0.0] * 8, 0.3), fat_iid=arm("fat_iid", decay, 0.4))
    assert iid["control"].holds and iid["control"].premise_ok
    # no widening on non-IID clients either: nothing for the control to explain, not tested
    base["fedavg"] = arm("fedavg", [0.0] * 8, 0.99)
    flat = rows(fedavg_iid=arm("fedavg_iid", [0.0] * 8, 0.3), fat_iid=arm("fat_iid", decay, 0.4))
    assert flat["control"].premise_ok is False and not flat["control"].holds
    base["fedavg"] = arm("fedavg", [0.0] * 8, 0.97)
    # the random control: SFAT must beat it by the margin; a tie is not a hold
    sel = "SFAT's selection by adversarial loss matters"
    tie = rows(sfat_random=arm("sfat_random", [x + 0.05 for x in decay], 0.99))
    assert tie[sel].premise_ok and not tie[sel].holds
    assert rows(sfat_random=arm("sfat_random", decay, 0.99))[sel].holds
