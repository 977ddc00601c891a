"""olfactory_gnn against independent computations: loops over edges and atoms, brute-force
attention, hand-counted graphs, scikit-learn's AUPRC against a direct formula."""

import itertools

import numpy as np
import pytest
import torch

from companion.errors import CompanionError
from companion.papers import olfactory_gnn as paper
from companion.papers.olfactory_gnn import fullscale


def test_mol_graph_counts_atoms_and_bonds_and_keeps_mixtures_disconnected():
    g = paper.mol_graph("CCO")
    assert g.n_atoms == 3 and len(g.senders) == 4  # two bonds, both directions
    assert sorted(zip(g.senders, g.receivers)) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    mix = paper.mol_graph("CCO.CC=O")
    assert len(mix.senders) == 4 + 4  # bonds only, as the official mix__concatGraph
    assert all(mix.component[u] == mix.component[v] for u, v in zip(mix.senders, mix.receivers))
    assert mix.component == [0, 0, 0, 1, 1, 1]
    assert paper.mol_graph("c1ccccc1").bond_type[0] == 4  # aromatic
    with pytest.raises(ValueError):
        paper.mol_graph("not a smiles")


def test_gather_batch_offsets_edges_like_a_disconnected_union():
    graphs = [paper.mol_graph(s) for s in ("CCO", "CC(=O)O", "CO.CC")]
    bank = paper.build_bank(graphs)
    n = bank.atom_z.shape[1]
    idx = torch.tensor([2, 0, 1, 0])
    g = paper.gather_batch(bank, idx)
    expected = []
    for b, i in enumerate(idx.tolist()):
        expected += [(u + b * n, v + b * n) for u, v in zip(graphs[i].senders, graphs[i].receivers)]
    assert list(zip(g.senders.tolist(), g.receivers.tolist())) == expected
    assert g.node_mask.sum(1).tolist() == [graphs[i].n_atoms for i in idx.tolist()]


def test_message_passing_matches_a_loop_over_edges():
    torch.manual_seed(0)
    mp = paper.MessagePassing(dim=5, edge_dim=3).double()
    h = torch.randn(4, 5, dtype=torch.double)
    senders, receivers = torch.tensor([0, 1, 1, 2, 3]), torch.tensor([1, 0, 2, 1, 1])
    e = torch.randn(5, 3, dtype=torch.double)
    out = mp(h, senders, receivers, e, steps=2)
    x, edge = h.clone(), e.clone()
    for _ in range(2):
        msgs, agg = [], torch.zeros(4, 3, dtype=torch.double)
        for k in range(5):
            u, v = int(senders[k]), int(receivers[k])
            m = torch.relu(mp.edge(torch.cat([x[u], x[v], edge[k]])))
            msgs.append(m)
            agg[v] += m
        new = torch.stack([mp.gru(agg[i : i + 1], x[i : i + 1])[0] for i in range(4)])
        x, edge = new, torch.stack(msgs)
    torch.testing.assert_close(out, x)


def test_masked_attention_matches_brute_force_and_ignores_padding():
    torch.manual_seed(1)
    b, n, d, heads = 2, 4, 6, 2
    q, k, v = (torch.randn(b, n, d, dtype=torch.double) for _ in range(3))
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    out = paper.masked_attention(q, k, v, mask, heads)
    dh = d // heads
    for bi, hi, i in itertools.product(range(b), range(heads), range(n)):
        sl = slice(hi * dh, (hi + 1) * dh)
        keys = [j for j in range(n) if mask[bi, j]]
        s = torch.tensor([float(q[bi, i, sl] @ k[bi, j, sl]) / np.sqrt(dh) for j in keys])
        w = torch.softmax(s, 0).double()
        ref = sum(w[t] * v[bi, j, sl] for t, j in enumerate(keys))
        torch.testing.assert_close(out[bi, i, sl], ref)
    v2 = v.clone()
    v2[0, 3] += 100.0  # a padding atom's value never reaches anyone
    torch.testing.assert_close(paper.masked_attention(q, k, v2, mask, heads)[0, :3], out[0, :3])


def test_attention_sum_pool_is_a_softmax_weighted_sum():
    torch.manual_seed(2)
    logit = torch.nn.Linear(3, 1, bias=False).double()
    x = torch.randn(1, 3, 3, dtype=torch.double)
    mask = torch.tensor([[True, True, False]])
    a = torch.softmax(torch.stack([logit(x[0, i])[0] for i in range(2)]), 0)
    torch.testing.assert_close(
        paper.attention_sum_pool(x, mask, logit)[0], a[0] * x[0, 0] + a[1] * x[0, 1]
    )


