"""The course: the notebooks as 10 modules in a suggested order, and what each track teaches.

This is a plain data module beside :mod:`companion.registry`. A :class:`Module` has one
*foundation* notebook (the one to teach first, which the others build on), two to four
*applications* and, where one fits, a *case study*: a notebook whose claims files show a claim
that does not reproduce at notebook scale, for a research-methods discussion. The order of
:data:`MODULES`, and inside a module foundation, applications, case study, is the suggested order
(:func:`order`). :mod:`companion.tools.course` renders it (the README's course section, the site's
landing page, a page per module, the prerequisite graph) and :func:`problems` checks it.

Only notebooks that exist are placed: a planned paper joins a module when its notebook is
written (the course test fails until it is placed, so none is forgotten); until then it is listed
on its track's page as planned.

    >>> from companion import course
    >>> course.order()[0]
    'sigma_reparam'
"""

from __future__ import annotations

from dataclasses import dataclass

from companion import registry


@dataclass(frozen=True)
class Module:
    """One module of the course: its notebooks by role, and what a student learns in it."""

    key: str  # the page name: ``module-<key>``
    title: str
    summary: str  # what the module is about and why it comes where it does (one paragraph)
    outcomes: tuple[str, ...]  # learning outcomes: "After this module you can ..."
    foundation: str
    applications: tuple[str, ...]
    case_study: str | None = None

    @property
    def slugs(self) -> tuple[str, ...]:
        """The module's notebooks in the suggested order: foundation, applications, case."""
        return (
            self.foundation,
            *self.applications,
            *((self.case_study,) if self.case_study else ()),
        )

    def role(self, slug: str) -> str:
        """``foundation``, ``application`` or ``case study``."""
        if slug == self.foundation:
            return "foundation"
        if slug == self.case_study:
            return "case study"
        if slug in self.applications:
            return "application"
        raise KeyError(f"{slug} is not in module {self.key}")


