"""Do We Really Need Complicated Model Architectures For Temporal Networks? (GraphMixer)

Weilin Cong, Si Zhang, Jian Kang, Baichuan Yuan, Hao Wu, Xin Zhou, Hanghang Tong, Mehrdad
Mahdavi. ICLR 2023. Paper: https://openreview.net/forum?id=ayPPc0SyLv1 · Code:
https://github.com/CongWeilin/GraphMixer

Temporal link prediction with three simple parts: a *link encoder* that summarises a node's K
most recent links with one MLP-Mixer block over tokens ``Linear([edge feature ‖ cos(ω Δt)])``
whose time encoding is fixed (ω_i = 10^{-9(i-1)/(d-1)}, never trained), a *node encoder* that
adds the mean feature of the node's recent neighbours to its own, and an MLP *link classifier*.
No RNN, no attention: the paper reports that it matches or beats RNN- and attention-based
temporal graph models in average precision, and converges faster.

* ``method``: the sampler (NumPy, no torch-geometric) and the modules in plain torch.
* ``data``: a synthetic stream with drift and repeats, and the JODIE/TGL CSV reader.
* ``experiment``: presets and ``run`` (GraphMixer, controls, attention and GRU baselines).
* ``plots`` and ``claims``: the figures and the thesis measured.
"""

from companion.papers.graphmixer.claims import check_claims
from companion.papers.graphmixer.data import read_jodie_csv, synthetic_stream, write_jodie_fixture
from companion.papers.graphmixer.experiment import (
    ARMS,
    PRESETS,
    ArmResult,
    GraphMixerConfig,
    GraphMixerResult,
    average_precision,
    load_graph,
    run,
    train_arm,
)
from companion.papers.graphmixer.method import (
    AttentionLinkEncoder,
    FeatEncode,
    GRULinkEncoder,
    LinkClassifier,
    MixerBlock,
    MixerLinkEncoder,
    TemporalGraph,
    TemporalLinkPredictor,
    TimeEncode,
    node_encoding,
    time_frequencies,
)
from companion.papers.graphmixer.plots import (
    figures,
    plot_curves,
    plot_stream,
    plot_time_encoding,
)

Config = GraphMixerConfig
Result = GraphMixerResult

__all__ = [
    "ARMS",
    "PRESETS",
    "ArmResult",
    "AttentionLinkEncoder",
    "Config",
    "FeatEncode",
    "GRULinkEncoder",
    "GraphMixerConfig",
    "GraphMixerResult",
    "LinkClassifier",
    "MixerBlock",
    "MixerLinkEncoder",
    "Result",
    "TemporalGraph",
    "TemporalLinkPredictor",
    "TimeEncode",
    "average_precision",
    "check_claims",
    "figures",
    "load_graph",
    "node_encoding",
    "plot_curves",
    "plot_stream",
    "plot_time_encoding",
    "read_jodie_csv",
    "run",
    "synthetic_stream",
    "time_frequencies",
    "train_arm",
    "write_jodie_fixture",
]
