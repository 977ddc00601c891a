"""Exercises whose checks cannot be fooled by trivial answers.

The smoke run (``smoke_runs`` in tests/conftest.py) plants, after each exercise of every notebook,
trivial answers for the names its solution assigns and its check reads (tests/exercise_planting.py:
``None``, zeros shaped like the true value, a constant, a function returning ``None`` or zeros,
another number of the solution copied in, a function the notebook showed with ``show_source``),
and records whether the check still passed. Every such pass must be listed in :data:`EXEMPT` with
a one-line reason; an exemption that no longer applies fails too, so the list stays exact.
"""

import json
from pathlib import Path

import exercise_planting
import nbformat
import pytest

from companion.tools import notebooks
from companion.tools.classroom import exercise_cells

SLUGS = notebooks.all_slugs()

RETYPING = "re-typing: the one exercise of the notebook that re-types a function it showed"

EXEMPT: dict[str, dict[int, dict[str, str]]] = {
    "cider": {
        2: {
            "predicted_dispersion:constant": "at smoke (steps < 100) the prototypes do not "
            "disperse: the check compares the prediction only from 100 steps on",
        }
    },
    "contextual_similarity": {
        1: {"my_contextual_similarity:shown paper.contextual_similarity": RETYPING},
    },
    "dfpc": {
        1: {"my_last_stage_scores:shown paper.dfpc_saliency": RETYPING},
    },
    "information_plane": {
        1: {"my_conditional_entropy:shown paper.conditional_entropy": RETYPING},
    },
    "leadfl": {
        1: {"my_regularizer:shown paper.leadfl_regularizer": RETYPING},
    },
    "neural_stego_optimizer": {
        1: {"my_select:shown paper.select_best_iterate": RETYPING},
    },
    "repair": {
        1: {"best_matching:shown paper.match_permutation": RETYPING},
    },
    "sfat": {
        1: {"my_slack_weights:shown paper.slack_weights": RETYPING},
    },
    "sie": {
        1: {"my_regularizers:shown paper.vicreg_regularizers": RETYPING},
    },
    "som_cpc": {
        1: {"my_som_loss:shown paper.som_loss": RETYPING},
    },
    "tsimcne": {
        1: {"my_cauchy:shown paper.cauchy_similarity": RETYPING},
    },
    "unimax": {
        1: {"my_temperature:shown paper.temperature_sampling": RETYPING},
        2: {
            "my_water_filling:shown paper.unimax_budgets": "a variant: bisection on the "
            "water level, "
            "not Algorithm 1's sort; equal budgets are the point",
        },
    },
}
"""slug -> exercise number -> ``"name:kind"`` -> why that planted answer may pass the check.
A :data:`RETYPING` reason marks the notebook's one re-typing exercise (at most one per notebook)."""


@pytest.mark.notebooks
@pytest.mark.parametrize("slug", SLUGS)
def test_planted_trivial_answers_fail_every_check(smoke_runs, slug):
    run = smoke_runs[slug]
    assert run.status == "ok", run.error
    reports = exercise_planting.reports(json.loads(Path(run.output).read_text()))
    pairs = exercise_cells(nbformat.read(notebooks.notebook_path(slug), as_version=4))
    assert [r["exercise"] for r in reports] == list(range(1, len(pairs) + 1))
    # the budget leaves the planting out: its cells took at least what planting measured itself
    assert run.timing.planted >= sum(r["seconds"] for r in reports)
    assert 0 < run.timing.planted < run.timing.total
    exempt = EXEMPT.get(slug, {})
    fooled, used = [], set()
    for report in reports:
        k = report["exercise"]
        assert report["results"], f"exercise {k}: no name of its solution is read by its check"
        for result in report["results"]:
            key = f"{result['name']}:{result['kind']}"
            if result["passed"] and key in exempt.get(k, {}):
                used.add((k, key))
            elif result["passed"]:
                fooled.append(f"exercise {k}: {key}")
    assert not fooled, "these trivial answers pass their check: " + "; ".join(fooled)
    stale = [(k, key) for k, keys in exempt.items() for key in keys if (k, key) not in used]
    assert not stale, f"exemptions that no longer apply: {stale}"
    retyped = {k for k, keys in exempt.items() for reason in keys.values() if reason == RETYPING}
    assert len(retyped) <= 1, f"more than one re-typing exercise: {sorted(retyped)}"


