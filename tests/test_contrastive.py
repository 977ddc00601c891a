"""companion.nn.contrastive against loops over pairs."""

import math

import pytest
import torch
import torch.nn.functional as F

from companion.errors import CompanionError
from companion.nn.contrastive import info_nce, nt_xent


def test_info_nce_is_minus_log_softmax_of_the_diagonal():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(5, 7, generator=g, dtype=torch.float64)
    by_hand = 0.0
    for i in range(5):
        by_hand -= scores[i, i].item() - math.log(sum(math.exp(s) for s in scores[i].tolist()))
    assert info_nce(scores).item() == pytest.approx(by_hand / 5, rel=1e-5)
    with pytest.raises(CompanionError, match="C >= B"):
        info_nce(torch.randn(4, 3))


@pytest.mark.parametrize("tau", [0.1, 0.5, 1.0])
def test_nt_xent_matches_a_loop_over_views(tau):
    g = torch.Generator().manual_seed(1)
    z_a, z_b = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g)
    u = F.normalize(torch.cat([z_a, z_b]).double(), dim=1).tolist()
    n = len(u)
    total = 0.0
    for i in range(n):
        sim = [sum(p * q for p, q in zip(u[i], u[k])) / tau for k in range(n)]
        partner = (i + n // 2) % n
        total += -sim[partner] + math.log(sum(math.exp(sim[k]) for k in range(n) if k != i))
    assert nt_xent(z_a, z_b, tau).item() == pytest.approx(total / n, rel=1e-5)
    assert nt_xent(z_a, z_b, torch.tensor(tau)).item() == pytest.approx(total / n, rel=1e-5)


def test_nt_xent_is_symmetric_in_views_and_scale_free():
    g = torch.Generator().manual_seed(2)
    z_a, z_b = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    base = nt_xent(z_a, z_b, 0.2)
    torch.testing.assert_close(nt_xent(z_b, z_a, 0.2), base)
    torch.testing.assert_close(nt_xent(3 * z_a, 0.5 * z_b, 0.2), base)
    perm = torch.randperm(6, generator=g)
    torch.testing.assert_close(nt_xent(z_a[perm], z_b[perm], 0.2), base)


def test_nt_xent_bad_input():
    with pytest.raises(CompanionError, match="two views"):
        nt_xent(torch.randn(4, 3), torch.randn(5, 3), 0.1)
    with pytest.raises(CompanionError, match="temperature must be positive"):
        nt_xent(torch.randn(4, 3), torch.randn(4, 3), 0.0)
