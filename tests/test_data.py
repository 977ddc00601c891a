"""Tests for companion.data: shipped datasets, splits, sequence tasks, CIFAR and image folders."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
import torch
from PIL import Image

from companion.data import (
    DATASETS,
    TASKS,
    ImageFolder,
    Splits,
    cifar_classes,
    class_interleaved,
    load,
    load_cifar,
    load_digits,
    load_mnist_subset,
    make_sequence_task,
    stratified_split,
    write_cifar_fixture,
)
from companion.errors import CompanionError


@pytest.fixture(scope="module")
def digits() -> Splits:
    return load_digits()


@pytest.fixture(scope="module")
def mnist() -> Splits:
    return load_mnist_subset()


# ---------------------------------------------------------------- digits and splits


def test_digits_shapes_dtypes_ranges(digits):
    for ds in (digits.train, digits.val, digits.test):
        x, y = ds.tensors
        assert x.dtype == torch.float32 and y.dtype == torch.int64
        assert x.shape[1:] == (1, 8, 8)
        assert x.min() >= 0 and x.max() <= 1
        assert y.min() >= 0 and y.max() <= 9
    assert digits.num_classes == 10
    assert digits.classes == tuple("0123456789")
    assert digits.image_shape == (1, 8, 8)
    assert max(float(ds.tensors[0].max()) for ds in (digits.train, digits.val)) == 1.0


def test_digits_split_sizes_cover_everything(digits):
    sizes = [len(ds) for ds in (digits.train, digits.val, digits.test)]
    assert sum(sizes) == 1797
    assert sizes[2] == pytest.approx(0.2 * 1797, abs=1)
    assert sizes[1] == pytest.approx(0.2 * 1797, abs=1)


def test_digits_splits_disjoint_and_cover_all_rows():
    # Split an index column alongside the labels to follow every original row exactly.
    from sklearn.datasets import load_digits as sk_digits

    y = torch.from_numpy(sk_digits().target)
    index = torch.arange(len(y))
    splits = stratified_split(index, y, 0.2, 0.2, seed=0)
    parts = [set(ds.tensors[0].tolist()) for ds in (splits.train, splits.val, splits.test)]
    assert sum(len(p) for p in parts) == 1797
    assert parts[0] | parts[1] | parts[2] == set(range(1797))
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    # labels travel with their rows
    for ds in (splits.train, splits.val, splits.test):
        rows, labels = ds.tensors
        assert torch.equal(labels, y[rows])


def test_stratified_every_class_in_every_split(digits):
    full = torch.cat([ds.tensors[1] for ds in (digits.train, digits.val, digits.test)])
    full_share = torch.bincount(full, minlength=10) / len(full)
    for ds in (digits.train, digits.val, digits.test):
        counts = torch.bincount(ds.tensors[1], minlength=10)
        assert (counts > 0).all()
        assert torch.allclose(counts / counts.sum(), full_share, atol=0.01)


def test_split_determinism(digits):
    again = load_digits(seed=0)
    other = load_digits(seed=1)
    for a, b in zip((digits.train, digits.val, digits.test), (again.train, again.val, again.test)):
        assert torch.equal(a.tensors[0], b.tensors[0]) and torch.equal(a.tensors[1], b.tensors[1])
    assert not torch.equal(digits.test.tensors[0], other.test.tensors[0])


def test_digits_upsampling(digits):
    big = load_digits(image_size=32)
    assert big.image_shape == (1, 32, 32)
    x = big.train.tensors[0]
    assert x.dtype == torch.float32 and x.min() >= 0 and x.max() <= 1
    assert len(big.train) == len(digits.train)
    assert torch.equal(big.train.tensors[1], digits.train.tensors[1])  # same split
    # upsampling keeps each image's mean brightness roughly the same
    assert torch.allclose(x.mean((1, 2, 3)), digits.train.tensors[0].mean((1, 2, 3)), atol=0.02)


def test_splits_image_shape_none_for_non_images():
    x = torch.randn(40, 5)
    y = torch.arange(40) % 2
    splits = stratified_split(x, y, 0.25, 0.25, seed=0)
    assert splits.image_shape is None
    assert splits.classes == ("0", "1") and splits.num_classes == 2


# ---------------------------------------------------------------- mnist subset


def test_mnist_subset(mnist):
    xs = [ds.tensors[0] for ds in (mnist.train, mnist.val, mnist.test)]
    ys = torch.cat([ds.tensors[1] for ds in (mnist.train, mnist.val, mnist.test)])
    assert sum(len(x) for x in xs) == 5000
    assert torch.bincount(ys).tolist() == [500] * 10
    assert mnist.image_shape == (1, 28, 28)
    for x in xs:
        assert x.dtype == torch.float32 and x.min() >= 0 and x.max() <= 1
    assert max(float(x.max()) for x in xs) == 1.0
    assert ys.dtype == torch.int64
    for ds in (mnist.train, mnist.val, mnist.test):
        assert (torch.bincount(ds.tensors[1], minlength=10) > 0).all()


@pytest.mark.parametrize("size", [14, 32])
def test_mnist_resize(size):
    splits = load_mnist_subset(image_size=size, seed=3)
    x = splits.train.tensors[0]
    assert splits.image_shape == (1, size, size)
    assert x.min() >= 0 and x.max() <= 1


def test_load_by_name(digits):
    assert set(DATASETS) == {"digits", "mnist_subset"}
    splits = load("digits", seed=0)
    assert torch.equal(splits.test.tensors[0], digits.test.tensors[0])


# ---------------------------------------------------------------- sequence tasks


def test_sequence_shapes_and_determinism():
    for task in TASKS:
        vocab = 2 if task == "parity" else 7
        ds = make_sequence_task(task, n=32, seq_len=9, vocab_size=vocab, seed=5)
        x, t = ds.tensors
        assert x.shape == (32, 9) and x.dtype == torch.int64 and t.dtype == torch.int64
        assert x.min() >= 0 and x.max() < vocab
        assert t.shape == ((32, 9) if task in ("copy", "reverse", "sort") else (32,))
        again = make_sequence_task(task, n=32, seq_len=9, vocab_size=vocab, seed=5)
        other = make_sequence_task(task, n=32, seq_len=9, vocab_size=vocab, seed=6)
        assert torch.equal(x, again.tensors[0]) and torch.equal(t, again.tensors[1])
        assert not torch.equal(x, other.tensors[0])


def test_sequence_targets_copy_reverse_sort():
    x, t = make_sequence_task("copy", 50, 12, 10).tensors
    assert torch.equal(t, x)
    x, t = make_sequence_task("reverse", 50, 12, 10).tensors
    assert all(t[i].tolist() == x[i].tolist()[::-1] for i in range(50))
    x, t = make_sequence_task("sort", 50, 12, 10).tensors
    assert all(t[i].tolist() == sorted(x[i].tolist()) for i in range(50))


def test_sequence_targets_majority_ties_to_smallest():
    x, t = make_sequence_task("majority", 300, 6, 4, seed=1).tensors
    ties = 0
    for row, label in zip(x.tolist(), t.tolist()):
        counts = Counter(row)
        best = max(counts.values())
        winners = [token for token, c in counts.items() if c == best]
        ties += len(winners) > 1
        assert label == min(winners)
    assert ties > 0  # the tie rule was actually exercised


def test_sequence_targets_parity():
    x, t = make_sequence_task("parity", 100, 15, 2, seed=2).tensors
    assert set(x.unique().tolist()) == {0, 1}
    assert t.tolist() == [sum(row) % 2 for row in x.tolist()]
    assert 0 < t.sum() < 100


# ---------------------------------------------------------------- CIFAR


@pytest.mark.parametrize(
    "name, folder, label_key, files",
    [
        ("cifar10", "cifar-10-batches-py", b"labels", [f"data_batch_{i}" for i in range(1, 6)]),
        ("cifar100", "cifar-100-python", b"fine_labels", ["train"]),
    ],
)
def test_cifar_round_trip(tmp_path, name, folder, label_key, files):
    written = write_cifar_fixture(tmp_path, name, n_train=23, n_test=7, seed=4)
    assert written == tmp_path / folder
    train = load_cifar(tmp_path, name, "train")
    test = load_cifar(tmp_path / folder, name, split="test")  # the extracted folder itself
    for ds, n in ((train, 23), (test, 7)):
        x, y = ds.tensors
        assert x.shape == (n, 3, 32, 32) and x.dtype == torch.float32
        assert y.shape == (n,) and y.dtype == torch.int64
        assert x.min() >= 0 and x.max() <= 1

    # Read the raw files independently: row = 1024 R, 1024 G, 1024 B, each row-major 32x32.
    raw = []
    for file in files:
        with (written / file).open("rb") as f:
            raw.append(pickle.load(f, encoding="bytes"))
    data = np.concatenate([b[b"data"] for b in raw])
    labels = sum((b[label_key] for b in raw), [])
    assert data.dtype == np.uint8 and data.shape == (23, 3072)
    assert train.tensors[1].tolist() == labels
    x = train.tensors[0]
    for i, c, h, w in [(0, 0, 0, 0), (0, 1, 5, 7), (22, 2, 31, 30), (11, 0, 31, 0)]:
        assert x[i, c, h, w].item() == pytest.approx(data[i, 1024 * c + 32 * h + w] / 255)

    classes = cifar_classes(tmp_path, name)
    assert len(classes) == (10 if name == "cifar10" else 100)
    assert all(isinstance(c, str) for c in classes)
    if name == "cifar10":
        assert classes[0] == "airplane" and classes[9] == "truck"
        assert len(raw) == 5 and sum(len(b[b"data"]) for b in raw) == 23


def test_cifar_known_pixel_layout(tmp_path):
    """A hand-made row: pixel (h=2, w=3) is red 200, green 100, blue 50; the rest is 0."""
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=5, n_test=1)
    row = np.zeros(3072, dtype=np.uint8)
    row[0 * 1024 + 2 * 32 + 3] = 200
    row[1 * 1024 + 2 * 32 + 3] = 100
    row[2 * 1024 + 2 * 32 + 3] = 50
    with (folder / "test_batch").open("rb") as f:
        batch = pickle.load(f, encoding="bytes")
    batch[b"data"] = row[None]
    with (folder / "test_batch").open("wb") as f:
        pickle.dump(batch, f, protocol=2)
    x = load_cifar(tmp_path, "cifar10", "test").tensors[0][0]
    assert x[:, 2, 3].tolist() == pytest.approx([200 / 255, 100 / 255, 50 / 255])
    assert (x > 0).sum() == 3


def test_cifar_missing_root(tmp_path):
    with pytest.raises(CompanionError) as err:
        load_cifar(tmp_path / "nowhere", "cifar10")
    message = str(err.value)
    assert "cifar-10-batches-py" in message and "nowhere" in message
    assert "https://www.cs.toronto.edu/~kriz/cifar.html" in message
    with pytest.raises(CompanionError, match="cifar-100-python"):
        cifar_classes(tmp_path, "cifar100")


def test_cifar_missing_batch_file(tmp_path):
    folder = write_cifar_fixture(tmp_path, "cifar10", n_train=10, n_test=2)
    (folder / "data_batch_3").unlink()
    with pytest.raises(CompanionError, match="data_batch_3"):
        load_cifar(tmp_path, "cifar10", "train")


# ---------------------------------------------------------------- image folders


def test_image_folder(tmp_path):
    colours = {"cats": (255, 0, 0), "dogs": (0, 0, 255)}
    for name, colour in colours.items():
        (tmp_path / name).mkdir()
        for i in range(3):
            Image.new("RGB", (20 + i, 12), colour).save(tmp_path / name / f"{i}.png")
    Image.new("L", (10, 10), 128).save(tmp_path / "dogs" / "grey.JPG")
    (tmp_path / "dogs" / "notes.txt").write_text("not an image")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / ".ipynb_checkpoints" / "x.png")

    ds = ImageFolder(tmp_path, image_size=16)
    assert ds.classes == ("cats", "dogs")
    assert len(ds) == 7
    x, y = ds[0]
    assert x.shape == (3, 16, 16) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert y.item() == 0
    assert torch.allclose(x[0], torch.ones(16, 16)) and x[1:].abs().max() == 0
    labels = [ds[i][1].item() for i in range(len(ds))]
    assert labels == [0, 0, 0, 1, 1, 1, 1]
    grey, _ = ds[[p.name for p, _ in ds.samples].index("grey.JPG")]
    assert torch.allclose(grey, torch.full((3, 16, 16), 128 / 255))


def test_image_folder_missing_or_empty(tmp_path):
    with pytest.raises(CompanionError, match="not found"):
        ImageFolder(tmp_path / "missing")
    (tmp_path / "empty_class").mkdir()
    with pytest.raises(CompanionError, match="no images"):
        ImageFolder(tmp_path)


# ---------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    "call, bad",
    [
        (lambda: load("cifar", seed=0), "'cifar'"),
        (lambda: load("digits", imag_size=16), "'imag_size'"),
        (lambda: load_digits(image_size=4), "4"),
        (lambda: load_digits(image_size=8.5), "8.5"),
        (lambda: load_digits(val_fraction=0), "val_fraction 0"),
        (lambda: load_digits(test_fraction=1.5), "test_fraction 1.5"),
        (lambda: load_digits(val_fraction=0.5, test_fraction=0.5), "0.5"),
        (lambda: load_mnist_subset(image_size=3), "3"),
        (lambda: make_sequence_task("copyy", 4, 4, 4), "'copyy'"),
        (lambda: make_sequence_task("copy", 0, 4, 4), "n 0"),
        (lambda: make_sequence_task("copy", 4, 0, 4), "seq_len 0"),
        (lambda: make_sequence_task("copy", 4, 4, 1), "vocab_size 1"),
        (lambda: make_sequence_task("parity", 4, 4, 3), "vocab_size 3"),
        (lambda: load_cifar(".", name="cifar20"), "'cifar20'"),
        (lambda: load_cifar(".", split="valid"), "'valid'"),
        (lambda: cifar_classes(".", name="svhn"), "'svhn'"),
        (lambda: write_cifar_fixture(".", "cifar10", n_train=0), "n_train 0"),
        (lambda: ImageFolder(".", image_size=0), "image_size 0"),
    ],
)
def test_bad_arguments_name_the_value(call, bad):
    with pytest.raises(CompanionError) as err:
        call()
    message = str(err.value)
    assert bad in message
    assert "valid" in message
    assert "\n" not in message


def test_unknown_names_list_valid_choices():
    with pytest.raises(CompanionError, match="valid: digits, mnist_subset"):
        load("cifar")
    with pytest.raises(CompanionError, match="valid: copy, reverse, sort, majority, parity"):
        make_sequence_task("copyy", 4, 4, 4)
    with pytest.raises(CompanionError, match="valid: train, test"):
        load_cifar(".", split="valid")


def test_mnist_subset_parts_keep_class_order_so_a_prefix_is_not_a_sample():
    """The documented pitfall: a prefix of a part is not a random sample of it."""
    from companion.data.mnist import load_mnist_subset

    labels = load_mnist_subset().train.tensors[1]
    assert torch.unique(labels[:200]).tolist() == [0]
    assert torch.equal(labels, labels.sort().values)


def test_class_interleaved_prefixes_hold_every_class_evenly():
    """Any prefix of the interleaved rows holds min(n, classes) classes, each within one row of
    the others while every class still has rows; the rows are those of the input, paired as
    they were, and the order depends on the seed."""
    y = torch.tensor([0] * 7 + [1] * 3 + [2] * 5)  # unbalanced, sorted by class
    x = torch.arange(len(y)) * 10 + y  # each row's label is readable from its input
    xs, ys = class_interleaved((x, y), seed=1)
    assert sorted(xs.tolist()) == sorted(x.tolist()) and torch.equal(xs % 10, ys)
    for n in range(1, len(y) + 1):
        counts = Counter(ys[:n].tolist())
        assert len(counts) == min(n, 3)
        if n <= 9:  # class 1 has 3 rows: the turns are even until it runs out
            assert max(counts.values()) - min(counts.values()) <= 1
    assert ys[:3].tolist() == [0, 1, 2]
    assert not torch.equal(class_interleaved((x, y), seed=2)[0], xs)


@pytest.mark.parametrize("slug", ["ligo", "mimetic_init", "sigma_reparam"])
def test_probe_prefixes_of_the_mnist_subset_hold_all_ten_digits(slug):
    """The probe (and LiGO's evaluation set) are prefixes of the loaded splits
    (``train[: cfg.probe_size]``); with ``dataset="mnist_subset"`` they hold every digit at
    every preset that loads it, not the first digits of a split sorted by class."""
    import importlib

    experiment = importlib.import_module(f"companion.papers.{slug}.experiment")
    paper = importlib.import_module(f"companion.papers.{slug}")
    for name, preset in paper.PRESETS.items():
        if preset.dataset not in ("digits", "mnist_subset"):
            continue  # the full presets read CIFAR or an image folder from disk
        cfg = preset.replace(dataset="mnist_subset")
        train, test, _, classes = experiment.load_data(cfg)
        assert classes == 10
        assert torch.unique(train[1][: cfg.probe_size]).tolist() == list(range(10)), name
        if slug == "ligo":
            assert torch.unique(test[1][: cfg.eval_size]).tolist() == list(range(10)), name