# --- the harness itself, without a kernel -------------------------------------------------------


def test_solution_names_are_the_block_bindings_the_check_reads():
    solution = (
        "given = 3\n"
        "def mine(x):\n"
        "    ### BEGIN SOLUTION\n"
        "    helper = 2\n"
        "    return x * helper\n"
        "    ### END SOLUTION\n"
        "guess = None\n"
        "### BEGIN SOLUTION\n"
        "scratch = 1\n"
        "guess, t = 0.9, 2\n"
        "### END SOLUTION\n"
    )
    check = "for t in range(2):\n    check(mine(t) == 2 * t and guess > given, 'no')\n"
    names = exercise_planting.solution_names(solution, check)
    # given: outside the block; helper: local; scratch: unread; t: the check's own loop variable
    assert names == ["mine", "guess"]


def _plant(ns, names, check):
    return {
        f"{r['name']}:{r['kind']}": r["passed"]
        for r in exercise_planting.plant(ns, 1, names, check, shown=["reference"])
    }


def test_planting_catches_a_check_that_accepts_anything_in_range(capsys):
    ns = {"share": 0.73}
    check = "assert 0 < share <= 1, 'a share is in (0, 1]'"
    assert _plant(ns, ["share"], check) == {
        "share:None": False,
        "share:zeros": False,
        "share:constant": True,
    }
    assert ns == {"share": 0.73}  # restored
    assert capsys.readouterr().out.startswith(exercise_planting.MARKER)


def test_planting_passes_a_check_against_an_independent_value():
    ns = {"share": 0.73, "measured": 0.5}
    check = "assert abs(share - 0.73) < 1e-3\nassert abs(measured - 0.5) < 1e-3"
    assert not any(_plant(ns, ["share", "measured"], check).values())


def test_planting_copies_a_measurement_into_the_prediction():
    ns = {"predicted": 0.4, "measured": 0.41}
    check = "assert abs(predicted - measured) < 0.05"  # the prediction against itself
    assert _plant(ns, ["predicted", "measured"], check)["predicted:copy of measured"]


def test_planting_a_shown_function_finds_a_re_typing_exercise():
    import torch

    def reference(x):
        return torch.relu(x) * 2

    def mine(x):
        return torch.clamp(x, min=0) * 2

    check = "x = torch.linspace(-1, 1, 5)\nassert torch.allclose(mine(x), 2 * torch.relu(x))"
    ns = {"torch": torch, "reference": reference, "mine": mine}
    assert _plant(ns, ["mine"], check) == {
        "mine:None": False,
        "mine:returns None": False,
        "mine:returns zeros": False,
        "mine:shown reference": True,
    }
    assert "x" not in ns  # the check's own names are removed again


def test_prepare_adds_a_planting_cell_after_each_check():
    cells = [
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell(
            "answer = None\n### BEGIN SOLUTION\nanswer = 2\n### END SOLUTION"
        ),
        nbformat.v4.new_code_cell("check_close(answer, 2)"),
        nbformat.v4.new_code_cell(
            "def f(v):\n    ### BEGIN SOLUTION\n    return v\n    ### END SOLUTION"
        ),
        nbformat.v4.new_code_cell("check_close(f(3), 3)"),
    ]
    prepared = exercise_planting.prepare(nbformat.v4.new_notebook(cells=cells), "toy")
    sources = [c.source for c in prepared.cells]
    assert "import exercise_planting" in sources[0]
    assert sources[1:5] == [c.source for c in cells[:4]]
    assert sources[5].startswith("_planting.plant(globals(), exercise=1, names=['answer']")
    assert sources[8].startswith("_planting.plant(globals(), exercise=2, names=['f']")
    assert len(sources) == len(cells) + 3
