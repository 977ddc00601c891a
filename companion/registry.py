"""The paper registry: one entry per paper in the catalog, in catalog order.

This is a plain data module. Each :class:`Paper` records the catalog number, the slug (the name
used everywhere: ``notebooks/<slug>.ipynb``, ``companion.papers.<slug>``, the CLI), the title,
venue and track as they appear in the catalog (seven papers sit in another track than the
catalog's, listed in ``tests/test_registry.py``: backdoor and Byzantine defences together under
``security``, embeddings trained with labels under ``representations``, a benchmark of
classifiers under ``evaluation``; :mod:`companion.course` introduces each track), the authors
(short form), a link to the paper (PMLR volume 202 or arXiv for ICML 2023, the OpenReview
forum for ICLR 2023) and the official code repository where the authors released one (``None``
where none was found).

Whether a paper is ``"available"`` or ``"planned"`` is not stored: :attr:`Paper.status` looks
for the notebook and the paper package on disk, so it is always current.

    >>> from companion import registry
    >>> registry.get("sigma_reparam").venue
    'ICML 2023'
"""

import difflib
import importlib
import pathlib
from dataclasses import dataclass

from companion.errors import CompanionError, unknown

__all__ = ["PAPERS", "ROOT", "Paper", "available", "get"]

#: Repository root: the folder that holds the ``companion`` package and ``notebooks/``.
ROOT = pathlib.Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Paper:
    """One catalog entry. URLs are full ``https://`` links; ``code_url`` may be ``None``."""

    number: int
    slug: str
    title: str
    venue: str
    track: str
    authors: str
    paper_url: str
    code_url: str | None

    @property
    def notebook(self) -> pathlib.Path:
        """Path of the paper's notebook: ``<repo root>/notebooks/<slug>.ipynb``."""
        return ROOT / "notebooks" / f"{self.slug}.ipynb"

    @property
    def package_dir(self) -> pathlib.Path:
        """Directory of the paper's package: ``<repo root>/companion/papers/<slug>/``."""
        return ROOT / "companion" / "papers" / self.slug

    @property
    def status(self) -> str:
        """``"available"`` when notebook and package both exist, else ``"planned"``."""
        if self.notebook.is_file() and self.package_dir.is_dir():
            return "available"
        return "planned"


def _pmlr(key: str) -> str:
    return f"https://proceedings.mlr.press/v202/{key}.html"


def _arxiv(arxiv_id: str) -> str:
    return f"https://arxiv.org/abs/{arxiv_id}"


def _openreview(forum_id: str) -> str:
    return f"https://openreview.net/forum?id={forum_id}"


def _gh(path: str) -> str:
    return f"https://github.com/{path}"