@pytest.mark.parametrize("mode", ["inject", "endcls"])
def test_receptor_reaches_the_atoms_only_when_injected(mode):
    torch.manual_seed(3)
    model = paper.OdorantReceptorModel(mode, cls_dim=8, dim=8, edge_dim=4, heads=2)
    bank = paper.build_bank([paper.mol_graph("CCCO")])
    g = paper.gather_batch(bank, torch.tensor([0, 0]))
    cls = torch.randn(2, 8)
    s = model.receptor(cls) if mode == "inject" else None
    x = model.embed_atoms(g, s)
    assert torch.allclose(x[0], x[1]) == (mode == "endcls")
    out = model(g, cls)
    assert out.shape == (2,) and not torch.allclose(out[0], out[1])  # both modes see the receptor


def test_draw_steps_is_a_truncated_normal():
    g = torch.Generator().manual_seed(0)
    draws = [paper.draw_steps(6.0, 1.0, 3, 9, g) for _ in range(2000)]
    assert min(draws) >= 3 and max(draws) <= 9
    assert np.mean(draws) == pytest.approx(6.0, abs=0.1)
    assert paper.draw_steps(6.0, 1.0, 3, 9, None) == 6


def _bfs_distance(smiles, u, v):
    g = paper.mol_graph(smiles)
    nbrs = {i: set() for i in range(g.n_atoms)}
    for a, b in zip(g.senders, g.receivers):
        nbrs[a].add(b)
    seen, frontier, d = {u}, {u}, 0
    while v not in frontier:
        frontier = {w for x in frontier for w in nbrs[x]} - seen
        seen |= frontier
        d += 1
        if not frontier:
            return None
    return d


def test_ground_truth_rule_by_hand():
    # 5-hydroxypentan-2-one: alcohol carbon C1 ... ketone carbon C4, three bonds apart
    facts = paper.mol_facts("OCCCC(=O)C")
    assert ("alcohol", "ketone", 3) in facts.components[0][2]
    assert _bfs_distance("OCCCC(=O)C", 1, 4) == 3  # atoms 1 (C-OH) and 4 (C=O)
    r = paper.Receptor("alcohol", "ketone", 2, 3)
    assert paper.responds(r, facts)
    assert not paper.responds(r, paper.mol_facts("OCC(=O)CCC"))  # 1 bond: outside
    assert not paper.responds(r, paper.mol_facts("OCCCCC(=O)C"))  # 4 bonds: outside
    # positional isomers: same groups and carbon count, so the same descriptors
    d = [paper.descriptors(paper.mol_facts(s)) for s in ("OCCCC(=O)C", "OCC(=O)CCC")]
    assert np.array_equal(d[0], d[1])
    # a double bond has two sites; a methyl branch's site is the branching carbon
    assert {x[2] for x in paper.mol_facts("OC(=O)CC=CC").components[0][2]} == {2, 3}
    assert ("nitrile", "branch", 2) in paper.mol_facts("N#CCC(C)CC").components[0][2]
    # a mixture responds only through one molecule: no distance across molecules
    mix = paper.mol_facts("OCCCC.CCC(=O)C")
    assert not paper.responds(paper.Receptor("alcohol", "ketone", 1, 9), mix)
    assert mix.names() == {"alcohol", "ketone"}
    code = paper.receptor_code(r)
    assert code.sum() == 1 + 1 + 2


def test_positional_isomers_share_descriptors_and_differ_in_distance():
    rows = paper.positional_isomers(3, 6)
    by_key = {}
    for name, smi, _ in rows:
        f = paper.mol_facts(smi)
        by_key.setdefault(name.split(" on ")[0], []).append((paper.descriptors(f), f))
    for key, items in by_key.items():
        assert all(np.array_equal(items[0][0], d) for d, _ in items), key
    assert any(len({f.components[0][2] for _, f in items}) > 1 for items in by_key.values())
    assert len({smi for _, smi, _ in rows}) == len(rows)


def test_odorant_list_parses_and_has_provenance():
    rows = paper.read_odorants()
    assert len(rows) >= 20 and all(src for _, _, src in rows)
    for _, smi, _ in rows:
        assert paper.mol_graph(smi).n_atoms > 0


def test_auprc_matches_the_step_formula():
    rng = np.random.default_rng(0)
    y = rng.random(50) < 0.2
    s = rng.random(50) + y * 0.3
    order = np.argsort(-s)
    ys = y[order]
    tp = np.cumsum(ys)
    precision = tp / np.arange(1, 51)
    ap = float((precision * ys).sum() / ys.sum())  # AP = mean precision at each positive
    assert paper.auprc(y, s) == pytest.approx(ap)


def test_presets_and_validation():
    for name in ("smoke", "notebook", "full"):
        assert isinstance(paper.PRESETS[name], paper.OlfactoryConfig)
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(arms=("nope",))
    with pytest.raises(CompanionError):
        paper.PRESETS["smoke"].replace(dim=10, heads=4)
    cfg = paper.PRESETS["notebook"]
    a, b = (paper.count_parameters(paper.build_model(cfg, m, 0)) for m in ("inject", "endcls"))
    assert b >= 0.95 * a  # the control is not smaller


