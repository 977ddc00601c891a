"""nas_robustness: the cell space, attacks and proxies against independent computations, the
database reader on a fixture in the released layout, presets and claims."""

import itertools
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError
from companion.papers import nas_robustness as paper
from companion.papers.nas_robustness import claims as claims_mod
from companion.papers.nas_robustness import method
from companion.papers.nas_robustness.fullscale import write_database_fixture


def test_strings_round_trip_and_space_size():
    archs = method.all_archs()
    assert len(archs) == 5**6 == len(set(archs))
    s = (
        "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|"
        "+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    )
    assert method.edges_to_arch(method.arch_to_edges(s)) == s
    assert s in archs
    with pytest.raises(ValueError):
        method.arch_to_edges("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|")


def _brute_force_path(arch):
    """Whether some input→output path exists: enumerate the four possible paths."""
    e = method.arch_to_edges(arch)
    paths = [[(0, 3)], [(0, 1), (1, 3)], [(0, 2), (2, 3)], [(0, 1), (1, 2), (2, 3)]]
    return any(all(e[x] != "none" for x in p) for p in paths)


def test_has_path_against_path_enumeration():
    for arch in method.all_archs():
        assert method.has_path(arch) == _brute_force_path(arch)


def test_isomorphic_cells_compute_the_same_function():
    """Among the parameter-free cells (none, skip, pool: 3⁶ = 729), two with the same canonical
    string give the same output on a random input; canonical is idempotent."""
    ops = ("none", "skip_connect", "avg_pool_3x3")
    x = torch.rand(2, 3, 6, 6, generator=torch.Generator().manual_seed(0))
    outputs = {}
    for combo in itertools.product(ops, repeat=6):
        arch = method.edges_to_arch(dict(zip(method.EDGES, combo)))
        c = method.canonical(arch)
        assert method.canonical(c) == c
        out = method.Cell(arch, 3)(x)
        if c in outputs:
            torch.testing.assert_close(out, outputs[c], rtol=1e-5, atol=1e-6)
        else:
            outputs[c] = out
    # fewer classes than strings: the map does merge
    assert len(outputs) < 3**6


def test_no_path_gives_constant_network():
    arch = "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|nor_conv_1x1~2|"
    assert not method.has_path(arch)
    torch.manual_seed(0)
    net = method.CellNet(arch).eval()
    out = net(torch.rand(5, 1, 8, 8))
    torch.testing.assert_close(out, out[:1].expand_as(out))


def test_cell_matches_a_loop_over_edges():
    torch.manual_seed(0)
    arch = "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|"
    cell = method.Cell(arch, 4).eval()
    x = torch.randn(2, 4, 5, 5)
    n1 = cell.ops["01"](x)
    n2 = x + cell.ops["12"](n1)
    n3 = F.avg_pool2d(x, 3, 1, 1, count_include_pad=False) + cell.ops["23"](n2)
    torch.testing.assert_close(cell(x), n3)


def _tiny_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).eval()


def test_fgsm_matches_finite_difference_sign():
    model = _tiny_model()
    x = torch.rand(3, 1, 2, 2, dtype=torch.float32)
    y = torch.tensor([0, 1, 2])
    adv = method.fgsm(model, x, y, 0.01)
    h = 1e-3
    for n in range(3):
        for idx in itertools.product(range(1), range(2), range(2)):
            xp, xm = x[n : n + 1].clone().double(), x[n : n + 1].clone().double()
            xp[(0, *idx)] += h
            xm[(0, *idx)] -= h
            m = model.double()
            grad = (F.cross_entropy(m(xp), y[n : n + 1]) - F.cross_entropy(m(xm), y[n : n + 1])) / (
                2 * h
            )
            model.float()
            expected = float(np.clip(x[(n, *idx)].item() + 0.01 * np.sign(grad.item()), 0, 1))
            assert adv[(n, *idx)].item() == pytest.approx(expected, abs=1e-6)


def test_pgd_stays_in_the_ball_and_beats_fgsm_on_a_linear_model():
    model = _tiny_model()
    x = torch.rand(50, 1, 2, 2, generator=torch.Generator().manual_seed(1))
    y = model(x).argmax(-1)
    adv = method.pgd(model, x, y, 0.1, 20)
    assert (adv - x).abs().max() <= 0.1 + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    loss = lambda z: F.cross_entropy(model(z), y).item()  # noqa: E731
    assert loss(adv) > loss(x)
    # a fooled point stays fooled: with the same step size, more steps never raise accuracy
    acc = [
        method.accuracy(model, method.pgd(model, x, y, 0.3, t, step_size=0.05), y)
        for t in (1, 2, 5, 10)
    ]
    assert acc == sorted(acc, reverse=True) and acc[-1] < 1.0


def test_jacobian_norm_matches_autograd_jacobian():
    model = _tiny_model()
    x = torch.rand(4, 1, 2, 2)
    expected = np.mean(
        [
            torch.autograd.functional.jacobian(lambda z: model(z[None])[0], x[i]).norm().item()
            for i in range(4)
        ]
    )
    assert method.jacobian_norm(model, x) == pytest.approx(expected, rel=1e-5)


