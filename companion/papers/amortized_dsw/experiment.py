"""The experiment: one point-cloud autoencoder per slicing loss, the same steps and the same L.

Arms (every one trains the same PointNet autoencoder from the same initial weights, on the same
batches, for ``steps`` steps with ``num_projections`` directions per pair):

* ``sw``: plain sliced Wasserstein (uniform directions);
* ``vdsw_random``: the control. v-DSW sampling, vMF(ε, κ) with the same κ and L, around a
  location drawn uniformly at random for each pair and step: it removes only the amortization
  (the learned ε);
* ``linear_vdsw``: amortized v-DSW with the official linear map on ``[X; Y]`` (the paper's
  baseline amortized model, not permutation invariant);
* ``attention_vdsw``: amortized v-DSW with the self-attention map (the paper's method).

Each amortized arm keeps its own map ψ and its own Adam (betas (0, 0.9) as in the official code,
learning rate decayed linearly to 0 over the run): one ascent step per batch on the detached
clouds, then one descent step of the autoencoder on the v-DSW at the detached location.

After training, on held-out shapes: exact EMD between each shape and its reconstruction;
for the v-DSW arms the sliced distances of the pairs (shape, reconstruction) along the learned
location, a random location and uniform directions; for the amortized maps, how far ε moves
when the points are shuffled or X and Y swapped.

Data: analytic 3-D surfaces (sphere, torus, box, cylinder, cone) with a random anisotropic scale
and rotation, normalized as the official ``pc_normalize`` (centred, radius 1); the ``full``
preset reads ModelNet40's ``.off`` meshes and samples points on their surfaces.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from companion.core import Config, Result
from companion.core import results as _results
from companion.core.runtime import progress, resolve_device, torch_threads
from companion.errors import CompanionError, unknown
from companion.nn import portable_init
from companion.papers.amortized_dsw.method import (
    AttentionMapping,
    LinearMapping,
    PointNetAE,
    amortized_ascent_step,
    amortized_vdsw,
    angle_degrees,
    emd,
    max_sw_grid,
    optimized_vdsw,
    predict_location,
    random_directions,
    random_locations,
    sliced_wasserstein,
    vdsw_value,
)

ARMS = ("sw", "vdsw_random", "linear_vdsw", "attention_vdsw")
AMORTIZED = {"linear_vdsw": "linear", "attention_vdsw": "attention"}
SHAPES = ("sphere", "torus", "box", "cylinder", "cone")
DATASETS = ("synthetic", "modelnet40")


@dataclasses.dataclass(frozen=True)
class AmortizedDSWConfig(Config):
    """Sizes change between presets; the algorithm never does."""

    dataset: str = "synthetic"  # synthetic | modelnet40 (.off meshes under data_root)
    data_root: str = ""
    num_points: int = 128  # points per cloud (official: 2,048)
    n_train: int = 512
    n_val: int = 32
    n_test: int = 32
    batch_size: int = 16  # official: 128
    steps: int = 200
    num_projections: int = 16  # L, the same for every arm (official: 100)
    kappa: float = 1.0  # vMF concentration (official: 1; chosen on validation EMD from 1, 10)
    lr: float = 1e-3  # the autoencoder's Adam
    lr_slice: float = 1e-2  # ψ's Adam, decayed linearly to 0 (official 1e-3; validation: 1e-2, 0.1)
    d_k: int = 16  # attention width (official: 64)
    code_dim: int = 64
    hidden: int = 128
    eval_every: int = 50  # validation EMD on eval_val shapes every so many steps
    eval_val: int = 16
    eval_repeats: int = 4  # sliced distances at evaluation: averaged over this many draws of L
    opt_steps: int = 0  # > 0: also v-DSW optimized per pair, this many Adam steps (official 50)
    opt_lr: float = 0.05
    samples_shown: int = 3  # reconstructions kept in the result for the figure
    arms: tuple[str, ...] = ARMS
    threads: int = 1

    def validate(self) -> None:
        if self.dataset not in DATASETS:
            raise unknown("dataset", self.dataset, DATASETS)
        for arm in self.arms:
            if arm not in ARMS:
                raise unknown("arm", arm, ARMS)
        if self.num_points < 4 or self.batch_size < 1 or self.steps < 1:
            raise CompanionError("need num_points >= 4, batch_size >= 1 and steps >= 1")
        if self.num_projections < 1 or self.kappa < 0:
            raise CompanionError("need num_projections >= 1 and kappa >= 0")
        if min(self.n_train, self.n_val, self.n_test) < 1:
            raise CompanionError("need at least one train, validation and test shape")
        if self.precision not in ("32-true", "64-true"):
            raise CompanionError(
                f"amortized_dsw measures in float32 or float64, got precision {self.precision!r}"
            )


PRESETS: dict[str, AmortizedDSWConfig] = {
    "smoke": AmortizedDSWConfig(
        num_points=64, n_train=128, n_val=12, n_test=12, steps=30, eval_every=15, eval_val=6,
        eval_repeats=2, arms=ARMS,
    ),
    "notebook": AmortizedDSWConfig(precision="64-true"),
    # paper scale: ModelNet40 meshes (the official code reads ModelNet40/ShapeNet clouds), 2,048
    # points, L = 100, batch 128, about 300 epochs of the 9,843 training shapes
    "full": AmortizedDSWConfig(
        dataset="modelnet40", data_root="data/ModelNet40", num_points=2048, n_train=9843,
        n_val=400, n_test=2468, batch_size=128, steps=23000, num_projections=100, kappa=1.0,
        d_k=64, opt_steps=50, lr=1e-3, lr_slice=1e-3, code_dim=256, hidden=256, eval_every=1000,
        eval_val=64, eval_repeats=4, precision="32-true", device="auto", threads=8,
    ),
}  # fmt: skip


@dataclasses.dataclass
class ArmResult(Result):
    """One trained autoencoder, measured on held-out shapes."""

    arm: str
    emd_test: list[float]  # per test shape: exact EMD(shape, reconstruction)
    emd_val: float  # mean over the validation shapes (what settings were chosen on)
    curve_steps: list[int]
    curve_val_emd: list[float]
    loss_steps: list[int]
    loss: list[float]  # the arm's own training loss (not comparable between arms)
    # amortized arms: sliced distances of the pairs (test shape, its reconstruction), mean
    sliced: dict[str, float]
    sliced_shapes: dict[str, float]  # the same, on pairs of two distinct held-out shapes
    shuffle_angle: float | None  # amortized arms: mean angle (°) ε moves under a shuffle
    swap_angle: float | None  # ... when X and Y are swapped
    samples: list  # [k][2][m][3]: a few test shapes and their reconstructions
    seconds: float

    @property
    def emd_mean(self) -> float:
        return float(np.mean(self.emd_test))


@dataclasses.dataclass
class AmortizedDSWResult(Result):
    config: dict
    arms: dict[str, ArmResult]
    test_labels: list[str]
    seconds: float


# ---------------------------------------------------------------- data


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] *= -1
    return q


def sample_surface(shape: str, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` points on an analytic surface (roughly uniform by area)."""
    if shape == "sphere":
        p = rng.standard_normal((m, 3))
        return p / np.linalg.norm(p, axis=1, keepdims=True)
    if shape == "torus":  # R = 1, r = 0.35; rejection on the angle around the tube
        big, small, out = 1.0, 0.35, []
        while sum(len(o) for o in out) < m:
            u, v = rng.uniform(0, 2 * np.pi, (2, 2 * m))
            keep = rng.uniform(0, 1, 2 * m) < (big + small * np.cos(v)) / (big + small)
            u, v = u[keep], v[keep]
            ring = big + small * np.cos(v)
            out.append(np.stack([ring * np.cos(u), ring * np.sin(u), small * np.sin(v)], 1))
        return np.concatenate(out)[:m]
    if shape == "box":  # the surface of a cube, faces chosen uniformly
        p = rng.uniform(-1, 1, (m, 3))
        axis = rng.integers(0, 3, m)
        p[np.arange(m), axis] = rng.choice([-1.0, 1.0], m)
        return p
    if shape == "cylinder":  # side (area 4π) and caps (2π), radius 1, height 2
        side = rng.uniform(0, 1, m) < 2 / 3
        theta = rng.uniform(0, 2 * np.pi, m)
        rad = np.where(side, 1.0, np.sqrt(rng.uniform(0, 1, m)))
        z = np.where(side, rng.uniform(-1, 1, m), rng.choice([-1.0, 1.0], m))
        return np.stack([rad * np.cos(theta), rad * np.sin(theta), z], 1)
    if shape == "cone":  # lateral surface, apex at z = 1, base radius 1 at z = -1
        t = np.sqrt(rng.uniform(0, 1, m))
        theta = rng.uniform(0, 2 * np.pi, m)
        return np.stack([t * np.cos(theta), t * np.sin(theta), 1 - 2 * t], 1)
    raise unknown("shape", shape, SHAPES)


