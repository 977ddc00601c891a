"""The shared federated loop and its plug-ins, against loops, numpy/scipy and plain SGD."""

import itertools
import json

import numpy as np
import pytest
import torch
from lightning_fabric import Fabric
from scipy import optimize, stats

from companion.core import federated as fed
from companion.core import training
from companion.errors import CompanionError


def _messages(k=7, d=5, seed=0):
    return torch.randn(k, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _linear_client(x, y, steps, batch_size, lr):
    """A client running local SGD on squared error for a linear model."""

    def loss_fn(model, xb, yb):
        return 0.5 * (model(xb).squeeze(1) - yb).square().mean()

    def client(model, round, generator):
        delta, loss, _ = fed.local_sgd(
            model, x, y, loss_fn, steps=steps, batch_size=batch_size, lr=lr, generator=generator
        )
        return fed.Update(delta, weight=len(x), info={"loss": loss})

    return client


def test_one_client_equals_plain_sgd():
    """One client, mean aggregation, server lr 1 == centralised SGD on the same batches, with
    the gradient of 0.5 * mean squared error written by hand (no autograd)."""
    g = torch.Generator().manual_seed(1)
    x, w_true = torch.randn(40, 3, generator=g), torch.tensor([1.0, -2.0, 0.5])
    y = x @ w_true + 0.1 * torch.randn(40, generator=g)
    model = torch.nn.Linear(3, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    rounds, steps, batch, lr, seed = 4, 6, 8, 0.1, 3
    history = fed.run_rounds(
        Fabric(accelerator="cpu", devices=1),
        model,
        [_linear_client(x, y, steps, batch, lr)],
        rounds=rounds,
        seed=seed,
    )
    w = torch.zeros(3)
    for r in range(rounds):
        gen = fed.round_generator(seed, r, 0)
        order, pos = torch.randperm(40, generator=gen), 0
        for _ in range(steps):
            if pos + batch > 40:
                order, pos = torch.randperm(40, generator=gen), 0
            i = order[pos : pos + batch]
            pos += batch
            w = w - lr * x[i].T @ (x[i] @ w - y[i]) / batch
    torch.testing.assert_close(model.weight.detach()[0], w, rtol=1e-5, atol=1e-6)
    assert history.values("participants") == [1.0] * rounds
    assert len(history.values("client_loss")) == rounds


def test_aggregators_against_numpy_and_loops():
    m = _messages()
    a = m.numpy()
    np.testing.assert_allclose(fed.coordinate_median(m).numpy(), np.median(a, axis=0))
    np.testing.assert_allclose(fed.trimmed_mean(m, b=2).numpy(), stats.trim_mean(a, 2 / 7, axis=0))
    w = torch.arange(1.0, 8.0, dtype=torch.float64)
    np.testing.assert_allclose(fed.mean(m, w).numpy(), (w.numpy()[:, None] * a).sum(0) / 28)
    f = 2
    scores = [
        sorted(((a[i] - a[j]) ** 2).sum() for j in range(7) if j != i)[: 7 - f - 2]
        for i in range(7)
    ]
    scores = np.array([sum(s) for s in scores])
    np.testing.assert_allclose(fed.krum_scores(m, f).numpy(), scores)
    best = np.argsort(scores)
    np.testing.assert_allclose(fed.krum(m, f=f).numpy(), a[best[0]])
    np.testing.assert_allclose(fed.multi_krum(m, f=f, m=3).numpy(), a[best[:3]].mean(0))


def test_geometric_median_minimises_the_sum_of_distances():
    m = _messages(k=9, d=3, seed=2)
    z = fed.geometric_median(m, iterations=200, nu=1e-12).numpy()
    a = m.numpy()
    best = optimize.minimize(lambda v: np.linalg.norm(a - v, axis=1).sum(), a.mean(0), tol=1e-12)
    assert np.linalg.norm(a - z, axis=1).sum() <= best.fun + 1e-8
    np.testing.assert_allclose(z, best.x, atol=1e-4)


def test_bucketing_averages_shuffled_buckets():
    m = _messages(k=5)
    seen = []
    out = fed.bucketing(
        m, 2, lambda b, w: seen.append(b) or b.sum(0), torch.Generator().manual_seed(4)
    )
    perm = torch.randperm(5, generator=torch.Generator().manual_seed(4))
    expected = torch.stack([m[perm[0:2]].mean(0), m[perm[2:4]].mean(0), m[perm[4:5]].mean(0)])
    torch.testing.assert_close(seen[0], expected)
    torch.testing.assert_close(out, expected.sum(0))


def test_attacks():
    honest, byz = _messages(k=4, seed=5), _messages(k=2, seed=6)
    g = torch.Generator()
    torch.testing.assert_close(fed.bit_flip(honest, byz, g), -byz)
    a = honest.numpy()
    expected = a.mean(0) - 1.5 * a.std(0, ddof=1)
    np.testing.assert_allclose(fed.alie(honest, byz, g, z=1.5).numpy(), np.stack([expected] * 2))
    np.testing.assert_allclose(
        fed.ipm(honest, byz, g, eps=0.2).numpy(), np.stack([-0.2 * a.mean(0)] * 2)
    )
    torch.testing.assert_close(fed.no_attack(honest, byz, g), byz)


def test_unknown_names_are_clear_errors():
    with pytest.raises(CompanionError, match="unknown aggregator 'avg'; valid: mean"):
        fed.aggregate("avg", _messages())
    with pytest.raises(CompanionError, match="unknown attack 'flip'"):
        fed.get_attack("flip")


class _ConstantClient:
    def __init__(self, value):
        self.value = value

    def __call__(self, model, round, generator):
        d = fed.flat_params(model).numel()
        return fed.Update(torch.full((d,), self.value), info={"v": self.value})


def test_byzantine_messages_are_replaced_and_robust_rules_resist():
    model = torch.nn.Linear(2, 1)
    clients = [_ConstantClient(1.0)] * 4 + [_ConstantClient(1.0)]
    before = fed.flat_params(model)
    history = fed.run_rounds(
        Fabric(accelerator="cpu", devices=1),
        model,
        clients,
        rounds=1,
        seed=0,
        byzantine=[4],
        attack=lambda h, b, g: torch.full_like(b, 100.0),
        aggregator=fed.coordinate_median,
    )
    torch.testing.assert_close(fed.flat_params(model), before + 1.0)
    assert history.values("byzantine") == [1.0] and history.values("client_v") == [1.0]


def test_resume_gives_the_same_result(tmp_path):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 2, generator=g), torch.randn(30, generator=g)
    clients = [_linear_client(x[i::3], y[i::3], 3, 4, 0.05) for i in range(3)]

    def select(r, gen):
        return sorted(torch.randperm(3, generator=gen)[:2].tolist())

    def make():
        torch.manual_seed(0)
        return torch.nn.Linear(2, 1)

    fabric = Fabric(accelerator="cpu", devices=1)
    full = make()
    h_full = fed.run_rounds(fabric, full, clients, rounds=5, seed=1, select=select)

    class Stop(Exception):
        pass

    def stop_at_3(r, model):
        if r == 3:
            raise Stop
        return {}

    part, ckpt = make(), tmp_path / "fed.ckpt"
    with pytest.raises(Stop):
        fed.run_rounds(
            fabric,
            part,
            clients,
            rounds=5,
            seed=1,
            select=select,
            evaluate=stop_at_3,
            checkpoint=ckpt,
            checkpoint_every=2,
        )
    resumed = make()
    h = fed.run_rounds(
        fabric,
        resumed,
        clients,
        rounds=5,
        seed=1,
        select=select,
        checkpoint=ckpt,
        checkpoint_every=2,
        resume=True,
    )
    torch.testing.assert_close(fed.flat_params(resumed), fed.flat_params(full))
    assert h.values("client_loss") == pytest.approx(h_full.values("client_loss"))
    # round 2 was logged before the interruption and again after the resume: once in the file
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4]


