"""Self-Attention Amortized Distributional Projection Optimization for Sliced Wasserstein
Point-Cloud Reconstruction.

Khai Nguyen, Dang Nguyen, Nhat Ho. ICML 2023. Paper: https://arxiv.org/abs/2301.04791 · Code:
https://github.com/hsgser/Self-Amortized-DSW

A point-cloud autoencoder is trained by a sliced-Wasserstein loss. Random slicing directions are
mostly uninformative; v-DSW samples them from a von Mises–Fisher around a location ε that
maximizes the distance, and amortized v-DSW predicts ε with a network f_ψ(X, Y) trained by one
ascent step per batch. The paper's map is a self-attention over the points, permutation
invariant and symmetric, where the earlier linear map on [X; Y] is neither.

* ``method``: SW, vMF sampling, v-DSW (by ascent and amortized), the linear and attention maps,
  the PointNet autoencoder, exact EMD (an assignment, checked against POT);
* ``experiment``: presets, data (analytic surfaces; ModelNet40 ``.off`` meshes for ``full``),
  ``run`` (one autoencoder per slicing loss, same steps and L);
* ``plots`` and ``claims``: reconstructions, EMD, sliced distances, and the claims.
"""

from companion.papers.amortized_dsw.claims import check_claims
from companion.papers.amortized_dsw.experiment import (
    AMORTIZED,
    ARMS,
    PRESETS,
    SHAPES,
    AmortizedDSWConfig,
    AmortizedDSWResult,
    ArmResult,
    invariance_angles,
    make_data,
    modelnet40_clouds,
    pc_normalize,
    read_off,
    run,
    sample_mesh,
    sample_surface,
    sliced_report,
    synthetic_clouds,
    train_arm,
)
from companion.papers.amortized_dsw.method import (
    Attention,
    AttentionMapping,
    LinearMapping,
    PointNetAE,
    amortized_ascent_step,
    amortized_vdsw,
    angle_degrees,
    emd,
    fibonacci_sphere,
    max_sw_grid,
    optimized_vdsw,
    predict_location,
    random_directions,
    random_locations,
    sliced_wasserstein,
    sw,
    vdsw_value,
    vmf_sample,
    vmf_w,
)
from companion.papers.amortized_dsw.plots import (
    draw_vmf,
    figures,
    plot_emd,
    plot_reconstructions,
    plot_sliced,
)

Config = AmortizedDSWConfig
Result = AmortizedDSWResult

__all__ = [
    "AMORTIZED",
    "ARMS",
    "PRESETS",
    "SHAPES",
    "AmortizedDSWConfig",
    "AmortizedDSWResult",
    "ArmResult",
    "Attention",
    "AttentionMapping",
    "Config",
    "LinearMapping",
    "PointNetAE",
    "Result",
    "amortized_ascent_step",
    "amortized_vdsw",
    "angle_degrees",
    "check_claims",
    "draw_vmf",
    "emd",
    "fibonacci_sphere",
    "figures",
    "invariance_angles",
    "make_data",
    "max_sw_grid",
    "modelnet40_clouds",
    "optimized_vdsw",
    "pc_normalize",
    "plot_emd",
    "plot_reconstructions",
    "plot_sliced",
    "predict_location",
    "random_directions",
    "random_locations",
    "read_off",
    "run",
    "sample_mesh",
    "sample_surface",
    "sliced_report",
    "sliced_wasserstein",
    "sw",
    "synthetic_clouds",
    "train_arm",
    "vdsw_value",
    "vmf_sample",
    "vmf_w",
]
