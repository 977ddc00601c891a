"""LiGO: Learning to Grow Pretrained Models for Efficient Transformer Training.

Wang, Panda, Torroba Hennigen, Greengard, Karlinsky, Feris, Cox, Wang, Kim. ICLR 2023.
Paper: https://openreview.net/forum?id=cDYRS5iZ16f · Code: https://github.com/VITA-Group/LiGO

* ``method``: the growth operator M = L_depth · R_width (width: new units as learned
  combinations of old ones, tied bert2BERT style; depth: each large layer a learned combination
  of the small layers), and the copy-based baseline (bert2BERT width + StackBERT depth).
* ``experiment``: presets, ``run`` (small ViT pretrained, then a ViT twice as wide and deep
  trained from scratch, grown by copying, and grown by LiGO), compute counted in FLOPs.
* ``plots`` and ``claims``: loss against compute, the learned depth operator, the thesis.
"""

from companion.papers.ligo.claims import (
    check_claims,
    compute_fraction,
    compute_saved,
    mean_saving,
    operator_share,
    target_loss,
    targets,
)
from companion.papers.ligo.experiment import (
    PRESETS,
    LiGOConfig,
    LiGOResult,
    PhaseResult,
    build_model,
    initial_model,
    run,
    step_flops,
)
from companion.papers.ligo.method import (
    LiGO,
    copy_grow,
    depth_init,
    expand_in,
    expand_out,
    width_init,
)
from companion.papers.ligo.plots import (
    figures,
    plot_compute,
    plot_depth,
    plot_layer,
    plot_operator,
)

Config = LiGOConfig
Result = LiGOResult

__all__ = [
    "PRESETS",
    "Config",
    "LiGO",
    "LiGOConfig",
    "LiGOResult",
    "PhaseResult",
    "Result",
    "build_model",
    "initial_model",
    "check_claims",
    "compute_fraction",
    "compute_saved",
    "mean_saving",
    "operator_share",
    "copy_grow",
    "depth_init",
    "expand_in",
    "expand_out",
    "figures",
    "plot_compute",
    "plot_depth",
    "plot_layer",
    "plot_operator",
    "run",
    "step_flops",
    "target_loss",
    "targets",
    "width_init",
]