MODULES: tuple[Module, ...] = (
    Module(
        key="transformers",
        title="Attention and how transformers train",
        summary=(
            "Lesson 0. σReparam is the companion's exemplar: it shows how every notebook trains a"
            " model, measures a diagnostic (the entropy of attention) and checks the paper's"
            " claim at several seeds. The other notebooks of the module change one part of the"
            " same small Vision Transformer: its initialization, its size during training, and"
            " the attention itself, which two papers make cheaper for long sequences. GraphMixer"
            " asks whether attention is needed at all: an MLP-mixer over a node's recent links"
            " with a fixed time encoding, against attention and a recurrent network."
        ),
        outcomes=(
            "measure attention entropy and relate its collapse to the spectral norm of the"
            " attention logits",
            "initialize, grow and re-parametrize a Vision Transformer's layers, and compare"
            " training runs at equal steps or equal compute",
            "explain how a moving average (Mega) or holographic binding (Hrrformer) replaces"
            " quadratic attention, and measure time and memory against sequence length",
            "predict links in a temporal graph with an MLP-mixer and a fixed time encoding, and"
            " compare it with attention and a GRU at equal budget",
            "separate a paper's claims that hold (speed) from one that does not (accuracy at"
            " equal steps), with a control that removes only the mechanism",
        ),
        foundation="sigma_reparam",
        applications=("mimetic_init", "ligo", "mega", "graphmixer"),
        case_study="hrrformer",
    ),
    Module(
        key="evidence",
        title="Evidence: when does a claim hold?",
        summary=(
            "Inferential reproducibility is the notebook most others point to: it turns"
            " 'method A beats method B' into a statistical test over the sources of noise"
            " (seeds, data, machines). The applications are small, self-contained papers whose"
            " claims hold at nearly every seed, so the tests can be practised on clear effects; the"
            " case study is a claim about preventing a collapse that does not survive the same"
            " tests."
        ),
        outcomes=(
            "write evaluation scores as a linear mixed-effects model and test a comparison"
            " with a likelihood-ratio test",
            "read a claims table over seeds 0-4 and held-out seeds 5-9, and say whether an"
            " effect is robust",
            "compute a sampling allocation (UniMax), a transport distance to relative precision"
            " by boosting an additive approximation over scales, a rule for breaking a"
            " commitment in an adaptive trial (Bayes-OCP) and a clustering that spends a budget"
            " of expensive queries where a cheap signal points (KwikBucks), each against a"
            " baseline at equal budget",
            "argue from the measurements why a claim (Λ-DARTS) does not reproduce at this scale",
        ),
        foundation="inferential_reproducibility",
        applications=("unimax", "w1_boosting", "optimal_commitment", "kwikbucks"),
        case_study="lambda_darts",
    ),
    Module(
        key="offline-rl",
        title="Acting from logged data: offline RL, latent models and abstractions",
        summary=(
            "Reinforcement learning from a fixed dataset, where a critic may only be trusted"
            " near the data. DWSL learns a distance from logged episodes by supervised learning;"
            " IAC evaluates a policy in-sample, checked against exact values on a finite MDP;"
            " DOGE lets the policy leave the data's support but not its geometry; TCRL learns a"
            " latent model for planning from temporal consistency alone; neural constraint"
            " satisfaction plans over entities found in pixels and generalizes to more objects."
            " The case study trusts a prediction only near itself too: a graph network learned"
            " from solved integer programs proposes an assignment and a solver searches a trust"
            " region around it (Predict-and-Search); its gain over the plain solver does not"
            " reproduce at this scale."
        ),
        outcomes=(
            "store offline data with its provenance (D4RL layout) and judge every value estimate"
            " against exact values or Monte Carlo returns",
            "explain extrapolation error and remove it by in-sample evaluation (resampling the"
            " dataset's actions)",
            "compare a geometry constraint with a support constraint on a task whose best action"
            " lies inside the data's hull but off the data",
            "train a latent model without reconstruction and plan with it, against the true"
            " simulator and a reconstruction model",
            "plan over a factorized abstraction and test generalization to unseen object counts",
            "learn from solver-labelled instances, search a trust region around the prediction"
            " with a MILP solver at an equal node budget, and argue from premise rows and"
            " controls why a gain over the plain solver does not appear",
        ),
        foundation="dwsl",
        applications=("iac", "doge", "tcrl", "neural_constraint_satisfaction"),
        case_study="predict_and_search",
    ),
    Module(
        key="training",
        title="Inside trained networks: connectivity, pruning and class geometry",
        summary=(
            "What does a trained network look like from the inside? REPAIR aligns two networks"
            " and repairs the statistics of their interpolation; DFPC prunes coupled channels"
            " without data; E-CRF shows how shared boundaries make a segmenter's class weights"
            " alike; on long-tailed data, averaging the weights along one SGD run (SWA) and"
            " sampling around the average (SWAG) give a representation on which a re-trained"
            " classifier serves the rare classes. The case study is a unified pruning schedule"
            " whose advantage does not reproduce."
        ),
        outcomes=(
            "align the hidden units of two networks with a linear assignment and measure the"
            " loss barrier between them",
            "relate a pruning threshold's schedule to an explicit sparsity penalty, and prune"
            " the channels that a residual network couples without data",
            "compare pruning methods fairly: equal sparsity or accuracy drop, and controls that"
            " separate how many weights go from which",
            "measure how similar a classifier's class weights become for classes that touch,"
            " and what message passing in the features changes",
            "average and sample weights along an SGD run (SWA, SWAG), re-train a classifier on"
            " the sampled features, and read few-shot accuracy and calibration",
        ),
        foundation="repair",
        applications=("dfpc", "e_crf", "stochastic_representations"),
        case_study="soft_threshold_pruning",
    ),
    Module(
        key="contrastive",
        title="Learning representations, and moving them by fine-tuning",
        summary=(
            "Contrastive learning (two augmented views, the InfoNCE loss) and self-distillation"
            " (a student matching a teacher, even a random one), judged by kNN and linear"
            " probes; how to explain what such an embedding has learned; and how far a"
            " pretrained representation moves when it is fine-tuned, set by the energy its task"
            " head leaves; and what joint training on two modalities fails to learn from each"
            " alone, which uni-modal teachers or an ensemble give back. The case study is a"
            " temperature schedule for long-tailed data whose gain does not reproduce."
        ),
        outcomes=(
            "train a SimCLR-style encoder and read it through a 2-D map and kNN accuracy",
            "explain why a student learns from a random teacher, and measure a representation"
            " with probes",
            "attribute an embedding's similarity to a corpus back to input pixels, and score"
            " the attribution",
            "predict how much a fine-tuned backbone's features change from the head's energy,"
            " and test it with a control that changes only the energy",
            "measure with per-modality probes what late fusion under-learns, and choose between"
            " a uni-modal ensemble and uni-modal distillation from validation numbers only",
            "judge a small effect honestly: a baseline fixed in advance, paired runs, a"
            " confidence interval",
        ),
        foundation="tsimcne",
        applications=("random_teachers", "cocoa", "task_head_energy", "unimodal_features"),
        case_study="temperature_schedules",
    ),
    Module(
        key="invariance",
        title="Invariance, masked prediction and prompts",
        summary=(
            "Which transformations should a representation ignore, and which should it keep?"
            " SIE splits a representation into an invariant and an equivariant part; data2vec"
            " 2.0 predicts a teacher's contextual targets for masked images; gated prompts adapt"
            " a self-supervised ViT; SOM-CPC organises a time series on a map; a self-attention"
            " network that ignores the order of points predicts where to slice two point clouds"
            " for a sliced Wasserstein loss. The case study learns the augmentations themselves,"
            " and its claim does not reproduce."
        ),
        outcomes=(
            "measure the equivariance of a representation (R² of a transformation, ranks of"
            " predicted views)",
            "build contextualized targets and masks for masked prediction, and compare encoders"
            " at equal training compute",
            "insert prompts into a frozen ViT and check a method's premises before its claim",
            "compute sliced, max-sliced and distributional sliced Wasserstein distances, and"
            " check numerically that an amortized slicing map is permutation invariant and"
            " symmetric",
            "learn an augmentation distribution with the reparameterization trick, and test it"
            " against the ideal invariance",
        ),
        foundation="sie",
        applications=("data2vec2", "gated_prompt_tuning", "som_cpc", "amortized_dsw"),
        case_study="instaaug",
    ),
    Module(
        key="robustness",
        title="Noisy labels, retrieval and out-of-distribution data",
        summary=(
            "Learning when the data is not what it seems: labels that are wrong, neighbours"
            " that must be ranked although some labels are noisy, confidence that must rank a"
            " model's own errors (also per pixel, to filter a segmenter's pseudo-labels), votes"
            " of several imperfect prompts to a small language model, aggregated by a label model"
            " that learns each prompt's confusion matrix, and inputs from another distribution."
            " The case study is an"
            " out-of-distribution detector whose geometry claims do not reproduce."
        ),
        outcomes=(
            "model label noise with a transition matrix and tell when the data's causal"
            " direction decides which method works",
            "measure retrieval (Recall@K, MAP@R) and train through a non-differentiable"
            " neighbourhood with a straight-through gradient",
            "evaluate selective prediction and out-of-distribution detection (AUROC, FPR95,"
            " risk-coverage) and what temperature scaling changes",
            "aggregate the votes of imperfect prompts with a Dawid-Skene label model fitted by"
            " EM without labels, and tell its gain from per-prompt confusion matrices from a"
            " gain that a shared matrix (a learned majority vote) also gives",
            "test why an effect appears with a control that removes only its supposed cause",
        ),
        foundation="noisy_labels_causal",
        applications=(
            "contextual_similarity",
            "selective_prediction",
            "np_semiseg",
            "ama_prompting",
        ),
        case_study="cider",
    ),
    Module(
        key="learning",
        title="How networks learn: information, implicit bias, description length, local rules",
        summary=(
            "What a network learns, and how, beyond its training loss. The information plane"
            " measures what a layer keeps of its input; a reparametrization makes plain gradient"
            " descent prefer sparse groups of weights without any penalty; the prequential"
            " description length scores a learner by how well it predicts each example before"
            " training on it, which turns generalization into compression; and energy-based"
            " learning (predictive coding, equilibrium propagation, contrastive Hebbian learning)"
            " computes backprop's gradient when its output is only nudged; and a bound computed"
            " along gradient descent's own path predicts how its generalization gap scales with"
            " the number of examples and of steps. The case study asks where a condition should"
            " enter a network: a graph network of molecules that receives a receptor's embedding"
            " at its input does not learn a relational rule better than one that receives it at"
            " the end, at this scale."
        ),
        outcomes=(
            "estimate mutual information in a dropout network and say when an estimate is"
            " meaningful",
            "relate a reparametrization to the explicit penalty it implies, and watch its"
            " implicit bias in the trajectory of gradient descent",
            "compute a prequential code length in bits, and compare online learning with replay"
            " against block-wise estimation at equal compute",
            "calibrate forward, on data already encoded only, and tell it from a calibration"
            " that peeks",
            "derive a local learning rule from an energy, and measure a limit on a log-log plot"
            " against an independent gradient, above the precision floor",
            "compute a stability-based generalization bound along an actual trajectory, check"
            " that it holds and say how loose it is",
            "test an architectural inductive bias with a task that needs it (a descriptor-only"
            " control must fail) and explain a claim that does not reproduce",
        ),
        foundation="information_plane",
        applications=(
            "group_sparsity",
            "prequential_mdl",
            "ebm_backprop",
            "fullbatch_gd_generalization",
        ),
        case_study="olfactory_gnn",
    ),
    Module(
        key="dynamics",
        title="Time series and dynamics: latent variables, counterfactuals and diffusions",
        summary=(
            "Models with latent variables over time, each trained by maximizing an evidence"
            " lower bound (ELBO). CounTS explains a time-series prediction by a counterfactual"
            " computed in three steps (abduction, action, prediction) on a simulator whose"
            " ground truth is known; sparse multiple shooting trains a latent neural ODE on long"
            " trajectories by cutting them into blocks joined by a continuity prior; learned"
            " multivariate diffusions add auxiliary variables to a diffusion and learn its"
            " parameters through the same kind of bound."
        ),
        outcomes=(
            "write the ELBO of a latent-variable model over time and train it with the"
            " reparameterization trick",
            "compute a counterfactual by abduction, action and prediction, and judge it against"
            " the simulator's ground truth rather than the model",
            "integrate a neural ODE with torchdiffeq and explain why single shooting fails on"
            " long trajectories and what multiple shooting changes",
            "derive the transition kernel of a linear SDE and compare diffusions by their bound"
            " in bits per dimension",
        ),
        foundation="counts",
        applications=("multiple_shooting", "multivariate_diffusion"),
    ),
    Module(
        key="attacks",
        title="Attacks and defences: poisons, Byzantine clients, federated training",
        summary=(
            "An adversary in the training loop: Byzantine workers in distributed optimization,"
            " backdoor poisons in a training set and in federated rounds, and adversarial"
            " examples on heterogeneous clients. The three federated notebooks share one"
            " simulation of rounds. Steganography hides a message in an image that a receiver"
            " must read back after the image is saved, with an optimizer learned by unrolling."
            " A zoo of small architectures from one cell space, attacked with FGSM and PGD,"
            " shows how far robustness varies at equal size. The case study is a federated"
            " adversarial-training method whose gain does not reproduce."
        ),
        outcomes=(
            "simulate federated rounds with Byzantine or backdoor clients, and aggregate"
            " robustly (median, bucketing)",
            "measure a backdoor defence: attack success, clean accuracy, poisons removed",
            "explain variance reduction against Byzantine workers and count the bits sent with"
            " compression",
            "hide a message in an image with a learned iterative optimizer (LISO) and count its"
            " bit errors after 8-bit rounding against hand-designed optimizers at equal quality",
            "attack a zoo of architectures with FGSM and PGD, and test whether a cheap proxy"
            " ranks their robustness better than parameter count",
            "find which part of a defence does the work with step-matched and clean-floor controls",
        ),
        foundation="byz_vr_marina",
        applications=(
            "incompatibility_clustering",
            "leadfl",
            "neural_stego_optimizer",
            "nas_robustness",
        ),
        case_study="sfat",
    ),
)

