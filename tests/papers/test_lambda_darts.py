"""Λ-DARTS: the alignment measure, its gradient and the finite-difference regulariser against
independent computations (loops, autograd, double backpropagation)."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.papers.lambda_darts.method import (
    PRIMITIVES,
    SearchNetwork,
    alignment_direction,
    derive_genotype,
    genotype_weights,
    lambda_darts_gradients,
    layer_alignment,
    validation_gradients,
)


def tiny_net(seed=0):
    torch.manual_seed(seed)
    net = SearchNetwork(1, 3, c=2, layers=3, steps=2).double()
    with torch.no_grad():
        net.alpha.normal_()
    return net


def test_layer_alignment_is_mean_pairwise_cosine():
    torch.manual_seed(0)
    grads = [torch.randn(5, 4, dtype=torch.float64) for _ in range(4)]
    pairs = [
        F.cosine_similarity(grads[i].flatten(), grads[j].flatten(), dim=0)
        for i, j in itertools.combinations(range(4), 2)
    ]
    assert layer_alignment(grads).item() == pytest.approx(
        torch.stack(pairs).mean().item(), abs=1e-12
    )


def test_alignment_direction_is_gradient_of_alignment():
    torch.manual_seed(1)
    grads = [torch.randn(5, 4, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    expected = torch.autograd.grad(layer_alignment(grads), grads)
    for got, want in zip(alignment_direction([g.detach() for g in grads]), expected):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_cell_gradients_sum_to_shared_gradient():
    net = tiny_net()
    x, y = torch.randn(6, 1, 4, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2])
    w = F.softmax(net.alpha, -1).detach().requires_grad_(True)
    loss = F.cross_entropy(net(x, weights=w), y)
    loss.backward()
    total = sum(c.grad for c in net.cell_weights)
    torch.testing.assert_close(total, w.grad)


def test_validation_cell_gradients_sum_to_alpha_gradient():
    """The architecture step's per-cell votes g_ℓ = ∂L_val/∂w_ℓ, summed over cells and pulled
    back through the softmax, are ∂L_val/∂α computed by autograd on α alone (a separate forward
    pass); their Λ is layer_alignment of them, and the skip pulls add up (before normalising)
    to minus the α-gradient of the skip column."""
    from companion.papers.lambda_darts.experiment import skip_pull

    net = tiny_net(5)
    x, y = torch.randn(7, 1, 4, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    grad_alpha, lam_v, cell_grads = validation_gradients(net, F.cross_entropy, x, y)
    (reference,) = torch.autograd.grad(F.cross_entropy(net(x), y), [net.alpha])
    torch.testing.assert_close(grad_alpha, reference)
    w = F.softmax(net.alpha, -1).detach()
    total = sum(cell_grads)
    pulled_back = w * (total - (w * total).sum(dim=1, keepdim=True))  # softmax Jacobianᵀ · Σ g_ℓ
    torch.testing.assert_close(pulled_back, reference)
    assert lam_v.item() == pytest.approx(layer_alignment(cell_grads).item(), abs=1e-12)
    skip = PRIMITIVES.index("skip_connect")
    shares = skip_pull(cell_grads, w, skip)
    raw = [-(w[:, skip] * (g[:, skip] - (w * g).sum(dim=1))).sum().item() for g in cell_grads]
    norm = sum(abs(r) for r in raw)
    assert sum(raw) == pytest.approx(-reference[:, skip].sum().item(), rel=1e-9, abs=1e-12)
    assert shares == pytest.approx([r / norm for r in raw])
    # the votes are not all alike (otherwise Λ would be trivially 1)
    assert lam_v.item() < 1 - 1e-6


def test_regulariser_is_minus_lambda_grad_of_alignment():
    """(∇L(w−εu) − ∇L(w+εu))/2ε against −∇_θ Λ by double backpropagation, in float64."""
    net = tiny_net(2)
    x, y = torch.randn(8, 1, 4, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    params = net.weight_parameters()
    w = F.softmax(net.alpha, -1).detach()
    torch.manual_seed(3)
    _, plain, lam0, _ = lambda_darts_gradients(net, F.cross_entropy, x, y, 0.0, 1e-5, w)
    _, reg, lam1, _ = lambda_darts_gradients(net, F.cross_entropy, x, y, 1.0, 1e-5, w)
    # the reference: Λ as a differentiable function of θ
    wl = w.clone().requires_grad_(True)
    loss = F.cross_entropy(net(x, weights=wl), y)
    cells = net.cell_weights
    cell_grads = torch.autograd.grad(loss, cells, create_graph=True)
    grad_lambda = torch.autograd.grad(layer_alignment(list(cell_grads)), params, allow_unused=True)
    assert lam0.item() == pytest.approx(lam1.item())
    for p, g0, g1, gl in zip(params, plain, reg, grad_lambda):
        want = -(gl if gl is not None else torch.zeros_like(p))
        torch.testing.assert_close(g1 - g0, want, rtol=1e-4, atol=1e-6)
    assert any(gl is not None and gl.abs().max() > 1e-3 for gl in grad_lambda)


def test_derive_genotype_brute_force():
    torch.manual_seed(4)
    steps = 3
    w = torch.rand(sum(i + 2 for i in range(steps)), len(PRIMITIVES))
    gene = derive_genotype(w, PRIMITIVES, steps)
    start = 0
    for i in range(steps):
        n = i + 2
        scores = {
            (j, k): w[start + j, k].item() for j in range(n) for k in range(1, len(PRIMITIVES))
        }
        best_per_edge = {j: max(scores[j, k] for k in range(1, len(PRIMITIVES))) for j in range(n)}
        top2 = sorted(best_per_edge, key=lambda j: -best_per_edge[j])[:2]
        assert [j for _, j in gene[2 * i : 2 * i + 2]] == top2
        for op, j in gene[2 * i : 2 * i + 2]:
            assert w[start + j, PRIMITIVES.index(op)].item() == best_per_edge[j]
        start += n
    one_hot = genotype_weights(gene, PRIMITIVES, steps)
    assert one_hot.sum().item() == 2 * steps and one_hot[:, 0].sum().item() == 0


def test_unknown_operation_is_named():
    with pytest.raises(CompanionError, match="sep_conv_5x5"):
        SearchNetwork(1, 3, primitives=("none", "sep_conv_5x5"))


def test_darts_optimizer_matches_torch_sgd_and_adam():
    from companion.papers.lambda_darts.experiment import PRESETS, DartsOptimizer

    cfg = PRESETS["smoke"]
    torch.manual_seed(5)
    w, a = torch.nn.Parameter(torch.randn(7)), torch.nn.Parameter(torch.randn(3, 4))
    w2, a2 = torch.nn.Parameter(w.detach().clone()), torch.nn.Parameter(a.detach().clone())
    opt = DartsOptimizer([w], a, cfg)
    sgd = torch.optim.SGD([w2], lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    adam = torch.optim.Adam(
        [a2], lr=cfg.arch_lr, betas=(0.5, 0.999), weight_decay=cfg.arch_weight_decay
    )
    for _ in range(3):
        gw, ga = torch.randn(7), torch.randn(3, 4)
        a.grad, a2.grad = ga.clone(), ga.clone()
        opt.arch_step()
        adam.step()
        a.grad = None
        w.grad, w2.grad = gw.clone(), gw.clone()
        opt.step()
        sgd.step()
    torch.testing.assert_close(w, w2)
    torch.testing.assert_close(a, a2)


def test_notebook_path_equals_claims_file_path():
    """The notebook (``get_preset(...).replace(seed=..., device=...)``, ``run``, ``check_claims``,
    in a kernel with two threads) and ``companion claims`` (``_one_seed``, one thread) must print
    the same claim numbers for the same seed and config: the search is chaotic, so a different
    thread count once made the stored notebook contradict the seed-0 row of its own table."""
    from companion.core import get_preset
    from companion.core.robustness import _one_seed
    from companion.papers import lambda_darts as paper

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cfg = get_preset(paper.PRESETS, "smoke").replace(seed=1, device="auto")
        notebook = paper.check_claims(paper.run(cfg)).to_dict()
    finally:
        torch.set_num_threads(before)
    _, claims_file, _, _ = _one_seed("lambda_darts", "smoke", {}, 1, 1, None)
    torch.set_num_threads(before)
    got = [(r["claim"], r["measured"], r["holds"]) for r in notebook["rows"]]
    want = [(r["claim"], r["measured"], r["holds"]) for r in claims_file["rows"]]
    assert got == want


def _notebook_cell(marker):
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/lambda_darts.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    (source,) = [s for s in sources if marker in s]
    return source


def _exercise_env(**names):
    from companion.core import check, check_close, report_ok
    from companion.papers import lambda_darts as paper

    env = {"paper": paper, "torch": torch, "F": F}
    env |= {"check": check, "check_close": check_close, "report_ok": report_ok}
    return env | names


def _exercise_fails():
    from companion.core.exercises import ExerciseError

    return (ExerciseError, AssertionError, RuntimeError, TypeError, AttributeError, ValueError)


def test_exercise_1_check_fails_on_trivial_and_shown_answers():
    cell = _notebook_cell('report_ok("alignment matrix")')
    torch.manual_seed(0)
    grads = [torch.randn(5, 3) for _ in range(3)]

    def reference(gs):
        flat = F.normalize(torch.stack([g.flatten() for g in gs]), dim=1)
        return flat @ flat.T

    exec(cell, _exercise_env(grads=grads, my_alignment_matrix=reference))
    for planted in (
        lambda gs: None,
        lambda gs: 0,
        lambda gs: torch.zeros(len(gs), len(gs)),
        lambda gs: torch.eye(len(gs)),
        layer_alignment,  # the function shown in section 2
        lambda gs: torch.full((len(gs), len(gs)), float(layer_alignment(gs))),
        lambda gs: (
            torch.stack([g.flatten() for g in gs]) @ torch.stack([g.flatten() for g in gs]).T
        ),
    ):
        with pytest.raises(_exercise_fails()):
            exec(cell, _exercise_env(grads=grads, my_alignment_matrix=planted))


def test_exercise_2_check_fails_on_trivial_and_copied_answers():
    cell = _notebook_cell("dL/dα for random votes")
    torch.manual_seed(0)
    net = SearchNetwork(1, 10, c=4, layers=3, steps=2)
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    w = F.softmax(net.alpha, -1).detach().requires_grad_(True)
    F.cross_entropy(net(x, weights=w), y).backward()
    grads = [c.grad for c in net.cell_weights]

    def reference(gs, alpha):
        G = sum(gs)
        wd = torch.softmax(alpha.detach(), -1)
        return wd * (G - (wd * G).sum(1, keepdim=True))

    def run_cell(fn):
        exec(cell, _exercise_env(net=net, x=x, y=y, grads=grads, my_alpha_grad=fn))

    run_cell(reference)
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    copied = net.alpha.grad.clone()  # the autograd gradient of the network, copied
    for planted in (
        lambda gs, a: None,
        lambda gs, a: 0,
        lambda gs, a: torch.zeros_like(a),
        lambda gs, a: copied,
        lambda gs, a: sum(gs),  # the softmax Jacobian forgotten
    ):
        with pytest.raises(_exercise_fails()):
            run_cell(planted)


def test_stored_notebook_prints_the_claims_file_seed_0_rows():
    """The claim table stored in the notebook (seed 0, the notebook preset) and the seed-0 rows of
    ``data/claims/lambda_darts.json`` must come from the same code and the same run: the same
    claims, criteria and verdicts, row by row (the measured numbers of a chaotic search depend on
    the machine, so they are not compared here)."""
    import json
    from pathlib import Path

    nb = json.loads(Path("notebooks/lambda_darts.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    (cell,) = [c for c in code if "# NBVAL_CHECK_OUTPUT" in "".join(c["source"])]
    assert "seed = 0" in "".join(
        next(c for c in code if "preset =" in "".join(c["source"]))["source"]
    )
    printed = "".join("".join(o.get("text", [])) for o in cell["outputs"]).splitlines()
    dashes = next(i for i, line in enumerate(printed) if set(line) <= {"-", " "} and line)
    spans, pos = [], 0
    for width in map(len, printed[dashes].split("  ")):
        spans.append((pos, pos + width))
        pos += width + 2
    rows = []
    for line in printed[dashes + 1 :]:
        if not line.strip() or line.startswith(("invariants", "  ", "note:", "claims hold")):
            break
        claim, _, criterion, holds = (line[a:b].strip() for a, b in spans)
        rows.append((claim, criterion, holds))

    stored = json.loads(Path("data/claims/lambda_darts.json").read_text())
    assert stored["preset"] == "notebook" and stored["overrides"] == {}
    want = []
    for r in stored["reports"]["0"]["rows"]:
        verdict = "yes" if r["holds"] else "no"
        if not r.get("premise_ok", True):
            verdict = "not tested: premise failed"
        want.append((r["claim"], r["criterion"], verdict))
    assert rows == want
    n_hold = sum(r["holds"] for r in stored["reports"]["0"]["rows"])
    assert printed[-1] == f"claims hold: {n_hold}/{len(want)}"


def test_portable_init_is_seeded_and_has_pytorch_bounds():
    """The NumPy-drawn initialisation: the same torch seed gives the same network, another seed
    another one; convolution and classifier weights lie within ±1/√fan_in and fill that range
    (PyTorch's default), α is N(0, 10⁻⁶)-sized."""
    from torch import nn

    def build(seed):
        torch.manual_seed(seed)
        return SearchNetwork(1, 10, c=4, layers=3, steps=2)

    a, b, c = build(0), build(0), build(1)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.alpha, c.alpha)
    assert not torch.equal(a.stem[0].weight, c.stem[0].weight)
    for m in a.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            bound = m.weight[0].numel() ** -0.5
            assert m.weight.abs().max() <= bound
            if m.weight.numel() >= 50:
                assert m.weight.abs().max() > 0.8 * bound
    assert 1e-4 < a.alpha.std().item() < 1e-2


def test_portable_init_leaves_a_meta_model_alone():
    """The FLOP count of the scaling table builds the network on the meta device, where nothing
    can be drawn: the network builds there and the count is positive."""
    from companion.papers import lambda_darts as paper
    from companion.papers.lambda_darts.fullscale import flops_per_step

    with torch.device("meta"):
        net = SearchNetwork(3, 10, c=4, layers=3, steps=2)
    assert all(p.is_meta for p in net.parameters())
    assert flops_per_step(paper.PRESETS["full"]) > 0