_ENTRIES = (
    Paper(
        number=1,
        slug="sigma_reparam",
        title="Stabilizing Transformer Training by Preventing Attention Entropy Collapse",
        venue="ICML 2023",
        track="transformers",
        authors="Shuangfei Zhai et al.",
        paper_url=_pmlr("zhai23a"),
        code_url=_gh("apple/ml-sigma-reparam"),
    ),
    Paper(
        number=2,
        slug="data2vec2",
        # data2vec 2.0 lives inside fairseq, in examples/data2vec.
        title=(
            "Efficient Self-supervised Learning with Contextualized Target Representations for "
            "Vision, Speech and Language"
        ),
        venue="ICML 2023",
        track="self-supervised",
        authors="Alexei Baevski et al.",
        paper_url=_pmlr("baevski23a"),
        code_url=_gh("facebookresearch/fairseq/tree/main/examples/data2vec"),
    ),
    Paper(
        number=3,
        slug="counts",
        title="Self-Interpretable Time Series Prediction with Counterfactual Explanations",
        venue="ICML 2023",
        track="time series",
        authors="Jingquan Yan and Hao Wang",
        paper_url=_pmlr("yan23d"),
        code_url=None,
    ),
    Paper(
        number=4,
        slug="np_semiseg",
        title="NP-SemiSeg: When Neural Processes meet Semi-Supervised Semantic Segmentation",
        venue="ICML 2023",
        track="segmentation",
        authors="Jianfeng Wang et al.",
        paper_url=_arxiv("2308.02866"),
        code_url=_gh("Jianf-Wang/NP-SemiSeg"),
    ),
    Paper(
        number=5,
        slug="tcrl",
        title="Simplified Temporal Consistency Reinforcement Learning",
        venue="ICML 2023",
        track="RL",
        authors="Yi Zhao et al.",
        paper_url=_arxiv("2306.09466"),
        code_url=_gh("zhaoyi11/tcrl"),
    ),
    Paper(
        number=6,
        slug="mimetic_init",
        title="Mimetic Initialization of Self-Attention Layers",
        venue="ICML 2023",
        track="transformers",
        authors="Asher Trockman and J. Zico Kolter",
        paper_url=_pmlr("trockman23a"),
        code_url=None,
    ),
    Paper(
        number=7,
        slug="unimodal_features",
        title="On Uni-Modal Feature Learning in Supervised Multi-Modal Learning",
        venue="ICML 2023",
        track="multimodal",
        authors="Chenzhuang Du et al.",
        paper_url=_pmlr("du23e"),
        code_url=None,
    ),
    Paper(
        number=8,
        slug="noisy_labels_causal",
        title=(
            "Which is Better for Learning with Noisy Labels: The Semi-supervised Method or "
            "Modeling Label Noise?"
        ),
        venue="ICML 2023",
        track="robustness",
        authors="Yu Yao et al.",
        paper_url=_pmlr("yao23a"),
        code_url=_gh("tmllab/2023_ICML_Which-is-Better-for-Learning-with-Noisy-Labels"),
    ),
    Paper(
        number=9,
        slug="contextual_similarity",
        title=(
            "Supervised Metric Learning to Rank for Retrieval via Contextual Similarity "
            "Optimization"
        ),
        venue="ICML 2023",
        track="representations",
        authors="Christopher Liao et al.",
        paper_url=_arxiv("2210.01908"),
        code_url=_gh("Chris210634/metric-learning-using-contextual-similarity"),
    ),
    Paper(
        number=10,
        slug="hrrformer",
        title="Recasting Self-Attention with Holographic Reduced Representations",
        venue="ICML 2023",
        track="transformers",
        authors="Mohammad Mahmudul Alam et al.",
        paper_url=_pmlr("alam23a"),
        code_url=_gh("FutureComputing4AI/Hrrformer"),
    ),
    Paper(
        number=11,
        slug="instaaug",
        title="Learning Instance-Specific Augmentations by Capturing Local Invariances",
        venue="ICML 2023",
        track="representations",
        authors="Ning Miao et al.",
        paper_url=_pmlr("miao23a"),
        code_url=_gh("NingMiao/InstaAug"),
    ),
    Paper(
        number=12,
        slug="som_cpc",
        title=(
            "SOM-CPC: Unsupervised Contrastive Learning with Self-Organizing Maps for Structured "
            "Representations of High-Rate Time Series"
        ),
        venue="ICML 2023",
        track="time series",
        authors="Iris A.M. Huijben et al.",
        paper_url=_pmlr("huijben23a"),
        code_url=_gh("IamHuijben/SOM-CPC"),
    ),
    Paper(
        number=13,
        slug="amortized_dsw",
        title=(
            "Self-Attention Amortized Distributional Projection Optimization for Sliced "
            "Wasserstein Point-Cloud Reconstruction"
        ),
        venue="ICML 2023",
        track="geometry",
        authors="Khai Nguyen et al.",
        paper_url=_arxiv("2301.04791"),
        code_url=_gh("hsgser/Self-Amortized-DSW"),
    ),
    Paper(
        number=14,
        slug="random_teachers",
        title="Random Teachers are Good Teachers",
        venue="ICML 2023",
        track="self-supervised",
        authors="Felix Sarnthein et al.",
        paper_url=_pmlr("sarnthein23a"),
        code_url=_gh("safelix/dinopl"),
    ),
    Paper(
        number=15,
        slug="dwsl",
        title="Distance Weighted Supervised Learning for Offline Interaction Data",
        venue="ICML 2023",
        track="RL",
        authors="Joey Hejna et al.",
        paper_url=_pmlr("hejna23a"),
        code_url=_gh("jhejna/dwsl"),
    ),
    Paper(
        number=16,
        slug="sie",
        title="Self-supervised learning of Split Invariant Equivariant representations",
        venue="ICML 2023",
        track="self-supervised",
        authors="Quentin Garrido et al.",
        paper_url=_pmlr("garrido23b"),
        code_url=_gh("facebookresearch/SIE"),
    ),
    Paper(
        number=17,
        slug="leadfl",
        title="LeadFL: Client Self-Defense against Model Poisoning in Federated Learning",
        venue="ICML 2023",
        track="security",
        authors="Chaoyi Zhu et al.",
        paper_url=_pmlr("zhu23j"),
        code_url=_gh("chaoyitud/LeadFL"),
    ),
    Paper(
        number=18,
        slug="gated_prompt_tuning",
        title="Improving Visual Prompt Tuning for Self-supervised Vision Transformers",
        venue="ICML 2023",
        track="transformers",
        authors="Seungryong Yoo et al.",
        paper_url=_pmlr("yoo23a"),
        code_url=_gh("ryongithub/GatedPromptTuning"),
    ),
    Paper(
        number=19,
        slug="task_head_energy",
        title="How to prepare your task head for finetuning",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Yi Ren et al.",
        paper_url=_openreview("gVOXZproe-e"),
        code_url=None,
    ),
    Paper(
        number=20,
        slug="repair",
        # OpenReview lists it under its submission title, "Linear Mode Connectivity of Deep
        # Neural Networks via Permutation Invariance and Renormalization".
        title="REPAIR: REnormalizing Permuted Activations for Interpolation Repair",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Keller Jordan et al.",
        paper_url=_openreview("gU5sJ6ZggcX"),
        code_url=_gh("KellerJordan/REPAIR"),
    ),
    Paper(
        number=21,
        slug="neural_stego_optimizer",
        title="Learning Iterative Neural Optimizers for Image Steganography",
        venue="ICLR 2023",
        track="security",
        authors="Xiangyu Chen et al.",
        paper_url=_openreview("gLPkzWjdhBN"),
        code_url=_gh("cxy1997/LISO"),
    ),
    Paper(
        number=22,
        slug="e_crf",
        title=(
            "E-CRF: Embedded Conditional Random Field for Boundary-caused Class Weights "
            "Confusion in Semantic Segmentation"
        ),
        venue="ICLR 2023",
        track="segmentation",
        authors="Jie Zhu et al.",
        paper_url=_openreview("g1GnnCI1OrC"),
        code_url=None,
    ),
    Paper(
        number=23,
        slug="neural_constraint_satisfaction",
        title=(
            "Neural Constraint Satisfaction: Hierarchical Abstraction for Combinatorial "
            "Generalization in Object Rearrangement"
        ),
        venue="ICLR 2023",
        track="RL",
        authors="Michael Chang et al.",
        paper_url=_openreview("fGG6vHp3W9W"),
        code_url=None,
    ),
    Paper(
        number=24,
        slug="temperature_schedules",
        title="Temperature Schedules for Self-Supervised Contrastive Methods on Long-Tail Data",
        venue="ICLR 2023",
        track="self-supervised",
        authors="Anna Kukleva et al.",
        paper_url=_openreview("ejHUr4nfHhD"),
        code_url=_gh("Annusha/temperature_schedules"),
    ),
    Paper(
        number=25,
        slug="cocoa",
        title="Contrastive Corpus Attribution for Explaining Representations",
        venue="ICLR 2023",
        track="representations",
        authors="Chris Lin et al.",
        paper_url=_openreview("eWKfMBL5to"),
        code_url=_gh("suinleelab/cl-explainability"),
    ),
    Paper(
        number=26,
        slug="sfat",
        title="Combating Exacerbated Heterogeneity for Robust Models in Federated Learning",
        venue="ICLR 2023",
        track="security",
        authors="Jianing Zhu et al.",
        paper_url=_openreview("eKllxpLOOm"),
        code_url=_gh("ZFancy/SFAT"),
    ),
    Paper(
        number=27,
        slug="iac",
        title="In-sample Actor Critic for Offline Reinforcement Learning",
        venue="ICLR 2023",
        track="RL",
        authors="Hongchang Zhang et al.",
        paper_url=_openreview("dfDv0WU853R"),
        code_url=None,
    ),
    Paper(
        number=28,
        slug="prequential_mdl",
        title="Sequential Learning of Neural Networks for Prequential MDL",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Jorg Bornschein et al.",
        paper_url=_openreview("dMMPUvNSYJr"),
        code_url=None,
    ),
    Paper(
        number=29,
        slug="group_sparsity",
        title="Implicit Regularization for Group Sparsity",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Jiangyuan Li et al.",
        paper_url=_openreview("d7Q0vVfJ0wO"),
        code_url=None,
    ),
    Paper(
        number=30,
        slug="ligo",
        title="Learning to Grow Pretrained Models for Efficient Transformer Training",
        venue="ICLR 2023",
        track="transformers",
        authors="Peihao Wang et al.",
        paper_url=_openreview("cDYRS5iZ16f"),
        code_url=_gh("VITA-Group/LiGO"),
    ),
    Paper(
        number=31,
        slug="soft_threshold_pruning",
        title="A Unified Framework for Soft Threshold Pruning",
        venue="ICLR 2023",
        track="efficiency",
        authors="Yanqi Chen et al.",
        paper_url=_openreview("cCFqcrq0d8"),
        code_url=_gh("Yanqi-Chen/LATS"),
    ),
    Paper(
        number=32,
        slug="ama_prompting",
        title="Ask Me Anything: A simple strategy for prompting language models",
        venue="ICLR 2023",
        track="language",
        authors="Simran Arora et al.",
        paper_url=_openreview("bhUPJnS2g0X"),
        code_url=_gh("HazyResearch/ama_prompting"),
    ),
    Paper(
        number=33,
        slug="stochastic_representations",
        title="Decoupled Training for Long-Tailed Classification With Stochastic Representations",
        venue="ICLR 2023",
        track="robustness",
        authors="Giung Nam et al.",
        paper_url=_openreview("bcYZwYo-0t"),
        code_url=None,
    ),
    Paper(
        number=34,
        slug="information_plane",
        title="Information Plane Analysis for Dropout Neural Networks",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Linara Adilova et al.",
        paper_url=_openreview("bQB6qozaBw"),
        code_url=_gh("link-er/IP_dropout"),
    ),
    Paper(
        number=35,
        slug="graphmixer",
        title="Do We Really Need Complicated Model Architectures For Temporal Networks?",
        venue="ICLR 2023",
        track="graphs",
        authors="Weilin Cong et al.",
        paper_url=_openreview("ayPPc0SyLv1"),
        code_url=_gh("CongWeilin/GraphMixer"),
    ),
    Paper(
        number=36,
        slug="w1_boosting",
        title="A Higher Precision Algorithm for Computing the 1-Wasserstein Distance",
        venue="ICLR 2023",
        track="geometry",
        authors="Pankaj K. Agarwal et al.",
        paper_url=_openreview("aMXD8gqsIiC"),
        code_url=None,
    ),
    Paper(
        number=37,
        slug="cider",
        title="How to Exploit Hyperspherical Embeddings for Out-of-Distribution Detection?",
        venue="ICLR 2023",
        track="robustness",
        authors="Yifei Ming et al.",
        paper_url=_openreview("aEFaE0W5pAd"),
        code_url=_gh("deeplearning-wisc/cider"),
    ),
    Paper(
        number=38,
        slug="mega",
        title="Mega: Moving Average Equipped Gated Attention",
        venue="ICLR 2023",
        track="transformers",
        authors="Xuezhe Ma et al.",
        paper_url=_openreview("qNLe3iq2El"),
        code_url=_gh("facebookresearch/mega"),
    ),
    Paper(
        number=39,
        slug="olfactory_gnn",
        # The code the authors released with the submission (anonymous review account).
        title="Matching receptor to odorant with protein language and graph neural networks",
        venue="ICLR 2023",
        track="graphs",
        authors="Matej Hladiš et al.",
        paper_url=_openreview("q9VherQJd8_"),
        code_url=_gh("AnonymousICLR2023/3007_matching_receptor_to_odorant"),
    ),
    Paper(
        number=40,
        slug="optimal_commitment",
        title="When to Make and Break Commitments?",
        venue="ICLR 2023",
        track="decision making",
        authors="Alihan Hüyük et al.",
        paper_url=_openreview("q8vgHfPdoQP"),
        code_url=_gh("alihanhyk/optcommit"),
    ),
    Paper(
        number=41,
        slug="byz_vr_marina",
        title=(
            "Variance Reduction is an Antidote to Byzantines: Better Rates, Weaker Assumptions "
            "and Communication Compression as a Cherry on the Top"
        ),
        venue="ICLR 2023",
        track="security",
        authors="Eduard Gorbunov et al.",
        paper_url=_openreview("pfuqQQCB34"),
        code_url=None,
    ),
    Paper(
        number=42,
        slug="fullbatch_gd_generalization",
        title="Beyond Lipschitz: Sharp Generalization and Excess Risk Bounds for Full-Batch GD",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Konstantinos E. Nikolakakis et al.",
        paper_url=_openreview("pOyi9KqE56b"),
        code_url=None,
    ),
    Paper(
        number=43,
        slug="predict_and_search",
        title="A GNN-Guided Predict-and-Search Framework for Mixed-Integer Linear Programming",
        venue="ICLR 2023",
        track="graphs",
        authors="Qingyu Han et al.",
        paper_url=_openreview("pHMpgT5xWaE"),
        code_url=_gh("sribdcn/Predict-and-Search_MILP_method"),
    ),
    Paper(
        number=44,
        slug="nas_robustness",
        title="Neural Architecture Design and Robustness: A Dataset",
        venue="ICLR 2023",
        track="efficiency",
        authors="Steffen Jung et al.",
        paper_url=_openreview("p8coElqiSDw"),
        code_url=None,
    ),
    Paper(
        number=45,
        slug="selective_prediction",
        title=(
            "What Can We Learn From The Selective Prediction And Uncertainty Estimation "
            "Performance Of 523 Imagenet Classifiers?"
        ),
        venue="ICLR 2023",
        track="evaluation",
        authors="Ido Galil et al.",
        paper_url=_openreview("p66AzKi6Xim"),
        code_url=_gh("IdoGalil/benchmarking-uncertainty-estimation-performance"),
    ),
    Paper(
        number=46,
        slug="kwikbucks",
        title="KwikBucks: Correlation Clustering with Cheap-Weak and Expensive-Strong Signals",
        venue="ICLR 2023",
        track="graphs",
        authors="Sandeep Silwal et al.",
        paper_url=_openreview("p0JSSa1AuV"),
        code_url=_gh("google-research/google-research/tree/master/kwikbucks"),
    ),
    Paper(
        number=47,
        slug="lambda_darts",
        title=(
            "Λ-DARTS: Mitigating Performance Collapse by Harmonizing Operation Selection among "
            "Cells"
        ),
        venue="ICLR 2023",
        track="efficiency",
        authors="Sajad Movahedi et al.",
        paper_url=_openreview("oztkQizr3kk"),
        code_url=_gh("dr-faustus/Lambda-DARTS"),
    ),
    Paper(
        number=48,
        slug="multivariate_diffusion",
        title=(
            "Where to Diffuse, How to Diffuse, and How to Get Back: Automated Learning for "
            "Multivariate Diffusions"
        ),
        venue="ICLR 2023",
        track="generative",
        authors="Raghav Singhal et al.",
        paper_url=_openreview("osei3IzUia"),
        code_url="https://github.com/rajesh-lab/MultivariateDiffusionModels",
    ),
    Paper(
        number=49,
        slug="ebm_backprop",
        title="Backpropagation at the Infinitesimal Inference Limit of Energy-Based Models",
        venue="ICLR 2023",
        track="training dynamics",
        authors="Beren Millidge et al.",
        paper_url=_openreview("nIMifqu2EO"),
        code_url=None,
    ),
    Paper(
        number=50,
        slug="tsimcne",
        title="Unsupervised visualization of image datasets using contrastive learning",
        venue="ICLR 2023",
        track="self-supervised",
        authors="Jan Niklas Böhm et al.",
        paper_url=_openreview("nI2HmVA0hvt"),
        code_url=_gh("berenslab/t-simcne"),
    ),
    Paper(
        number=51,
        slug="multiple_shooting",
        title="Latent Neural ODEs with Sparse Bayesian Multiple Shooting",
        venue="ICLR 2023",
        track="time series",
        authors="Valerii Iakovlev et al.",
        paper_url=_openreview("moIlFZfj_1b"),
        code_url=_gh("yakovlev31/msvi"),
    ),
    Paper(
        number=52,
        slug="incompatibility_clustering",
        title="Incompatibility Clustering as a Defense Against Backdoor Poisoning Attacks",
        venue="ICLR 2023",
        track="security",
        authors="Charles Jin et al.",
        paper_url=_openreview("mkJm5Uy4HrQ"),
        code_url=_gh("charlesjin/compatibility_clustering"),
    ),
    Paper(
        number=53,
        slug="dfpc",
        title="DFPC: Data Flow Driven Pruning of Coupled Channels Without Data",
        venue="ICLR 2023",
        track="efficiency",
        authors="Tanay Narshana et al.",
        paper_url=_openreview("mhnHqRqcjYU"),
        code_url=_gh("TanayNarshana/DFPC-Pruning"),
    ),
    Paper(
        number=54,
        slug="inferential_reproducibility",
        title="Towards Inferential Reproducibility of Machine Learning Research",
        venue="ICLR 2023",
        track="evaluation",
        authors="Michael Hagmann et al.",
        paper_url=_openreview("li4GQCQWkv"),
        code_url=_gh("StatNLP/empirical_methods"),
    ),
    Paper(
        number=55,
        slug="doge",
        title="When Data Geometry Meets Deep Function: Generalizing Offline Reinforcement Learning",
        venue="ICLR 2023",
        track="RL",
        authors="Jianxiong Li et al.",
        paper_url=_openreview("lMO7TC7cuuh"),
        code_url=_gh("Facebear-ljx/DOGE"),
    ),
    Paper(
        number=56,
        slug="unimax",
        title=(
            "UniMax: Fairer and More Effective Language Sampling for Large-Scale Multilingual "
            "Pretraining"
        ),
        venue="ICLR 2023",
        track="language",
        authors="Hyung Won Chung et al.",
        paper_url=_openreview("kXwdL1cWOAi"),
        code_url=None,
    ),
)


