"""Figures: plots take a result (or a SMILES) and return a matplotlib figure."""

from __future__ import annotations

import numpy as np

from companion.core import subplots
from companion.papers.olfactory_gnn.experiment import OlfactoryResult
from companion.papers.olfactory_gnn.method import mol_graph

LABELS = {"inject": "injection (paper)", "endcls": "endCLS (ablation)"}
COLORS = {
    "inject": "C0",
    "endcls": "C1",
    "descriptors": "C3",
    "receptor_only": "C7",
    "molecule_only": "C2",
}
TICKS = {
    "inject": "injection",
    "endcls": "endCLS",
    "descriptors": "descriptor\ncontrol",
    "receptor_only": "receptor\nonly",
    "molecule_only": "molecule\nonly",
}


def plot_auprc(result: OlfactoryResult):
    """Test AUPRC on held-out pairs per seed: both arms, the descriptor control (receptor plus
    whole-molecule descriptors, no structure) and the two one-sided predictors, with the
    positive rate (the AUPRC of a random score) as a dotted line."""
    fig, axes = subplots(1, 1, width=6.4, height=3.2)
    ax = axes[0, 0]
    names = ["inject", "endcls", "descriptors", "receptor_only", "molecule_only"]
    names = [n for n in names if n in result.seeds[0].arms or n in result.seeds[0].baselines]
    for j, name in enumerate(names):
        vals = result.values(name) if name in result.seeds[0].arms else result.baseline(name)
        x = j + np.linspace(-0.15, 0.15, len(vals)) if len(vals) > 1 else [j]
        ax.scatter(x, vals, color=COLORS[name], s=30, zorder=3)
        ax.bar(j, np.nanmean(vals), color=COLORS[name], alpha=0.35, width=0.6)
    rate = np.mean([np.mean(s.test_labels) for s in result.seeds])
    ax.axhline(rate, color="k", ls=":", lw=1, label="positive rate (random score)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([TICKS[n] for n in names])
    ax.set_ylabel("test AUPRC (held-out pairs)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_curves(result: OlfactoryResult):
    """Training loss (class-weighted BCE) and validation AUPRC over steps, per arm (first seed)."""
    seed = result.seeds[0]
    fig, axes = subplots(1, 2, width=4.2, height=3.0)
    for arm, a in seed.arms.items():
        loss = np.asarray(a.loss)
        k = max(1, len(loss) // 30)
        smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
        axes[0, 0].plot(a.loss_steps[k - 1 :], smooth, color=COLORS[arm], label=LABELS[arm])
        axes[0, 1].plot(a.eval_steps, a.val_auprc_curve, "o-", color=COLORS[arm], label=LABELS[arm])
    axes[0, 0].set_xlabel("step")
    axes[0, 0].set_ylabel("training loss (moving average)")
    axes[0, 1].set_xlabel("step")
    axes[0, 1].set_ylabel("validation AUPRC")
    axes[0, 1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_mixture(smiles: str):
    """Adjacency of a mixture's graph, atoms ordered as in the SMILES: each bond coloured by the
    molecule it belongs to. No edge joins two molecules (the official disconnected graph)."""
    from matplotlib.colors import ListedColormap

    g = mol_graph(smiles)
    n = g.n_atoms
    adj = np.zeros((n, n))
    for u, v in zip(g.senders, g.receivers):
        adj[u, v] = 1 + g.component[u]
    k = max(g.component) + 1
    fig, axes = subplots(1, 1, width=4.4, height=3.8)
    ax = axes[0, 0]
    cmap = ListedColormap(["white"] + [f"C{c}" for c in range(k)])
    im = ax.imshow(adj, cmap=cmap, vmin=-0.5, vmax=k + 0.5)
    ax.set_title(smiles, fontsize="small")
    ax.set_xlabel("receiver atom")
    ax.set_ylabel("sender atom")
    cbar = fig.colorbar(im, ax=ax, ticks=list(range(k + 1)))
    cbar.ax.set_yticklabels(["no edge"] + [f"bond, molecule {c + 1}" for c in range(k)])
    return fig


def figures(result: OlfactoryResult) -> dict:
    return {"auprc": plot_auprc(result), "curves": plot_curves(result)}


def draw_receptor_scores(fig, receptor: int, result: OlfactoryResult, data):
    """Explore view: for one held-out-pair receptor, the test pairs' scores of both arms against
    the true label (first seed)."""
    seed = result.seeds[0]
    r = data.splits["test"][0].numpy()
    rows = np.flatnonzero(r == receptor)
    labels = np.asarray(seed.test_labels)[rows]
    ax = fig.subplots(1, 1)
    for k, (arm, a) in enumerate(seed.arms.items()):
        s = np.asarray(a.test_scores)[rows]
        x = labels + (k - 0.5) * 0.2 + np.linspace(-0.05, 0.05, len(rows))
        ax.scatter(x, s, color=COLORS[arm], s=18, label=LABELS[arm])
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["does not respond", "responds"])
    ax.set_ylabel("predicted activation")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"receptor {receptor}: {seed.receptors[receptor]} (test pairs)", fontsize="small")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