def test_synthetic_data_splits_are_disjoint():
    cfg = paper.PRESETS["smoke"]
    data = paper.make_synthetic(cfg, 0)
    assert data.desc.shape[0] == len(data.smiles)
    pairs = {k: set(zip(v[0].tolist(), v[1].tolist())) for k, v in data.splits.items()}
    assert not pairs["train"] & pairs["test"] and not pairs["train"] & pairs["val"]
    held = {r for r, _ in pairs["heldout_receptors"]}
    assert held and not held & {r for r, _ in pairs["train"]}
    w = data.splits["train"][3]
    y = data.splits["train"][2]
    assert float((w * y).sum()) == pytest.approx(float((w * (1 - y)).sum()))  # balanced classes


def test_smoke_run_claims_and_resume(tmp_path):
    cfg = paper.PRESETS["smoke"].replace(device="cpu", checkpoint_every=15)
    result = paper.run(cfg, out_dir=tmp_path)
    report = paper.check_claims(result)
    assert str(report).splitlines()[-1].startswith("claims hold: ")
    assert len(report.rows) == 3
    assert 0 <= result.seeds[0].baselines["descriptors"] <= 1
    again = paper.OlfactoryResult.load(tmp_path / "result.json")
    assert again.seeds[0].arms["inject"].test_auprc == result.seeds[0].arms["inject"].test_auprc
    resumed = paper.run(cfg, out_dir=tmp_path, resume=True)
    assert resumed.seeds[0].arms["endcls"].test_scores == result.seeds[0].arms["endcls"].test_scores
    figs = paper.figures(result)
    assert set(figs) == {"auprc", "curves"}
    paper.plot_mixture("CCO.CC=O")


def test_m2or_reader_on_a_fixture(tmp_path):
    root = fullscale.write_m2or_fixture(tmp_path)
    rows = paper.read_m2or(root / "data_train_node32_edge64.csv")  # seq_id only, as official
    assert len(rows) == len(fullscale.FIXTURE_PAIRS)
    assert rows[0] == ("CCCCCCO", "OR0", None, 1.0, 1.0)
    (tmp_path / "bad.csv").write_text("_SMILES;seq_id\nCCO;OR1\n")
    with pytest.raises(CompanionError):
        paper.read_m2or(tmp_path / "bad.csv")
    with pytest.raises(CompanionError):  # a sequence column asked for but absent
        paper.read_m2or(root / "data_test.csv", "mutated_Sequence")
    cfg = paper.PRESETS["full"].replace(data_root=str(root), cls_dim=16)
    data = paper.load_pairs(cfg, 0)
    expected = paper.method.sequence_standin_cls(fullscale.SEQUENCES[1], 16)
    torch.testing.assert_close(
        data.cls[data.receptors.index("OR1")].double(), torch.tensor(expected), atol=1e-6, rtol=1e-6
    )
    # precomputed [CLS] vectors keyed by seq_id (e.g. ProtBERT's exported from the h5)
    vecs = {"OR0": np.arange(16.0), "OR1": -np.arange(16.0)}
    np.savez(root / "cls.npz", **vecs)
    data = paper.load_pairs(cfg.replace(receptor_file="cls.npz"), 0)
    assert data.cls[data.receptors.index("OR1")].tolist() == (-np.arange(16.0)).tolist()
    np.savez(root / "short.npz", OR0=np.zeros(16))
    with pytest.raises(CompanionError, match="OR1"):
        paper.load_pairs(cfg.replace(receptor_file="short.npz"), 0)


def test_check_claims_reports_failure_when_effect_is_absent():
    cfg = paper.PRESETS["smoke"].replace(device="cpu")
    result = paper.run(cfg)
    for arm in result.seeds[0].arms.values():  # both arms at the one-sided level
        arm.test_auprc = 0.1
    result.seeds[0].baselines = {"receptor_only": 0.1, "molecule_only": 0.1, "descriptors": 0.1}
    report = paper.check_claims(result)
    assert not report.rows[0].holds and report.rows[2].verdict.startswith("not tested")
    for s in result.seeds:
        s.arms["inject"].test_auprc, s.arms["endcls"].test_auprc = 0.9, 0.85
    report = paper.check_claims(result)
    assert report.rows[0].holds and report.rows[1].holds
    assert not report.rows[2].holds  # within the margin: no
    result.seeds[0].baselines["descriptors"] = 0.88  # descriptors suffice: premise fails
    report = paper.check_claims(result)
    assert not report.rows[1].holds and report.rows[2].verdict.startswith("not tested")
    result.seeds[0].baselines["descriptors"] = 0.1
    for s in result.seeds:
        s.arms["inject"].test_auprc = 0.95
    assert paper.check_claims(result).rows[2].holds