def test_hessian_power_iteration_matches_eigvalsh():
    model = _tiny_model().double()
    x = torch.rand(3, 1, 2, 2, dtype=torch.float64)
    y = torch.tensor([0, 1, 2])
    tops = []
    for i in range(3):
        f = lambda z, i=i: F.cross_entropy(model(z.view(1, 1, 2, 2)), y[i : i + 1])  # noqa: E731
        h = torch.autograd.functional.hessian(f, x[i].flatten())
        ev = torch.linalg.eigvalsh(h)
        tops.append(ev[ev.abs().argmax()].item())
    got = method.hessian_top_eigenvalue(model, x, y, iters=200, generator=np.random.default_rng(0))
    assert got == pytest.approx(np.mean(tops), rel=1e-4, abs=1e-8)


def test_database_reader_on_a_fixture(tmp_path):
    root = write_database_fixture(tmp_path / "db", 20)
    db = method.RobustnessDatabase(root)
    assert len(db.meta["ids"]) == 15_625
    assert len(db.non_isomorph_ids) == len({method.canonical(a) for a in method.all_archs()})
    first = db.non_isomorph_ids[0]
    assert db.get_uid(first) == first and db.id_to_string(first) == method.all_archs()[int(first)]
    # an isomorphic duplicate maps to its representative
    dup = next(i for i, d in db.meta["ids"].items() if d["isomorph"] != i)
    assert method.canonical(db.id_to_string(dup)) == method.canonical(
        db.id_to_string(db.get_uid(dup))
    )
    raw = json.loads((root / "cifar10" / "pgd@Linf_accuracy.json").read_text())
    assert db.query("cifar10", "pgd@Linf") == raw["cifar10"]["pgd@Linf"]["accuracy"]
    assert db.query("ImageNet16-120", "contrast") == {}
    result = paper.run(paper.PRESETS["full"].replace(data_root=str(root), max_archs=20))
    assert len(result.records) == 20 and result.source == "database:cifar10"
    r = result.records[0]
    assert r.pgd == raw["cifar10"]["pgd@Linf"]["accuracy"][first]
    report = paper.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")


def test_presets_and_validation():
    assert set(paper.PRESETS) >= {"smoke", "notebook", "full"}
    with pytest.raises(CompanionError):
        paper.PRESETS["notebook"].replace(epsilons=(0.1, 0.05))
    with pytest.raises(CompanionError):
        paper.PRESETS["notebook"].replace(dataset="cifar")
    cfg = paper.PRESETS["notebook"]
    zoo = paper.sample_zoo(cfg, 0)
    assert len(zoo) == cfg.n_bin + cfg.n_other == len(set(zoo))
    assert all(method.has_path(a) and method.canonical(a) == a for a in zoo)
    assert zoo == paper.sample_zoo(cfg, 0) and zoo != paper.sample_zoo(cfg, 1)


def test_smoke_run_resume_and_claims(tmp_path):
    cfg = paper.PRESETS["smoke"]
    a = paper.run(cfg, out_dir=tmp_path / "a")
    b = paper.run(cfg, out_dir=tmp_path / "a", resume=True)
    assert a.to_dict() == b.to_dict()
    assert all(r.params == a.bin_records[0].params for r in a.bin_records)
    report = paper.check_claims(a)
    assert len(report.rows) == 6 and str(report).splitlines()[-1].startswith("claims hold: ")


def test_claims_fail_when_the_effect_is_absent():
    cfg = paper.PRESETS["smoke"]
    rec = lambda arch, pgd, jac, params, bin_=True: paper.ArchRecord(  # noqa: E731
        arch=arch,
        train_seed=0,
        params=params,
        conv3x3=1,
        conv1x1=1,
        in_bin=bin_,
        clean=0.9,
        fgsm=[0.7, 0.7, 0.7],
        pgd=[pgd, pgd, pgd],
        pgd_long=pgd,
        corruptions={},
        jacobian=jac,
        hessian=1.0,
        seconds=0.0,
    )
    records = [rec(f"a{i}", 0.40 + 0.01 * i, 10.0 - i, 100) for i in range(4)]
    result = paper.Result(
        config=cfg.to_dict(),
        epsilons=[0.02, 0.05, 0.1],
        records=records,
        repeats=[rec("a0", 0.2, 1.0, 100), rec("a0", 0.6, 1.0, 100)],
        source="digits",
    )
    report = paper.check_claims(result)
    verdicts = [r.verdict for r in report.rows]
    assert verdicts[:2] == ["yes", "yes"]
    assert verdicts[2] == "no" and verdicts[3] == "no"  # 3 pts range; seeds spread more
    assert verdicts[4] == "yes"  # −J increases with pgd: τ = 1
    assert claims_mod.kendall_tau([1, 1, 1], [1, 2, 3]) == 0.0
    # the attacks-ordered premise fails when PGD beats FGSM
    bad = [rec("b", 0.8, 1.0, 100)]
    result.records = bad + records
    assert report.rows[1].holds and not paper.check_claims(result).rows[1].holds
