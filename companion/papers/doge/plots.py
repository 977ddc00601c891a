"""Figures: plots take a result and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.core.plotting import COLORBLIND
from companion.papers.doge.experiment import DOGEResult

LABELS = {"doge": "DOGE", "td3_bc": "TD3+BC (control)", "unconstrained": "unconstrained TD3"}
COLORS = {"doge": COLORBLIND[0], "td3_bc": COLORBLIND[1], "unconstrained": COLORBLIND[2]}


def _goal(result: DOGEResult, s: float) -> tuple[float, float]:
    cfg = result.config
    return cfg["goal_x"], cfg["goal_slope"] * s


def _extent(result):
    return (result.grid[0], result.grid[-1], result.grid[0], result.grid[-1])


def plot_q_error(result: DOGEResult, probe: int | None = None):
    """Q₁(s, a) − r(s, a) over the action square at one probe state, the data and its hull
    (left), and the mean |Q − r| inside against outside the hull (right)."""
    probe = len(result.probe_states) // 2 if probe is None else probe
    arm = next(a for a in result.arms.values() if a.q_map)
    n = len(result.grid)
    err = np.asarray(arm.q_map[probe]).reshape(n, n)
    fig, axes = subplots(1, 2, width=4.3, height=3.4)
    left, right = axes[0]
    lim = float(np.abs(err).max())
    im = left.imshow(
        err, origin="lower", extent=_extent(result), cmap="RdBu_r", vmin=-lim, vmax=lim
    )
    fig.colorbar(im, ax=left, label="Q − r")
    inside = np.asarray(result.inside[probe]).reshape(n, n)
    left.contour(
        np.asarray(result.grid),
        np.asarray(result.grid),
        inside.astype(float),
        [0.5],
        colors="k",
        linewidths=1,
    )
    pts = np.asarray(result.data_actions[probe])
    left.scatter(pts[:, 0], pts[:, 1], s=3, c="k", alpha=0.4)
    left.plot(*_goal(result, result.probe_states[probe]), "*", c="gold", ms=12, mec="k")
    left.set_title(
        f"s = {result.probe_states[probe]:.2f}: hull (line), data, goal (★)", fontsize="small"
    )
    left.set_xlabel("a₁")
    left.set_ylabel("a₂")
    vals = [arm.q_error_inside, arm.q_error_outside]
    right.bar(["inside hull", "outside hull"], vals, color=[COLORBLIND[0], COLORBLIND[3]])
    right.set_ylabel("mean |Q − r| on the action grid")
    return fig


def plot_distance(result: DOGEResult, probe: int | None = None):
    """The learned g(s, ·) next to the exact expected distance E‖â − a‖ at one probe state."""
    probe = len(result.probe_states) // 2 if probe is None else probe
    n = len(result.grid)
    learned = np.asarray(result.arms["doge"].g_map[probe]).reshape(n, n)
    exact = np.asarray(result.exact_distance[probe]).reshape(n, n)
    fig, axes = subplots(1, 2, width=4.0, height=3.4)
    lo, hi = float(min(learned.min(), exact.min())), float(max(learned.max(), exact.max()))
    for ax, img, title in (
        (axes[0, 0], learned, "learned g(s, a)"),
        (axes[0, 1], exact, "exact E‖a − a_data‖"),
    ):
        im = ax.imshow(img, origin="lower", extent=_extent(result), vmin=lo, vmax=hi)
        ax.contour(
            np.asarray(result.grid),
            np.asarray(result.grid),
            img,
            [result.g_threshold],
            colors="w",
            linewidths=1,
        )
        ax.plot(*_goal(result, result.probe_states[probe]), "*", c="gold", ms=12, mec="k")
        ax.set_title(title, fontsize="small")
        ax.set_xlabel("a₁")
    axes[0, 0].set_ylabel("a₂")
    fig.colorbar(im, ax=axes[0, 1], label="distance")
    return fig


def plot_policies(result: DOGEResult, probe: int | None = None):
    """Each arm's action at every probe state, the data and the goals a*(s)."""
    fig, axes = subplots(1, 1, width=5.6, height=4.0)
    ax = axes[0, 0]
    for k, s in enumerate(result.probe_states):
        pts = np.asarray(result.data_actions[k])
        ax.scatter(
            pts[:, 0], pts[:, 1], s=2, c="grey", alpha=0.25, label="data" if k == 0 else None
        )
        ax.plot(
            *_goal(result, s), "*", c="gold", ms=11, mec="k", label="goal a*(s)" if k == 0 else None
        )
    for name, arm in result.arms.items():
        act = np.asarray(arm.policy_actions)
        ax.plot(act[:, 0], act[:, 1], "o-", c=COLORS[name], ms=5, label=LABELS[name])
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("a₁")
    ax.set_ylabel("a₂")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def plot_training(result: DOGEResult):
    """Miss distance ‖π(s) − a*(s)‖ on the probe states during training (left), DOGE's λ (right)."""
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    left, right = axes[0]
    for name, arm in result.arms.items():
        left.plot(arm.curve_steps, arm.miss, c=COLORS[name], label=LABELS[name])
    left.axhline(result.best_data_miss, c="k", ls=":", label="best data action")
    left.set_xlabel("step")
    left.set_ylabel("miss distance (probe states)")
    left.legend(fontsize="small")
    doge = result.arms["doge"]
    right.plot(doge.curve_steps, doge.lam, c=COLORS["doge"])
    right.set_xlabel("step")
    right.set_ylabel("dual variable λ")
    return fig


def draw_probe(fig, result: DOGEResult, probe: int):
    """One probe state, drawn into ``fig``: Q − r over the actions with the data's hull (left) and
    the learned g(s, ·) with DOGE's feasible level (right), each arm's action and the goal."""
    n = len(result.grid)
    s = result.probe_states[probe]
    left, right = fig.subplots(1, 2)
    arm0 = next(a for a in result.arms.values() if a.q_map)
    err = np.asarray(arm0.q_map[probe]).reshape(n, n)
    lim = float(np.abs(err).max())
    im = left.imshow(
        err, origin="lower", extent=_extent(result), cmap="RdBu_r", vmin=-lim, vmax=lim
    )
    fig.colorbar(im, ax=left, label="Q − r")
    inside = np.asarray(result.inside[probe]).reshape(n, n).astype(float)
    left.contour(
        np.asarray(result.grid), np.asarray(result.grid), inside, [0.5], colors="k", linewidths=1
    )
    gmap = np.asarray(result.arms["doge"].g_map[probe]).reshape(n, n)
    im2 = right.imshow(gmap, origin="lower", extent=_extent(result))
    fig.colorbar(im2, ax=right, label="g(s, a)")
    right.contour(
        np.asarray(result.grid),
        np.asarray(result.grid),
        gmap,
        [result.g_threshold],
        colors="w",
        linewidths=1,
    )
    pts = np.asarray(result.data_actions[probe])
    for ax in (left, right):
        ax.scatter(pts[:, 0], pts[:, 1], s=3, c="k", alpha=0.3)
        ax.plot(*_goal(result, s), "*", c="gold", ms=12, mec="k")
        for name, arm in result.arms.items():
            ax.plot(
                *arm.policy_actions[probe], "o", c=COLORS[name], mec="w", ms=8, label=LABELS[name]
            )
        ax.set_xlabel("a₁")
    left.set_ylabel("a₂")
    left.set_title(f"s = {s:.2f}: Q − r, data hull (line)", fontsize="small")
    right.set_title("learned g; white: exact mean g of the data", fontsize="small")
    right.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.25, 1))
    return fig
