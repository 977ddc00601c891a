"""Neural Constraint Satisfaction (NCS): hierarchical abstraction for combinatorial
generalization in object rearrangement.

Chang, Dayan, Meier, Griffiths, Levine, Zhang. ICLR 2023.
Paper: https://openreview.net/forum?id=fGG6vHp3W9W · No official code was released.

* ``env``: a 2-D block world rendered to small images, pick-and-move actions, a noisy oracle
  that makes the offline data (all assumed: the paper's environments were not available).
* ``method``: level one (entities from pixels), level two (k-means abstract states and the
  factorized transition graph), NCS control; the flat behaviour-cloning baselines.
* ``experiment``: presets, ``run`` (NCS vs flat BC at the training and at larger object counts).
* ``plots`` and ``claims``: the figures and the paper's claim measured.
"""

from companion.papers.neural_constraint_satisfaction.claims import check_claims
from companion.papers.neural_constraint_satisfaction.env import BlockWorld, collect, solved
from companion.papers.neural_constraint_satisfaction.experiment import (
    ARMS,
    LABELS,
    PRESETS,
    ArmResult,
    NCSConfig,
    NCSResult,
    fit_ncs,
    make_data,
    make_tasks,
    make_world,
    rollout,
    run,
)
from companion.papers.neural_constraint_satisfaction.method import (
    Entities,
    EntityPolicy,
    PixelPolicy,
    TransitionGraph,
    assign,
    build_transition_graph,
    entity_features,
    entity_transition,
    graph_path,
    infer_entities,
    kmeans,
    match_entities,
    ncs_action,
)
from companion.papers.neural_constraint_satisfaction.plots import (
    figures,
    plot_arm,
    plot_graph,
    plot_scene,
    plot_success,
)

Config = NCSConfig
Result = NCSResult

__all__ = [
    "ARMS",
    "LABELS",
    "PRESETS",
    "ArmResult",
    "BlockWorld",
    "Config",
    "Entities",
    "EntityPolicy",
    "NCSConfig",
    "NCSResult",
    "PixelPolicy",
    "Result",
    "TransitionGraph",
    "assign",
    "build_transition_graph",
    "check_claims",
    "collect",
    "entity_features",
    "entity_transition",
    "figures",
    "fit_ncs",
    "graph_path",
    "infer_entities",
    "kmeans",
    "make_data",
    "make_tasks",
    "make_world",
    "match_entities",
    "ncs_action",
    "plot_arm",
    "plot_graph",
    "plot_scene",
    "plot_success",
    "rollout",
    "run",
    "solved",
]
