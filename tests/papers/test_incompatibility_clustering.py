"""Incompatibility clustering: the keep rule, the vote and the refinement against independent
computations (a sort-based quantile, Counter, closed forms), and the whole defense with a
closed-form nearest-centroid learner on a planted backdoor."""

from collections import Counter

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import incompatibility_clustering as paper
from companion.papers.incompatibility_clustering.method import (
    ISPLSettings,
    ema_loss,
    filter_noise,
    ispl_core_set,
    learner_data_perc,
    mode_rand,
    refine_confidence,
    refit_iterations,
    trimmed_set,
    vote_keep,
)


def _quantile(values, q):
    """Linear-interpolation quantile from a sort (numpy's default method, written out)."""
    v = np.sort(values)
    pos = q * (len(v) - 1)
    lo, hi = int(np.floor(pos)), int(np.ceil(pos))
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


@pytest.mark.parametrize("it", [0, 1, 2, 3, 4])
def test_trimmed_set_matches_a_loop(it):
    rng = np.random.default_rng(it)
    losses = rng.exponential(size=300)
    labels = rng.integers(0, 5, size=300)
    refit_it, dp = 5, 0.24
    q = min(1.0, min(3, max(1, refit_it - 2 - it)) * dp)  # 0.72, 0.48, 0.24, 0.24, 0.24
    expected = np.zeros(300, dtype=bool)
    glob = _quantile(losses, q)
    for i in range(300):
        own = losses[labels == labels[i]]
        expected[i] = losses[i] <= glob or losses[i] <= _quantile(own, q / 8)
    got = trimmed_set(losses, labels, it, refit_it, dp, 5)
    np.testing.assert_array_equal(got, expected)
    # the threshold tightens: about q of the examples (plus a few per class) are kept
    assert q <= got.mean() <= q + 0.05


def test_every_class_keeps_its_easiest_examples():
    losses = np.r_[np.full(50, 0.1), np.full(50, 5.0) + np.arange(50) * 0.01]
    labels = np.r_[np.zeros(50, int), np.ones(50, int)]
    keep = trimmed_set(losses, labels, it=4, refit_it=5, data_perc=0.3, num_classes=2)
    assert keep[:50].all()
    assert keep[50] and not keep[99]  # class 1's lowest loss survives the class quantile


@pytest.mark.parametrize(
    "dp, r", [(0.12, 5), (0.24, 5), (0.32, 5), (0.47, 4), (0.88, 3), (0.999, 0), (1.0, 0)]
)
def test_refit_iterations(dp, r):
    assert refit_iterations(dp) == r  # 2 + clip(1 // dp, 1, 3); none when dp >= .999


def test_learner_data_perc():
    assert learner_data_perc(0.24, 1000, 1000) == pytest.approx(0.24)
    assert learner_data_perc(0.24, 1000, 500) == pytest.approx(0.48)
    assert learner_data_perc(0.24, 1000, 100) == 1.0


def test_ema_loss():
    a, b = np.array([1.0, np.nan, 3.0]), np.array([2.0, 2.0, 2.0])
    first = ema_loss(a, None, 0.9)
    np.testing.assert_allclose(first, [0.1, 0.2, 0.3])  # NaN -> mean loss 2
    np.testing.assert_allclose(ema_loss(b, first, 0.9), 0.1 * b + 0.9 * first)


def test_mode_rand_matches_counter():
    rng = np.random.default_rng(0)
    votes = rng.integers(0, 4, size=(5, 200))
    out, count = mode_rand(votes, np.random.default_rng(1))
    for col in range(200):
        c = Counter(votes[:, col].tolist())
        top = max(c.values())
        assert count[col] == top
        assert c[out[col]] == top  # a tie is broken among the tied labels only


def test_vote_keep_needs_majority_on_the_label_and_two_votes():
    votes = np.array([[0, 1, 2, 3], [0, 1, 2, 1], [0, 2, 1, 0]])
    labels = np.array([0, 1, 1, 3])
    keep = vote_keep(votes, labels, np.random.default_rng(0))
    # col 0: 3 votes for 0 -> keep; col 1: 2 votes for 1 -> keep; col 2: majority 2 != 1;
    # col 3: votes 3, 1, 0 -> count 1 -> never kept
    np.testing.assert_array_equal(keep, [True, True, False, False])


def test_refine_confidence_closed_form():
    labels = np.array([0, 1])
    c = None
    for k in range(1, 6):
        c = refine_confidence(c, np.array([0, 0]), labels)  # first always right, second wrong
        np.testing.assert_allclose(c, [1 - 0.5 * 0.8**k, 0.5 * 0.8**k])
    assert (c > 0.5).tolist() == [True, False]


class CentroidTrainer:
    """A closed-form learner: nearest class mean of the examples it was trained on, softmax of
    negative squared distances. Records what it was asked to train on."""

    def __init__(self, x, y, classes):
        self.x, self.y, self.classes = x, y, classes
        self.calls = []

    def new(self, name):
        return {"means": np.zeros((self.classes, self.x.shape[1]))}

    def train(self, handle, indices, epochs, name, new_optimizer=False):
        self.calls.append((name, np.array(indices)))
        for c in range(self.classes):
            rows = indices[self.y[indices] == c]
            if len(rows):
                handle["means"][c] = self.x[rows].mean(0)

    def evaluate(self, handle, indices):
        d = ((self.x[indices, None, :] - handle["means"][None]) ** 2).sum(-1)
        logp = torch.log_softmax(torch.tensor(-d), -1).numpy()
        return -logp[np.arange(len(indices)), self.y[indices]], d.argmin(1)


