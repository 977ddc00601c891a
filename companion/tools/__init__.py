"""Tools for instructors and CI, above the papers: executing and checking notebooks
(:mod:`~companion.tools.notebooks`), nbgrader courses and lab plans
(:mod:`~companion.tools.classroom`), the static web site (:mod:`~companion.tools.site`) and
the CI time budget (:mod:`~companion.tools.cibudget`).

Nothing in ``core``, ``data``, ``nn`` or a paper package imports from here
(``tests/test_layers.py`` checks it).
"""