#: What each track teaches, for its page on the site; the order of its notebooks is the
#: course's order (:func:`track_order`). Tracks with no notebook yet need no introduction.
TRACK_INTROS: dict[str, str] = {
    "transformers": (
        "How attention works and how transformers are trained: the entropy of attention and"
        " its collapse, initializing attention like a trained one, growing a small pretrained"
        " model into a large one, attention that is linear in the sequence length, and prompts"
        " for a frozen Vision Transformer."
    ),
    "self-supervised": (
        "Learning representations without labels: contrastive losses and their temperature,"
        " self-distillation from a random teacher, equivariant representations, and masked"
        " prediction of contextual targets, each judged by probes on the frozen encoder."
    ),
    "representations": (
        "What an embedding captures and how to shape it with supervision: ranking neighbours"
        " for retrieval under label noise, explaining an embedding's similarities by"
        " attribution, and learning which invariances a classifier's augmentations should have."
    ),
    "robustness": (
        "Learning from data that is not what it seems: noisy labels, whose best treatment"
        " depends on the causal direction of the data, and inputs from another distribution,"
        " detected on a hypersphere of embeddings."
    ),
    "evaluation": (
        "How to tell whether a result holds: statistical tests over the sources of noise in"
        " training runs, and what a benchmark of many classifiers can say about ranking their"
        " own errors. Start here for the research-methods thread of the course."
    ),
    "security": (
        "An adversary in the training loop or the data: Byzantine workers in distributed"
        " optimization, backdoor poisons in a training set and in federated rounds (both"
        " backdoor defences are here), adversarial examples on heterogeneous clients, and hiding"
        " a message in an image."
    ),
    "training dynamics": (
        "What training does to a network: the loss barrier between two trained networks and how"
        " to repair it, what a layer's representation keeps of its input, sparsity that"
        " appears from a reparametrization alone, the prequential description length of a"
        " learner trained online with replay, and energy-based learning rules that become"
        " backprop at the infinitesimal inference limit."
    ),
    "efficiency": (
        "Making networks smaller and searching architectures: pruning schedules read as sparse"
        " regularization, pruning coupled channels without data, and differentiable"
        " architecture search and its collapse."
    ),
    "geometry": (
        "Distances between distributions of points: the 1-Wasserstein distance computed to"
        " relative rather than additive precision, and sliced Wasserstein distances whose"
        " projections a permutation-invariant network predicts."
    ),
    "graphs": (
        "Problems on graphs of items: a correlation clustering that spends a budget of"
        " expensive pairwise queries where a cheap, weak similarity points, link prediction"
        " in a graph whose edges arrive over time, a graph network on the variables and"
        " constraints of an integer program that guides a solver, and a graph network of"
        " molecules conditioned on a receptor."
    ),
    "multimodal": (
        "Learning from two modalities at once: what joint training learns from each, and how"
        " uni-modal teachers or an ensemble recover what it misses."
    ),
    "time series": (
        "Models of signals over time: contrastive predictive coding organised on a"
        " self-organizing map, counterfactual explanations of a prediction from a variational"
        " model with a known causal structure, and latent neural ODEs trained on long"
        " trajectories by multiple shooting."
    ),
    "generative": (
        "Generative models trained by a likelihood bound: diffusions with auxiliary variables,"
        " whose parameters are learned with the score model."
    ),
    "segmentation": (
        "Labelling every pixel: a neural-process head whose uncertainty filters pseudo-labels"
        " for semi-supervised segmentation, and a CRF embedded in the features against the"
        " confusion of classes that share boundaries."
    ),
    "RL": (
        "Learning to act from logged data: a goal-conditioned distance learned by supervised"
        " learning, in-sample policy evaluation against exact values, a policy constraint from"
        " the data's geometry, a latent model trained by temporal consistency for planning, and"
        " planning over entities inferred from pixels."
    ),
    "decision making": (
        "When to make and break commitments: an adaptive clinical trial as optimal stopping and"
        " switching, solved by a Bayesian rule over posterior samples and compared with the"
        " standard trial designs."
    ),
    "language": (
        "Training on many languages: how a sampling distribution over languages turns into"
        " epochs per language, and when repeating small languages over-fits; and prompting a"
        " small language model several imperfect ways and aggregating its answers with a"
        " label model."
    ),
}


