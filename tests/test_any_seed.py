"""Every paper runs at a seed its notebook never used (papermill's `-p seed N` alone)."""

import pytest

from companion.core import ClaimReport
from companion.registry import load_paper
from companion.tools import notebooks

SEED = 7  # outside the 0-4 of `companion claims` and the notebooks' default


@pytest.mark.parametrize("slug", notebooks.all_slugs())
def test_run_and_claims_at_another_seed(slug):
    paper = load_paper(slug)
    cfg = paper.PRESETS["smoke"].replace(seed=SEED)
    report = paper.check_claims(paper.run(cfg))
    assert isinstance(report, ClaimReport) and report.rows
    assert str(report).splitlines()[-1].startswith("claims hold: ")
