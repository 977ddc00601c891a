"""LeadFL: the regularizer and local training against the official code's loop written out on a
tiny model, plain local training against the shared ``local_sgd``, the bursty schedule, claims."""

import copy

import pytest
import torch
from torch import nn

from companion.core.federated import local_sgd
from companion.errors import CompanionError
from companion.papers import leadfl as paper
from companion.papers.leadfl.claims import after_last_burst, residual_backdoor


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))


def tiny_data(n=24, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_regularizer_matches_a_loop_over_elements():
    model = tiny_model()
    g = torch.Generator().manual_seed(3)
    names = paper.regularized_names(model)
    assert names == ["0.weight", "2.weight"]  # biases are not regularized
    params = dict(model.named_parameters())
    prev = {k: torch.randn(params[k].shape, generator=g) for k in names}
    grads = {k: torch.randn(params[k].shape, generator=g) for k in names}
    lr = 0.07
    expected = 0.0
    for k in names:
        w, p, q = params[k].detach().flatten(), prev[k].flatten(), grads[k].flatten()
        expected += sum((float(w[i] - p[i] - q[i]) - lr) ** 2 for i in range(len(w))) ** 0.5
    r = paper.leadfl_regularizer(model, prev, grads, lr)
    assert r.item() == pytest.approx(expected, rel=1e-5)
    # its gradient is the unit vector (W - c) / ||W - c|| of each tensor
    r.backward()
    for k in names:
        gap = params[k].detach() - prev[k] - grads[k] - lr
        torch.testing.assert_close(params[k].grad, gap / gap.norm(), rtol=1e-5, atol=1e-6)
    assert params["0.bias"].grad is None


def official_leadfl_loop(model, batches, lr, momentum, alpha, q):
    """The benign branch of ``fltk/core/client.py`` ``Client.train`` (defense "LeadFL"), one
    epoch over ``batches``, written out as coded."""
    net = copy.deepcopy(model)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    old_gradient_mine, old_params = {}, {}
    for i, (inputs, labels) in enumerate(batches):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(net(inputs), labels)
        loss.backward()
        optimizer.step()
        if i != 0:
            loss = None
            for name, param in net.named_parameters():
                if "weight" in name:
                    ones = torch.ones(param.shape)
                    regularization = torch.norm(
                        param
                        - old_params[name].detach()
                        - old_gradient_mine[name].detach()
                        - ones * lr
                    )
                    loss = loss + regularization if loss else regularization
            loss = alpha * loss
            loss.backward()
            torch.nn.utils.clip_grad_value_(net.parameters(), q)
            optimizer.step()
        for name, param in net.named_parameters():
            if "weight" in name:
                old_gradient_mine[name] = copy.deepcopy(param.grad)
                old_params[name] = copy.deepcopy(param)
    return nn.utils.parameters_to_vector(net.parameters()).detach()


def batches_in_order(x, y, steps, batch_size, seed):
    """The batches local_sgd draws: without replacement within a pass, a new permutation per
    pass, all from one generator."""
    g = torch.Generator().manual_seed(seed)
    n, out = len(x), []
    order, position = torch.randperm(n, generator=g), 0
    for _ in range(steps):
        if position + batch_size > n:
            order, position = torch.randperm(n, generator=g), 0
        index = order[position : position + batch_size]
        position += batch_size
        out.append((x[index], y[index]))
    return out


@pytest.mark.parametrize("q", [0.2, 0.01])  # 0.01: the clipping binds
def test_leadfl_local_training_matches_the_official_loop(q):
    model, (x, y) = tiny_model(), tiny_data()
    steps, bs, lr, mom, alpha = 7, 8, 0.3, 0.1, 0.4
    start = nn.utils.parameters_to_vector(model.parameters()).detach()
    delta, info, _ = paper.local_training(
        model,
        x,
        y,
        steps=steps,
        batch_size=bs,
        lr=lr,
        momentum=mom,
        generator=torch.Generator().manual_seed(5),
        leadfl=True,
        alpha=alpha,
        q=q,
    )
    expected = official_leadfl_loop(model, batches_in_order(x, y, steps, bs, 5), lr, mom, alpha, q)
    torch.testing.assert_close(start + delta, expected, rtol=1e-5, atol=1e-6)
    assert info["regularizer"] > 0
    # the global model is left alone
    torch.testing.assert_close(nn.utils.parameters_to_vector(model.parameters()), start)


def test_plain_local_training_is_the_shared_local_sgd():
    model, (x, y) = tiny_model(), tiny_data()

    def ce(m, xb, yb):
        return nn.functional.cross_entropy(m(xb), yb)

    ours, info, _ = paper.local_training(
        model,
        x,
        y,
        steps=9,
        batch_size=10,
        lr=0.2,
        momentum=0.1,
        generator=torch.Generator().manual_seed(2),
    )
    shared, loss, _ = local_sgd(
        model,
        x,
        y,
        ce,
        steps=9,
        batch_size=10,
        lr=0.2,
        momentum=0.1,
        generator=torch.Generator().manual_seed(2),
    )
    torch.testing.assert_close(ours, shared)
    assert info["loss"] == pytest.approx(loss)


def test_first_batch_is_never_regularized():
    model, (x, y) = tiny_model(), tiny_data()
    kw = dict(steps=1, batch_size=8, lr=0.2, momentum=0.0)
    a, _, _ = paper.local_training(model, x, y, generator=torch.Generator().manual_seed(1), **kw)
    b, info, _ = paper.local_training(
        model, x, y, generator=torch.Generator().manual_seed(1), leadfl=True, **kw
    )
    torch.testing.assert_close(a, b)
    assert info["regularizer"] == 0.0


def test_bursty_schedule():
    attackers = [0, 1, 2, 3, 4]
    select = paper.bursty_schedule(20, attackers, 6, (3, 7), 4)
    seen_between = 0
    for r in range(200):
        chosen = select(r, torch.Generator().manual_seed(r))
        assert len(chosen) == len(set(chosen)) == 6 and all(0 <= c < 20 for c in chosen)
        bad = sum(c in attackers for c in chosen)
        if r in (3, 7):
            assert bad == 4
        else:
            seen_between += bad
    # random selection between bursts: 6 of 20 with 5 attackers -> 1.5 attackers on average
    assert 1.2 < seen_between / 198 < 1.8
    quiet = paper.bursty_schedule(20, attackers, 6, (3,), 2, attackers_between_bursts=False)
    for r in range(30):
        chosen = quiet(r, torch.Generator().manual_seed(r))
        assert sum(c in attackers for c in chosen) == (2 if r == 3 else 0)
    with pytest.raises(CompanionError, match="burst_malicious"):
        paper.bursty_schedule(20, attackers, 6, (3,), 7)


def test_presets_and_validation():
    assert set(paper.PRESETS) == {"smoke", "notebook", "full"}
    cfg = paper.PRESETS["notebook"]
    assert (cfg.alpha, cfg.q, cfg.target) == (0.4, 0.2, 8)  # official regular_weight, q, label
    with pytest.raises(CompanionError, match="unknown aggregator 'bulyan'.*coordinate_median"):
        cfg.replace(aggregator="bulyan")
    with pytest.raises(CompanionError, match="unknown defense"):
        cfg.replace(defenses=("none", "wbc"))
    with pytest.raises(CompanionError, match="malicious"):
        cfg.replace(malicious=40)


def fake_result(
    res_alone, res_lead, res_control=0.3, acc_alone=0.8, acc_lead=0.8, rate=0.05, res_alpha0=None
):
    """Six rounds, one burst at round 2; the window after it is rounds 3-5. Every arm's ASR
    after the burst is its residual + the clean floor 0.05."""
    rounds = list(range(6))
    floor = 0.05

    def arm(defense, res, acc, attackers):
        return paper.ArmResult(
            defense=defense,
            rounds=rounds,
            clean_accuracy=[acc] * 6,
            attack_success=[floor, floor, 1.0] + [floor + res] * 3,
            target_rate=[0.02, 0.02, 1.0] + [rate] * 3,
            attackers=attackers,
            regularizer=[],
            seconds=0.0,
        )

    config = paper.PRESETS["smoke"].replace(burst_rounds=(2,)).to_dict()
    attacked = [0, 0, 2, 0, 0, 0]
    return paper.LeadFLResult(
        config=config,
        arms={
            "none": arm("none", res_alone, acc_alone, attacked),
            "leadfl": arm("leadfl", res_lead, acc_lead, attacked),
            "alpha0": arm(
                "alpha0", res_control if res_alpha0 is None else res_alpha0, acc_lead, attacked
            ),
            "double_lr": arm("double_lr", res_control, acc_lead, attacked),
            "no_attack": arm("no_attack", 0.0, acc_alone, [0] * 6),
        },
    )


def test_claims_hold_fail_and_ties():
    result = fake_result(0.6, 0.2)
    # the burst round (ASR 1.0) is outside the window; the floor is subtracted
    assert after_last_burst(result.arms["none"], 2) == pytest.approx(0.65)
    assert residual_backdoor(result, "none") == pytest.approx(0.6)
    rows = paper.check_claims(fake_result(0.9, 0.05, res_control=0.3)).rows
    assert rows[0].claim.startswith("premise: ")
    assert [r.holds for r in rows] == [True, True, True, True, True, True]
    # a tie with robust aggregation alone, with α = 0 and with the control is not a hold
    rows = paper.check_claims(fake_result(0.9, 0.9, res_control=0.9)).rows
    assert [r.holds for r in rows] == [True, False, False, False, True, False]
    # LeadFL no better than α = 0 or plain SGD at 2η: the regularizer's own effect fails
    rows = paper.check_claims(fake_result(0.9, 0.3, res_control=0.28)).rows
    assert [r.holds for r in rows] == [True, True, False, False, True, False]
    # below the step-matched control, but not below α = 0: the own-effect row alone fails
    rows = paper.check_claims(fake_result(0.9, 0.2, res_control=0.4, res_alpha0=0.22)).rows
    assert [r.holds for r in rows] == [True, True, False, True, True, False]
    assert "0.20 vs 0.22" in rows[2].measured
    # a clean-accuracy cost beyond the margin
    rows = paper.check_claims(fake_result(0.9, 0.05, acc_lead=0.7)).rows
    assert [r.holds for r in rows] == [True, True, True, True, False, True]
    report = paper.check_claims(fake_result(0.9, 0.05))
    assert all(inv.holds for inv in report.invariants)


def test_failed_premise_marks_the_backdoor_rows_not_tested():
    # no backdoor left after the burst: nothing to remove
    rows = paper.check_claims(fake_result(0.1, 0.0, res_control=0.1)).rows
    assert not rows[0].holds
    assert [r.premise_ok for r in rows] == [True, False, False, False, True, False]
    assert not any(r.holds for i, r in enumerate(rows) if i in (1, 2, 3, 5))
    # a model that predicts the target for everything (target rate near the ASR): no backdoor
    rows = paper.check_claims(fake_result(0.9, 0.05, rate=0.9)).rows
    assert not rows[0].holds and not rows[1].premise_ok
    for arm in ("double_lr", "alpha0"):
        with pytest.raises(CompanionError, match=arm):
            result = fake_result(0.9, 0.05)
            del result.arms[arm]
            paper.check_claims(result)


def test_step_matched_control_is_plain_sgd_at_twice_the_lr():
    cfg = paper.PRESETS["smoke"].replace(local_steps=3, clients=2, malicious=1, per_round=2)
    x = torch.rand(40, 1, 8, 8)
    y = torch.randint(0, 10, (40,))
    shards = [(x[:20], y[:20]), (x[20:], y[20:])]
    model = paper.build_model(cfg, 1)
    control = paper.make_clients(cfg, shards, [0], "double_lr")
    plain = paper.make_clients(cfg.replace(lr=2 * cfg.lr), shards, [0], "none")
    alone = paper.make_clients(cfg, shards, [0], "none")

    def delta(clients, c):
        return clients[c](model, 0, torch.Generator().manual_seed(4)).message

    torch.testing.assert_close(delta(control, 1), delta(plain, 1))  # benign: 2η
    torch.testing.assert_close(delta(control, 0), delta(alone, 0))  # the attacker: η


def test_alpha0_arm_is_leadfl_without_the_regularizer_only():
    cfg = paper.PRESETS["smoke"].replace(local_steps=3, clients=2, malicious=1, per_round=2)
    x = torch.rand(40, 1, 8, 8)
    y = torch.randint(0, 10, (40,))
    shards = [(x[:20], y[:20]), (x[20:], y[20:])]
    model = paper.build_model(cfg, 1)
    ablation = paper.make_clients(cfg, shards, [0], "alpha0")
    zero = paper.make_clients(cfg.replace(alpha=0.0), shards, [0], "leadfl")
    lead = paper.make_clients(cfg, shards, [0], "leadfl")
    alone = paper.make_clients(cfg, shards, [0], "none")

    def delta(clients, c):
        return clients[c](model, 0, torch.Generator().manual_seed(4)).message

    torch.testing.assert_close(delta(ablation, 1), delta(zero, 1))  # benign: LeadFL at α = 0
    assert not torch.allclose(delta(ablation, 1), delta(lead, 1))  # ... which is not LeadFL
    torch.testing.assert_close(delta(ablation, 0), delta(alone, 0))  # the attacker: plain SGD


def test_accuracy_asr_and_target_rate():
    class Always(nn.Module):
        def forward(self, x):
            out = torch.zeros(len(x), 10)
            out[:, 8] = 1.0
            return out

    clean = (torch.zeros(5, 1, 2, 2), torch.tensor([8, 1, 2, 3, 8]))
    triggered = (torch.zeros(3, 1, 2, 2), torch.tensor([1, 2, 3]))
    acc, asr, rate = paper.accuracy_and_asr(Always(), clean, triggered, target=8)
    assert (acc, asr, rate) == (pytest.approx(0.4), 1.0, 1.0)


def test_tiny_run_is_paired_and_serializes(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        dataset="digits", image_size=8, rounds=3, burst_rounds=(1,), local_steps=2
    )
    result = paper.run(cfg, out_dir=tmp_path)
    alone, lead = result.arms["none"], result.arms["leadfl"]
    assert alone.attackers == lead.attackers == result.arms["double_lr"].attackers == [0, 2, 0]
    assert result.arms["alpha0"].attackers == [0, 2, 0]
    assert result.arms["no_attack"].attackers == [0, 0, 0]
    assert len(lead.regularizer) == 3 and not alone.regularizer
    assert len(lead.target_rate) == 3
    again = paper.LeadFLResult.load(tmp_path / "result.json")
    assert again.arms["leadfl"].attack_success == lead.attack_success
    assert str(paper.check_claims(again)).splitlines()[-1].startswith("claims hold: ")


def test_an_interrupted_arm_resumes_to_the_same_result(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(
        rounds=4, burst_rounds=(1,), local_steps=2, defenses=("leadfl",), checkpoint_every=1
    )
    whole = paper.run(cfg, out_dir=tmp_path / "a")
    # stop after 2 rounds (the checkpoint holds round 2), then resume the 4-round run
    paper.run(cfg.replace(rounds=2), out_dir=tmp_path / "b")
    (tmp_path / "b" / "leadfl" / "arm.json").unlink()
    resumed = paper.run(cfg, out_dir=tmp_path / "b", resume=True)
    a, b = whole.arms["leadfl"], resumed.arms["leadfl"]
    assert a.rounds == b.rounds == [0, 1, 2, 3]
    assert a.attack_success == b.attack_success and a.clean_accuracy == b.clean_accuracy
    assert a.regularizer == b.regularizer


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/leadfl.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def test_exercise_3_check_accepts_the_answer_and_rejects_planted_ones():
    from companion.core import ExerciseError, check, report_ok

    cell = _notebook_cell('report_ok(f"a ten times stronger regularizer')
    result = fake_result(0.6, 0.35, res_control=0.25, acc_alone=0.80, acc_lead=0.85)
    cfg = paper.LeadFLConfig(**{**result.config, "burst_rounds": (2,)})
    # the strong run: residual backdoor 0.05 above the floor, clean accuracy 0.65
    strong_arm = copy.deepcopy(result.arms["leadfl"])
    strong_arm.attack_success = [0.05, 0.05, 1.0, 0.10, 0.10, 0.10]
    strong_arm.clean_accuracy = [0.65] * 6
    strong = paper.LeadFLResult(
        config={**result.config, "alpha": 10 * cfg.alpha}, arms={"leadfl": strong_arm}
    )
    env = dict(paper=paper, cfg=cfg, result=result, check=check, report_ok=report_ok)
    env |= dict(after_last_burst=after_last_burst, residual_backdoor=residual_backdoor)
    answer = dict(strong=strong, own_effect=0.25 - 0.05, cost=0.80 - 0.65, verdict="damage")
    exec(cell, env | answer)
    weak = paper.LeadFLResult(config=result.config, arms={"leadfl": strong_arm})  # α not 10×
    planted = [
        {"strong": None},
        {"strong": weak},
        {"own_effect": None},
        {"own_effect": 0.0},
        {"own_effect": 0.25 - 0.35},  # the own effect at the official α, copied from section 4
        {"own_effect": True},
        {"cost": 0.0},
        {"cost": 0.85 - 0.65},  # against LeadFL at the official α, not the server-only arm
        {"verdict": None},
        {"verdict": "defence"},
        {"verdict": "nothing"},
    ]
    for change in planted:
        with pytest.raises((ExerciseError, AttributeError, TypeError)):
            exec(cell, env | answer | change)