def pc_normalize(p: np.ndarray) -> np.ndarray:
    """The official ``pc_normalize``: centre at the mean, scale the farthest point to radius 1."""
    p = p - p.mean(axis=0)
    return p / np.max(np.linalg.norm(p, axis=1))


def synthetic_clouds(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """``n`` clouds ``[n, m, 3]``: a random shape, anisotropic scale in [0.5, 1.2]³, a random
    rotation, normalized."""
    clouds, labels = [], []
    for _ in range(n):
        shape = SHAPES[rng.integers(len(SHAPES))]
        p = sample_surface(shape, m, rng) * rng.uniform(0.5, 1.2, 3)
        clouds.append(pc_normalize(p @ _rotation(rng).T))
        labels.append(shape)
    return np.stack(clouds), labels


def read_off(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices ``[V, 3]`` and triangles ``[T, 3]`` of an OFF mesh (ModelNet's format; polygons
    are split into fans; ModelNet's known header ``OFF<V> <F> <E>`` on one line is accepted)."""
    tokens = Path(path).read_text().split()
    if not tokens or not tokens[0].startswith("OFF"):
        raise CompanionError(f"{path}: not an OFF file")
    head = tokens[0][3:]
    rest = tokens[1:]
    if head:  # "OFF1234 567 0"
        rest = [head, *rest]
    n_v, n_f = int(rest[0]), int(rest[1])
    pos = 3
    verts = np.array(rest[pos : pos + 3 * n_v], dtype=float).reshape(n_v, 3)
    pos += 3 * n_v
    tris = []
    for _ in range(n_f):
        k = int(rest[pos])
        idx = [int(i) for i in rest[pos + 1 : pos + 1 + k]]
        pos += 1 + k
        tris += [(idx[0], idx[j], idx[j + 1]) for j in range(1, k - 1)]
    return verts, np.array(tris, dtype=int).reshape(-1, 3)


def sample_mesh(verts, tris, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` points uniform on a triangle mesh's surface (triangles by area, then barycentric)."""
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    if area.sum() <= 0:
        raise CompanionError("mesh with zero surface area")
    pick = rng.choice(len(tris), m, p=area / area.sum())
    r1, r2 = np.sqrt(rng.uniform(0, 1, m))[:, None], rng.uniform(0, 1, m)[:, None]
    return (1 - r1) * a[pick] + r1 * (1 - r2) * b[pick] + r1 * r2 * c[pick]


def modelnet40_files(root: str | Path, split: str) -> list[Path]:
    """``<root>/<class>/<split>/*.off``, sorted (ModelNet40's layout)."""
    files = sorted(Path(root).glob(f"*/{split}/*.off"))
    if not files:
        raise CompanionError(
            f"no ModelNet40 .off files under {root}/<class>/{split}/: download ModelNet40 "
            "(modelnet.cs.princeton.edu) and set data_root"
        )
    return files


def modelnet40_clouds(root, split: str, n: int, m: int, rng) -> tuple[np.ndarray, list[str]]:
    """Up to ``n`` clouds of ``m`` points sampled on ModelNet40 meshes of ``split``."""
    files = modelnet40_files(root, split)
    if len(files) > n:
        files = [files[i] for i in np.sort(rng.choice(len(files), n, replace=False))]
    clouds = [pc_normalize(sample_mesh(*read_off(f), m, rng)) for f in files]
    return np.stack(clouds), [f.parent.parent.name for f in files]


def make_data(cfg: AmortizedDSWConfig) -> dict[str, tuple[np.ndarray, list[str]]]:
    """``{"train", "val", "test"}`` clouds and labels, drawn from ``cfg.seed``."""
    rng = np.random.default_rng([cfg.seed, 2023])
    if cfg.dataset == "synthetic":
        return {
            split: synthetic_clouds(n, cfg.num_points, rng)
            for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test))
        }
    train_x, train_y = modelnet40_clouds(
        cfg.data_root, "train", cfg.n_train + cfg.n_val, cfg.num_points, rng
    )
    n_val = min(cfg.n_val, max(1, len(train_x) // 5))
    test = modelnet40_clouds(cfg.data_root, "test", cfg.n_test, cfg.num_points, rng)
    return {
        "train": (train_x[n_val:], train_y[n_val:]),
        "val": (train_x[:n_val], train_y[:n_val]),
        "test": test,
    }


# ---------------------------------------------------------------- one arm


def _dtype(cfg: AmortizedDSWConfig) -> torch.dtype:
    return torch.float64 if cfg.precision == "64-true" else torch.float32


def make_slice_map(kind: str, cfg: AmortizedDSWConfig) -> torch.nn.Module:
    return LinearMapping(cfg.num_points) if kind == "linear" else AttentionMapping(3, cfg.d_k)


def reconstruct(model, clouds: np.ndarray, like: torch.Tensor, batch: int = 64) -> np.ndarray:
    out = []
    with torch.no_grad():
        for i in range(0, len(clouds), batch):
            x = torch.from_numpy(clouds[i : i + batch]).to(like)
            out.append(model(x).double().cpu().numpy())
    return np.concatenate(out)


def mean_emd(a: np.ndarray, b: np.ndarray) -> list[float]:
    return [emd(x, y) for x, y in zip(a, b)]


def sliced_report(cfg, x, y, f_slice, rng) -> dict[str, float]:
    """Mean over pairs of the sliced distances at the run's L and κ, each averaged over
    ``eval_repeats`` draws: SW (uniform directions), v-DSW at a random location, at the learned
    location (amortized arms) and at a location optimized per pair (the reference)."""
    n, d, L, k = x.shape[0], x.shape[2], cfg.num_projections, cfg.kappa
    out = {"sw": [], "vdsw_random": [], "vdsw_amortized": []}
    with torch.no_grad():
        loc = predict_location(f_slice, x, y) if f_slice is not None else None
        for _ in range(cfg.eval_repeats):
            out["sw"].append(sliced_wasserstein(x, y, random_directions(rng, n, L, d, like=x)))
            out["vdsw_random"].append(vdsw_value(x, y, random_locations(rng, n, x), k, L, rng))
            if loc is not None:
                out["vdsw_amortized"].append(vdsw_value(x, y, loc, k, L, rng))
    report = {name: float(torch.stack(v).mean()) for name, v in out.items() if v}
    with torch.no_grad():
        report["max_sw"] = float(max_sw_grid(x, y).mean())  # the best single direction
        if loc is not None:  # the single direction ε itself
            report["direction_amortized"] = float(sliced_wasserstein(x, y, loc[:, None]).mean())
    if cfg.opt_steps > 0:
        value, _ = optimized_vdsw(x, y, k, L, rng, steps=cfg.opt_steps, lr=cfg.opt_lr)
        report["vdsw_optimized"] = float(value.mean())
    return report


def invariance_angles(f_slice, x, y, rng) -> tuple[float, float]:
    """Mean angle (°) between ``f(X, Y)`` and ``f(Xπ, Yπ')`` (points shuffled, independent
    permutations), and between ``f(X, Y)`` and ``f(Y, X)`` (swapped)."""
    with torch.no_grad():
        eps = predict_location(f_slice, x, y)
        m = x.shape[1]
        px = torch.from_numpy(np.stack([rng.permutation(m) for _ in range(len(x))]))
        py = torch.from_numpy(np.stack([rng.permutation(m) for _ in range(len(x))]))
        xs = torch.gather(x, 1, px[:, :, None].to(x.device).expand_as(x))
        ys = torch.gather(y, 1, py[:, :, None].to(y.device).expand_as(y))
        shuffled = predict_location(f_slice, xs, ys)
        swapped = predict_location(f_slice, y, x)
    return (
        float(angle_degrees(eps, shuffled).mean()),
        float(angle_degrees(eps, swapped).mean()),
    )


def train_arm(cfg: AmortizedDSWConfig, arm: str, data) -> ArmResult:
    """Train the autoencoder with ``arm``'s loss; measure it on the held-out shapes. The
    initial weights and the batches are the same for every arm (drawn from the seed)."""
    start = time.perf_counter()
    device = torch.device(resolve_device(cfg.device))
    dtype = _dtype(cfg)
    like = torch.zeros((), dtype=dtype, device=device)
    model = PointNetAE(cfg.num_points, cfg.code_dim, cfg.hidden).to(device=device, dtype=dtype)
    portable_init(model, np.random.default_rng([cfg.seed, 1]))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    f_slice = f_opt = None
    if arm in AMORTIZED:
        f_slice = make_slice_map(AMORTIZED[arm], cfg).to(device=device, dtype=dtype)
        portable_init(f_slice, np.random.default_rng([cfg.seed, 2]))
        f_opt = torch.optim.Adam(f_slice.parameters(), lr=cfg.lr_slice, betas=(0.0, 0.9))
    batch_rng = np.random.default_rng([cfg.seed, 3])  # the same batches for every arm
    slice_rng = np.random.default_rng([cfg.seed, 4, ARMS.index(arm)])
    train, val = data["train"][0], data["val"][0][: cfg.eval_val]
    loss_steps, losses, curve_steps, curve = [], [], [], []
    for step in progress(range(cfg.steps), desc=arm):
        idx = batch_rng.choice(len(train), min(cfg.batch_size, len(train)), replace=False)
        x = torch.from_numpy(train[idx]).to(like)
        y = model(x)
        L, kappa = cfg.num_projections, cfg.kappa
        if arm == "sw":
            theta = random_directions(slice_rng, len(idx), L, 3, like=x)
            loss = sliced_wasserstein(x, y, theta).mean()
        elif arm == "vdsw_random":
            loc = random_locations(slice_rng, len(idx), x)
            loss = vdsw_value(x, y, loc, kappa, L, slice_rng).mean()
        else:
            for group in f_opt.param_groups:  # linear decay to 0 (official LinearLrDecay)
                group["lr"] = cfg.lr_slice * (1 - step / cfg.steps)
            amortized_ascent_step(f_slice, f_opt, x, y, kappa, L, slice_rng)
            loss = amortized_vdsw(f_slice, x, y, kappa, L, slice_rng).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == cfg.steps - 1:
            loss_steps.append(step)
            losses.append(float(loss.detach()))
        if (step + 1) % cfg.eval_every == 0 or step == cfg.steps - 1:
            model.eval()
            curve_steps.append(step + 1)
            curve.append(float(np.mean(mean_emd(val, reconstruct(model, val, like)))))
            model.train()
    model.eval()
    test = data["test"][0]
    recon = reconstruct(model, test, like)
    val_all = data["val"][0]
    eval_rng = np.random.default_rng([cfg.seed, 5])  # the same evaluation draws for every arm
    xt, yt = torch.from_numpy(test).to(like), torch.from_numpy(recon).to(like)
    sliced, sliced_shapes, shuffle, swap = {}, {}, None, None
    if f_slice is not None:  # the amortized arms: how good and how invariant is the location
        sliced = sliced_report(cfg, xt, yt, f_slice, eval_rng)
        # pairs of two distinct held-out shapes: the same pairs for every arm
        sliced_shapes = sliced_report(cfg, xt, torch.roll(xt, 1, dims=0), f_slice, eval_rng)
        shuffle, swap = invariance_angles(f_slice, xt, yt, eval_rng)
    k = min(cfg.samples_shown, len(test))
    return ArmResult(
        arm=arm,
        emd_test=mean_emd(test, recon),
        emd_val=float(np.mean(mean_emd(val_all, reconstruct(model, val_all, like)))),
        curve_steps=curve_steps,
        curve_val_emd=curve,
        loss_steps=loss_steps,
        loss=losses,
        sliced=sliced,
        sliced_shapes=sliced_shapes,
        shuffle_angle=shuffle,
        swap_angle=swap,
        samples=[[np.round(test[i], 4).tolist(), np.round(recon[i], 4).tolist()] for i in range(k)],
        seconds=time.perf_counter() - start,
    )


def run(
    cfg: AmortizedDSWConfig, out_dir: str | Path | None = None, resume: bool = False
) -> AmortizedDSWResult:
    """Every arm in ``cfg.arms`` on the data drawn from ``cfg.seed``. With ``out_dir`` each
    finished arm is saved (``<arm>.json``); ``resume=True`` keeps finished arms and trains the
    rest. The result is written to ``result.json``."""
    start = time.perf_counter()
    out = Path(out_dir) if out_dir is not None else None
    data = make_data(cfg)
    arms = {}
    with torch_threads(cfg.threads):
        for arm in cfg.arms:
            path = out / f"{arm}.json" if out is not None else None
            if resume and path is not None and path.exists():
                arms[arm] = ArmResult.from_dict(_results.read_json(path))
                continue
            arms[arm] = train_arm(cfg, arm, data)
            if path is not None:
                _results.write_json(path, arms[arm].to_dict())
    result = AmortizedDSWResult(
        config=cfg.to_dict(),
        arms=arms,
        test_labels=list(data["test"][1]),
        seconds=time.perf_counter() - start,
    )
    if out is not None:
        _results.write_json(out / "result.json", result.to_dict())
    return result