def _index(entries: tuple[Paper, ...]) -> dict[str, Paper]:
    papers = {p.slug: p for p in sorted(entries, key=lambda p: p.number)}
    if len(papers) != len(entries) or len({p.number for p in entries}) != len(entries):
        raise RuntimeError("registry: duplicate slug or number")
    return papers


#: All papers by slug, ordered by catalog number.
PAPERS: dict[str, Paper] = _index(_ENTRIES)


def get(slug: str) -> Paper:
    """Return the paper with this slug; an unknown slug raises :class:`CompanionError`.

    The message lists the valid slugs and, when one is close, suggests it.
    """
    try:
        return PAPERS[slug]
    except (KeyError, TypeError):
        pass
    err = unknown("paper", slug, list(PAPERS))
    close = difflib.get_close_matches(str(slug), list(PAPERS), n=1, cutoff=0.6)
    if close:
        err = CompanionError(f"{err}; did you mean {close[0]!r}?")
    raise err


def available() -> list[Paper]:
    """The papers whose notebook and package both exist, in catalog order."""
    return [p for p in PAPERS.values() if p.status == "available"]


def load_paper(slug: str):
    """The paper package ``companion.papers.<slug>``; refuses unknown or planned papers.

    It lives here, beside the list of papers, so that ``core`` can load a paper without
    importing the command line above it."""
    paper = get(slug)
    if paper.status != "available":
        ready = [p.slug for p in available()]
        raise CompanionError(
            f"paper {slug!r} has no implementation yet (planned); available: {', '.join(ready)}"
        )
    return importlib.import_module(f"companion.papers.{slug}")