def _planted(seed=0, per_class=150, poisons=30):
    """Three Gaussian classes in 3 of 4 dimensions; poisons are class-0 points with a
    'trigger' (dimension 3 set to 6) labelled 2."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0]], float)
    y = np.repeat(np.arange(3), per_class)
    x = centers[y] + rng.normal(scale=0.7, size=(len(y), 4))
    bad = rng.choice(np.flatnonzero(y == 0), poisons, replace=False)
    x[bad, 3] = 6.0
    y = y.copy()
    y[bad] = 2
    truth = np.zeros(len(y), bool)
    truth[bad] = True
    return x, y, truth


def test_ispl_learner_trains_on_what_it_keeps():
    x, y, _ = _planted()
    trainer = CentroidTrainer(x, y, 3)
    active = np.ones(len(y), bool)
    rng = np.random.default_rng(0)
    settings = ISPLSettings(boost=4, data_perc=0.24)
    record, _ = ispl_core_set(trainer, y, active, 0.24, 3, settings, rng)
    assert record.refit_it == refit_iterations(0.24) == len(record.train_sets)
    assert 0.35 < record.train_sets[0].mean() < 0.65  # the first learner starts from a half
    # the last training call is the fresh network on the core set
    name, idx = trainer.calls[-1]
    assert name.endswith("retrain") and set(idx) == set(np.flatnonzero(record.core_set))
    assert 0.2 <= record.core_set.mean() <= 0.35
    # later subsets are random 1/β samples of the kept examples: about a quarter of the data
    for t in record.train_sets[1:]:
        assert t.sum() < 0.5 * len(y)


def test_filter_noise_removes_planted_poisons():
    x, y, truth = _planted()
    settings = ISPLSettings(
        boost=4, bags=2, data_perc=0.24, min_active=10, refine_rounds=5, refine_epochs=1
    )
    record = filter_noise(CentroidTrainer(x, y, 3), y, 3, settings, np.random.default_rng(0))
    for bag in (0, 1):
        cores = [r.core_set for r, b in zip(record.learners, record.bag_of_learner) if b == bag]
        assert 1 <= len(cores) <= 4 and (np.sum(cores, 0) <= 1).all()
    assert record.votes.shape == (len(record.learners), len(y))
    assert (~record.keep[truth]).mean() >= 0.9  # poisons removed
    assert (~record.keep[~truth]).mean() <= 0.1  # clean examples kept


def test_measure_counts_attack_success_and_targeted_misclassification():
    cfg = paper.PRESETS["smoke"].replace(source=0, target=2, trigger_size=2)
    x_test = torch.zeros(6, 1, 4, 4)
    x_test[1, 0, 0, 0] = 1.0  # a source image the model gets wrong when clean
    y_test = torch.tensor([0, 0, 0, 1, 2, 2])
    data = paper.experiment.PoisonedData(
        torch.zeros(1, 1, 4, 4), torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=bool),
        x_test, y_test, 1, 3,
    )  # fmt: skip

    class Backdoored(torch.nn.Module):
        """Predicts 2 on a stamped image, 1 on image 1's mark, 0 otherwise."""

        def forward(self, x):
            stamped = x[:, 0, -1, -1] > 0.5
            marked = x[:, 0, 0, 0] > 0.5
            out = torch.zeros(len(x), 3)
            out[:, 0] = 1.0
            out[marked, 1] = 2.0
            out[stamped, 2] = 3.0
            return out

    m = paper.measure(Backdoored(), cfg, data, "cpu")
    assert m.attack_success == pytest.approx(1.0)  # every stamped source image -> target
    assert m.targeted_misclassification == pytest.approx(2 / 3)  # image 1 was wrong when clean
    assert m.clean_accuracy == pytest.approx(2 / 6)


def test_bad_options_name_the_choices():
    with pytest.raises(CompanionError, match="valid: mnist_subset, digits, cifar10"):
        paper.PRESETS["smoke"].replace(dataset="svhn")
    with pytest.raises(CompanionError, match="valid: mlp, cnn"):
        paper.PRESETS["smoke"].replace(model="resnet")
    with pytest.raises(CompanionError, match="source and target"):
        paper.PRESETS["smoke"].replace(source=2, target=2)


def test_presets_share_the_algorithm():
    full = paper.PRESETS["full"]
    assert (full.warm_up, full.refit_epochs, full.retrain_epochs) == (8, 4, 40)
    assert (full.boost, full.bags, full.beta) == (8, 3, 4.0)
    assert (full.refine_rounds, full.refine_epochs) == (20, 5)
    settings = full.settings(50_000)
    assert settings.data_perc == pytest.approx(0.12) and settings.min_active == 2000


def test_baseline_filter_drops_exactly_what_one_network_misclassifies():
    from companion.papers.incompatibility_clustering.experiment import misclassified_filter

    x, y, truth = _planted(seed=3)
    trainer = CentroidTrainer(x, y, 3)
    keep = misclassified_filter(trainer, y, epochs=1)
    ((name, trained_on),) = trainer.calls
    assert name == "baseline/filter" and len(trained_on) == len(y)  # one network, all data
    means = np.stack([x[y == c].mean(0) for c in range(3)])
    pred = ((x[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(keep, pred == y)
    assert not keep[truth].all()  # it sees labels only, yet drops some planted poisons
