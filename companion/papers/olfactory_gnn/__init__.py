"""Matching Receptor to Odorant with Protein Language and Graph Neural Networks.

Matej Hladiš, Maxence Lalis, Sébastien Fiorucci, Jérémie Topin. ICLR 2023.
Paper: https://openreview.net/forum?id=q9VherQJd8_ · Code: https://github.com/MatejHl/Receptor2Odorant

An olfactory receptor's sequence is embedded by a protein language model (ProtBERT's [CLS]),
and that vector is *injected* into the odorant's molecular graph: it is concatenated to every
atom's features before a graph transformer whose queries and keys come from message passing, so
the molecule is processed "in a protein-specific environment". The official ablation endCLS
adds the receptor only after the graph has been pooled. Mixtures are disconnected graphs.

* ``method``: RDKit featurisation, mixtures as disconnected graphs, message passing, the graph
  transformer layer, attention-sum pooling, the model in both modes, the synthetic receptors
  (a group within a window of bond distances from an anchor) and the positional isomers.
* ``experiment``: presets and ``run`` (injection vs endCLS, frequency baselines, the
  whole-molecule descriptor control).
* ``plots`` and ``claims``: figures and the thesis measured.
"""

from companion.papers.olfactory_gnn.claims import check_claims
from companion.papers.olfactory_gnn.experiment import (
    PRESETS,
    ArmResult,
    OlfactoryConfig,
    OlfactoryResult,
    SeedResult,
    auprc,
    build_model,
    descriptor_control,
    frequency_baselines,
    load_pairs,
    make_synthetic,
    read_m2or,
    read_receptors,
    run,
)
from companion.papers.olfactory_gnn.method import (
    ANCHORS,
    GROUPS,
    GraphTransformerLayer,
    MessagePassing,
    OdorantReceptorModel,
    Receptor,
    ReceptorEncoder,
    attention_sum_pool,
    build_bank,
    count_parameters,
    descriptors,
    draw_steps,
    gather_batch,
    masked_attention,
    mol_facts,
    mol_graph,
    positional_isomers,
    read_odorants,
    receptor_code,
    responds,
    standin_cls,
)
from companion.papers.olfactory_gnn.plots import figures, plot_auprc, plot_curves, plot_mixture

Config = OlfactoryConfig
Result = OlfactoryResult

__all__ = [
    "ANCHORS",
    "GROUPS",
    "PRESETS",
    "ArmResult",
    "Config",
    "GraphTransformerLayer",
    "MessagePassing",
    "OdorantReceptorModel",
    "OlfactoryConfig",
    "OlfactoryResult",
    "Receptor",
    "ReceptorEncoder",
    "Result",
    "SeedResult",
    "attention_sum_pool",
    "auprc",
    "build_bank",
    "build_model",
    "check_claims",
    "count_parameters",
    "descriptor_control",
    "descriptors",
    "draw_steps",
    "figures",
    "frequency_baselines",
    "gather_batch",
    "load_pairs",
    "make_synthetic",
    "masked_attention",
    "mol_facts",
    "mol_graph",
    "positional_isomers",
    "plot_auprc",
    "plot_curves",
    "plot_mixture",
    "read_m2or",
    "read_receptors",
    "read_odorants",
    "receptor_code",
    "responds",
    "run",
    "standin_cls",
]