def order(modules: tuple[Module, ...] = MODULES) -> list[str]:
    """Every placed notebook in the suggested order (module by module, foundation first)."""
    return [slug for m in modules for slug in m.slugs]


def module_of(slug: str, modules: tuple[Module, ...] = MODULES) -> Module:
    """The module that holds ``slug``; ``KeyError`` when it is in none."""
    for m in modules:
        if slug in m.slugs:
            return m
    raise KeyError(f"{slug} is in no module of the course")


def track_order(track: str, modules: tuple[Module, ...] = MODULES) -> list[str]:
    """The track's notebooks in the course's order."""
    return [s for s in order(modules) if registry.get(s).track == track]


def problems(modules: tuple[Module, ...], available: list[str]) -> list[str]:
    """What is wrong with a course, in words (an empty list when nothing is): 5 to 10 modules;
    each with a foundation, two to four applications and at most one case study; every
    available notebook in exactly one module; no planned or unknown paper in a module; unique
    keys; every track of an available notebook introduced in :data:`TRACK_INTROS`."""
    found = []
    if not 5 <= len(modules) <= 10:
        found.append(f"the course has {len(modules)} modules, not 5 to 10")
    if len({m.key for m in modules}) != len(modules):
        found.append("two modules share a key")
    for m in modules:
        if not 2 <= len(m.applications) <= 4:
            found.append(f"module {m.key} has {len(m.applications)} applications, not 2 to 4")
        if not m.outcomes:
            found.append(f"module {m.key} has no learning outcomes")
    placed = order(modules)
    for slug in sorted(set(placed)):
        if placed.count(slug) > 1:
            found.append(f"{slug} is placed {placed.count(slug)} times")
        if slug not in registry.PAPERS:
            found.append(f"{slug} is not a paper of the registry")
        elif slug not in available:
            found.append(f"{slug} has no notebook (planned): it cannot be placed yet")
    found += [f"{s} is in no module: place it" for s in available if s not in placed]
    for track in sorted({registry.get(s).track for s in available if s in registry.PAPERS}):
        if track not in TRACK_INTROS:
            found.append(f"track {track!r} has no introduction in TRACK_INTROS")
    return found