def _bn_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2)
    )


def _ce_client(x, y, steps=2):
    def client(model, round, generator):
        delta, loss, buffers = fed.local_sgd(
            model,
            x,
            y,
            lambda m, xb, yb: torch.nn.functional.cross_entropy(m(xb), yb),
            steps=steps,
            batch_size=len(x),
            lr=0.1,
            generator=generator,
        )
        return fed.Update(delta, weight=len(x), info={"loss": loss}, buffers=buffers)

    return client


def test_batchnorm_statistics_are_aggregated_like_centralised_training():
    """Three clients holding the same data, full batches: every client computes what
    centralised training computes, so FedAvg must equal it, running statistics included
    (aggregating parameters only would leave BatchNorm's statistics at their initial 0 and 1
    and the model wrong in eval mode)."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 3, generator=g) * 2 + 1, torch.randint(0, 2, (16,), generator=g)
    federated, central = _bn_model(), _bn_model()
    fed.run_rounds(
        Fabric(accelerator="cpu", devices=1),
        federated,
        [_ce_client(x, y) for _ in range(3)],
        rounds=3,
        seed=0,
    )
    optimizer = torch.optim.SGD(central.parameters(), lr=0.1)
    for _ in range(3 * 2):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(central(x), y).backward()
        optimizer.step()
    for (name, a), b in zip(federated.state_dict().items(), central.state_dict().values()):
        if name.endswith("num_batches_tracked"):
            assert int(a) == 0  # integer buffers keep the server's count
        else:
            torch.testing.assert_close(a, b, msg=name)
    federated.eval(), central.eval()
    torch.testing.assert_close(federated(x), central(x))


def test_a_batchnorm_model_without_buffers_in_the_updates_is_an_error():
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))

    def client(model, round, generator):
        return fed.Update(_ce_client(x, y)(model, round, generator).message)  # no buffers

    with pytest.raises(CompanionError, match="BatchNorm"):
        fed.run_rounds(
            Fabric(accelerator="cpu", devices=1), _bn_model(), [client], rounds=1, seed=0
        )


def test_running_means_are_the_weighted_mean_of_the_clients():
    """Clients with different data: the server's running mean is the weighted mean of the
    clients' running means (momentum 0.1, one step each: 0.1 × the weighted mean of the batch
    means, computed here by hand)."""
    g = torch.Generator().manual_seed(1)
    shards = [
        (torch.randn(n, 3, generator=g) + k, torch.randint(0, 2, (n,), generator=g))
        for k, n in enumerate((4, 8, 12))
    ]
    model = _bn_model()
    with torch.no_grad():
        hidden = [model[0](x) for x, _ in shards]
    fed.run_rounds(
        Fabric(accelerator="cpu", devices=1),
        model,
        [_ce_client(x, y, steps=1) for x, y in shards],
        rounds=1,
        seed=0,
    )
    weights = torch.tensor([4.0, 8.0, 12.0])
    by_hand = 0.1 * sum(w * h.mean(0) for w, h in zip(weights, hidden)) / weights.sum()
    torch.testing.assert_close(model[1].running_mean, by_hand)


def test_weigh_sees_the_messages_the_attack_sent():
    seen = []

    def weigh(updates):
        seen.append([float(u.message[0]) for u in updates])
        return torch.ones(len(updates))

    fed.run_rounds(
        Fabric(accelerator="cpu", devices=1),
        torch.nn.Linear(2, 1),
        [_ConstantClient(1.0)] * 3,
        rounds=1,
        seed=0,
        byzantine=[2],
        attack=lambda h, b, g: torch.full_like(b, -5.0),
        weigh=weigh,
    )
    assert seen == [[1.0, 1.0, -5.0]]


def test_start_metrics_log_keeps_only_rows_before_the_resume_point(tmp_path):
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(6)))
    training.start_metrics_log(path, "step", 4)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [0, 1, 2, 3]
    training.start_metrics_log(path, "step", 0)
    assert path.read_text() == ""


def test_iid_split_is_a_partition():
    parts = fed.iid_split(10, 3, torch.Generator().manual_seed(0))
    assert sorted(itertools.chain.from_iterable(p.tolist() for p in parts)) == list(range(10))
    assert sorted(len(p) for p in parts) == [3, 3, 4]


def test_local_sgd_after_step_sees_each_steps_gradients_and_can_step_again():
    """The hook runs after every optimizer step with that step's gradients in .grad; a second
    optimizer.step() inside it doubles a plain SGD step (checked against two plain runs)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    x, y = torch.randn(12, 3), torch.randint(0, 2, (12,))

    def ce(m, xb, yb):
        return torch.nn.functional.cross_entropy(m(xb), yb)

    seen = []

    def hook(local, optimizer, step):
        seen.append((step, local.weight.grad.clone()))
        optimizer.step()

    kw = dict(steps=3, batch_size=12, generator=torch.Generator().manual_seed(1))
    doubled, _, _ = fed.local_sgd(model, x, y, ce, lr=0.1, after_step=hook, **kw)
    assert [s for s, _ in seen] == [0, 1, 2]
    assert all(g.abs().sum() > 0 for _, g in seen)
    # full batches: one step of 2·lr per step equals two steps of lr on the same gradient
    reference = torch.nn.Linear(3, 2)
    reference.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(reference.parameters(), lr=0.2)
    for _ in range(3):
        opt.zero_grad()
        ce(reference, x, y).backward()
        opt.step()
    expected = fed.flat_params(reference) - fed.flat_params(model)
    torch.testing.assert_close(doubled, expected)
