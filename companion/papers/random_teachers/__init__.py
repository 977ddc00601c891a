"""Random Teachers are Good Teachers.

Felix Sarnthein, Gregor Bachmann, Sotiris Anagnostidis, Thomas Hofmann. ICML 2023.
Paper: https://proceedings.mlr.press/v202/sarnthein23a.html (arXiv:2302.12091) ·
Code: https://github.com/safelix/dinopl

Self-distillation without a trained teacher: a teacher network g_T = h_T ∘ f_T is drawn at
random and frozen, and a student g_S of the same architecture is trained on unlabelled images,
one view each, no augmentation, to match the teacher's softmax outputs (Eq. 1):

    min_θS  E_x [ −Σ_k softmax(g_T(x)/τ_t)_k · log softmax(g_S(x)/τ_s)_k ].

The teacher knows nothing about the data, yet the student's encoder f_S ends up with features
that a linear probe or a k-nearest-neighbour classifier separates much better than the teacher's
f_T. The effect is local: it appears when the student starts at or near the teacher,
θ_S(0) = ((1 − α) θ_T + α θ_R) / √(α² + (1 − α)²) with small α, and fades as α → 1.

* ``method``: encoders, the DINO head, the official initialisation, the student interpolation,
  Eq. 1, the fit step, and the probes (standardisation, linear probe, kNN).
* ``experiment``: presets, ``run`` (one frozen random teacher, one student per α).
* ``plots`` and ``claims``: training curves, probe accuracy of teacher vs students, locality.
"""

from companion.papers.random_teachers.claims import check_claims
from companion.papers.random_teachers.experiment import (
    PRESETS,
    RandomTeachersConfig,
    RandomTeachersResult,
    StudentArm,
    build_model,
    load_data,
    probe_kwargs,
    run,
)
from companion.papers.random_teachers.method import (
    ConvEncoder,
    DINOHead,
    DINOModel,
    DistillationStep,
    ResNet18,
    distillation_loss,
    embed,
    interpolate,
    knn_accuracy,
    linear_probe_accuracy,
    make_teacher_student,
    parameter_distance,
    probe,
    recalibrate_batchnorm,
    reset_parameters,
    standardize,
)
from companion.papers.random_teachers.plots import (
    figures,
    plot_arm,
    plot_locality,
    plot_probes,
    plot_training,
)

Config = RandomTeachersConfig
Result = RandomTeachersResult

__all__ = [
    "PRESETS",
    "Config",
    "ConvEncoder",
    "DINOHead",
    "DINOModel",
    "DistillationStep",
    "RandomTeachersConfig",
    "RandomTeachersResult",
    "ResNet18",
    "Result",
    "StudentArm",
    "build_model",
    "check_claims",
    "distillation_loss",
    "embed",
    "figures",
    "interpolate",
    "knn_accuracy",
    "linear_probe_accuracy",
    "load_data",
    "make_teacher_student",
    "parameter_distance",
    "plot_arm",
    "plot_locality",
    "plot_probes",
    "plot_training",
    "probe",
    "probe_kwargs",
    "recalibrate_batchnorm",
    "reset_parameters",
    "run",
    "standardize",
]
