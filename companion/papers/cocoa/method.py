"""COCOA's objects: the scalar explanation targets, the corpus and foil, attributions through
Captum, and the insertion/deletion evaluation.

An encoder f maps an image x to a representation f(x) ∈ ℝᵈ. An attribution method explains a
*scalar*, so the paper defines one on the representation space:

* corpus similarity        y^C(x)   = 1/|C| Σ_{c∈C} cos(f(x), f(c))
* contrastive corpus sim.  y^{C,F}(x) = y^C(x) − 1/|F| Σ_{o∈F} cos(f(x), f(o))

with C the corpus (the samples whose shared features we want to see, e.g. training images of
one class) and F the foil (samples to contrast against). COCOA is any post-hoc attribution
method applied to y^{C,F}. The explicand-centric target it is compared with (label-free feature
importance / RELAX) is the similarity to the explicand's own representation,
y^x₀(x) = cos(f(x), f(x₀)), with f(x₀) held fixed.

Official code: ``src/cl_explain/explanations/contrastive_corpus_similarity.py`` (the ``mean``
implementation: the dot product of f(x) with the mean of the *normalised* corpus and foil
representations, divided by ‖f(x)‖, equal to the pairwise mean of cosines),
``corpus_similarity.py``, ``weighted_score.py`` (the self-similarity),
``corpus_majority_prob.py``, ``metrics/ablation.py`` (insertion/deletion curves and their AUC)
and ``scripts/attribute.py`` (corpus and foil sampling, blur baseline, Captum calls).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from companion.errors import CompanionError, unknown

# what each attribution explains; "oracle" is a reference, not a competitor: Integrated Gradients
# of the evaluation head's own logit for the corpus-majority class (what the insertion and
# deletion curves measure), i.e. the best an attribution of this kind can be expected to score
TARGETS = ("cocoa", "corpus", "self", "random", "oracle")
KINDS = ("insertion", "deletion")


@torch.no_grad()
def encode(encoder: nn.Module, images: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """f(x) for every image, in eval mode (BatchNorm uses its running statistics) and float32."""
    was_training = encoder.training
    encoder.eval()
    device = next(encoder.parameters()).device
    out = [encoder(x.to(device).float()).float() for x in images.split(batch_size)]
    encoder.train(was_training)
    return torch.cat(out)


def normalized_mean(reps: torch.Tensor) -> torch.Tensor:
    """Mean of the L2-normalised representations [N, d] -> [d] (``_encode_mean(normalize=True)``
    in the official code): 1/N Σ f(c)/‖f(c)‖."""
    return F.normalize(reps, dim=-1).mean(dim=0)


class CorpusSimilarity(nn.Module):
    """y^C(x) = 1/|C| Σ_c cos(f(x), f(c)): the corpus is encoded once, at construction.

    Since cos(a, b) = a·b/(‖a‖‖b‖), the mean over the corpus is f(x)·m_C/‖f(x)‖ with m_C the
    mean of the normalised corpus representations: one dot product per explicand.
    """

    def __init__(self, encoder: nn.Module, corpus: torch.Tensor):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("corpus_mean", normalized_mean(encode(encoder, corpus)))

    def direction(self) -> torch.Tensor:
        """The vector v with y(x) = f(x)·v/‖f(x)‖."""
        return self.corpus_mean

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rep = self.encoder(x)
        return rep @ self.direction() / rep.norm(dim=-1)


class ContrastiveCorpusSimilarity(CorpusSimilarity):
    """y^{C,F}(x) = 1/|C| Σ_c cos(f(x), f(c)) − 1/|F| Σ_o cos(f(x), f(o)), COCOA's target.

    = f(x)·(m_C − m_F)/‖f(x)‖ with m_C, m_F the means of the normalised corpus and foil
    representations (the official ``_rep_mean_forward`` with ``normalize=True``).
    """

    def __init__(self, encoder: nn.Module, corpus: torch.Tensor, foil: torch.Tensor):
        super().__init__(encoder, corpus)
        self.register_buffer("foil_mean", normalized_mean(encode(encoder, foil)))

    def direction(self) -> torch.Tensor:
        return self.corpus_mean - self.foil_mean


class SelfSimilarity(nn.Module):
    """y^x₀(x) = cos(f(x), w) with w = f(x₀) the explicand's own representation, held fixed
    (label-free feature importance with cosine similarity, i.e. RELAX's target; the official
    ``WeightedScore(normalize=True)``).

    ``w`` is an argument of ``forward`` rather than a stored weight, so that Captum expands it
    together with the inputs (``additional_forward_args``): row i of every interpolated batch
    is compared with its own explicand.
    """

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(self.encoder(x), weight, dim=-1)


class ClassLogit(nn.Module):
    """The evaluator's own scalar: the eval head's logit of class ``k`` on f(x) (the oracle
    reference target; COCOA never sees the head)."""

    def __init__(self, encoder: nn.Module, head: nn.Module, k: int):
        super().__init__()
        self.encoder, self.head, self.k = encoder, head, k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))[:, self.k]


def gaussian_kernel_size(sigma: float, image_size: int) -> int:
    """An odd kernel reaching ±2σ, as torchvision's GaussianBlur(21, σ = 5) of the official
    code, and at most 2·image_size − 1 so that reflection padding fits inside the image."""
    radius = min(max(1, round(2 * sigma)), image_size - 1)
    return 2 * radius + 1


def blur_baseline(x: torch.Tensor, sigma: float, kernel_size: int | None = None) -> torch.Tensor:
    """The removal baseline: each image blurred by a Gaussian (σ = ``sigma``, reflection at the
    borders, as torchvision's ``GaussianBlur``). A removed feature takes its blurred value:
    the information is gone but the image stays in the data's range."""
    import kornia.filters

    k = kernel_size or gaussian_kernel_size(sigma, min(x.shape[-2:]))
    return kornia.filters.gaussian_blur2d(x, (k, k), (sigma, sigma), border_type="reflect")


def split_corpus_foil(
    labels: torch.Tensor, target: int, corpus_size: int, foil_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the corpus (``corpus_size`` random training images of class ``target``) and
    of the foil, as ``scripts/attribute.py`` draws them: the foil comes from what is left once
    the corpus is taken out, with the same share of target-class images as before, so it can
    contain target-class images but never a corpus image."""
    target_idx = (labels == target).nonzero().flatten()
    other_idx = (labels != target).nonzero().flatten()
    if corpus_size > len(target_idx):
        raise CompanionError(
            f"corpus_size {corpus_size} exceeds the {len(target_idx)} images of class {target}"
        )
    target_idx = target_idx[torch.randperm(len(target_idx), generator=generator)]
    corpus = target_idx[:corpus_size]
    # keep the non-target share: drop as many non-target images, proportionally, as the corpus
    keep_other = int(len(other_idx) * (1 - corpus_size / len(target_idx)))
    other_idx = other_idx[torch.randperm(len(other_idx), generator=generator)][:keep_other]
    leftover = torch.cat([other_idx, target_idx[corpus_size:]])
    leftover = leftover[torch.randperm(len(leftover), generator=generator)]
    if foil_size > len(leftover):
        raise CompanionError(f"foil_size {foil_size} exceeds the {len(leftover)} images left")
    return corpus, leftover[:foil_size]


def attribute(
    target: str,
    encoder: nn.Module,
    explicands: torch.Tensor,
    baselines: torch.Tensor,
    corpus: torch.Tensor | None = None,
    foil: torch.Tensor | None = None,
    n_steps: int = 16,
    generator: torch.Generator | None = None,
    head: nn.Module | None = None,
    k: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integrated Gradients (Captum) of one explanation target, from the blur ``baselines``.

    ``target``: ``cocoa`` (y^{C,F}), ``corpus`` (y^C), ``self`` (y^x₀, explicand-centric) or
    ``random`` (Gaussian noise, the official ``RandomBaseline``) or ``oracle`` (the eval
    ``head``'s logit of class ``k``: a reference, not a label-free explanation). Returns the
    attributions (shape of ``explicands``) and Captum's convergence delta per explicand:
    Σ attributions − (y(x) − y(baseline)), zero for exact integration (IG's completeness axiom).
    """
    from captum.attr import IntegratedGradients

    if target not in TARGETS:
        raise unknown("explanation target", target, TARGETS)
    if target == "random":
        noise = torch.randn(explicands.shape, generator=generator).to(explicands.device)
        return noise, torch.zeros(len(explicands))
    extra = None
    if target == "cocoa":
        model = ContrastiveCorpusSimilarity(encoder, corpus, foil)
    elif target == "corpus":
        model = CorpusSimilarity(encoder, corpus)
    elif target == "oracle":
        if head is None or k is None:
            raise CompanionError("the oracle target needs the eval head and its class k")
        model = ClassLogit(encoder, head, k)
    else:
        model = SelfSimilarity(encoder)
        extra = (encode(encoder, explicands).detach(),)
    ig = IntegratedGradients(model)
    attr, delta = ig.attribute(
        explicands.float(),
        baselines=baselines.float(),
        additional_forward_args=extra,
        n_steps=n_steps,
        return_convergence_delta=True,
    )
    return attr.detach(), delta.detach().float().cpu()


def rank_correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman rank correlation between two batches of attribution maps [B, C, H, W] (channels
    summed, pixels ranked): 1 = the same pixel order, 0 = unrelated."""

    def ranks(x):
        flat = x.reshape(x.shape[0], x.shape[1], -1).sum(1)
        return flat.argsort(-1).argsort(-1).float()

    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(-1, keepdim=True), rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))


def step_sizes(num_features: int, num_steps: int) -> list[int]:
    """Features added (insertion) or removed (deletion) at each step: [0, s₁, …, s_K], the
    remainder spread over the first steps (``ImageAblation._get_step_sizes``)."""
    size, remainder = divmod(num_features, num_steps)
    return [0] + [size + (i < remainder) for i in range(num_steps)]


def ablation_inputs(
    explicands: torch.Tensor,
    baselines: torch.Tensor,
    attributions: torch.Tensor,
    num_steps: int,
    kind: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The images an insertion or deletion curve evaluates, [B, K+1, C, H, W], and the number
    of features changed at each step [K+1].

    Pixels are ranked by their attribution (summed over channels, largest first). Insertion
    starts from the baseline and puts the top pixels of the explicand back; deletion starts
    from the explicand and replaces the top pixels by the baseline (``ImageAblation.evaluate``).
    """
    if kind not in KINDS:
        raise unknown("ablation kind", kind, KINDS)
    b, c, h, w = explicands.shape
    score = attributions.reshape(b, c, h * w).sum(dim=1)  # combine channels
    rank = torch.empty_like(score, dtype=torch.long)
    order = score.argsort(dim=-1, descending=True, stable=True)
    rank.scatter_(1, order, torch.arange(h * w, device=score.device).expand(b, -1))
    counts = torch.tensor(step_sizes(h * w, num_steps)).cumsum(0).to(score.device)
    top = rank[:, None, :] < counts[None, :, None]  # [B, K+1, HW]: among the first n_k pixels
    keep = top if kind == "insertion" else ~top  # where the explicand's pixel is shown
    mask = keep.view(b, -1, 1, h, w).to(explicands.dtype)
    images = explicands[:, None] * mask + baselines[:, None] * (1 - mask)
    return images, counts.cpu()


def auc(curves: torch.Tensor, num_features: torch.Tensor) -> torch.Tensor:
    """Area under each curve [B, K+1] against the fraction of features changed (trapezoid rule,
    ``compute_auc`` of the official ``metrics/ablation.py``)."""
    x = num_features.to(curves.dtype) / num_features.max()
    return torch.trapezoid(curves, x, dim=-1)


class CorpusMajorityProbability(nn.Module):
    """The evaluation target: the eval head's probability of the corpus-majority class, the
    class the head predicts most often on the corpus (``CorpusMajorityProb``)."""

    def __init__(self, encoder: nn.Module, head: nn.Module, corpus: torch.Tensor):
        super().__init__()
        self.encoder, self.head = encoder, head
        with torch.no_grad():
            pred = head(encode(encoder, corpus)).argmax(dim=-1)
        self.majority = int(pred.mode().values)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x)).softmax(dim=-1)[:, self.majority]


@torch.no_grad()
def ablation_curves(
    score: nn.Module,
    explicands: torch.Tensor,
    baselines: torch.Tensor,
    attributions: torch.Tensor,
    num_steps: int,
    kind: str,
    batch_size: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``score`` (e.g. :class:`CorpusMajorityProbability`) along the insertion or deletion path
    of every explicand: curves [B, K+1] and features changed [K+1]."""
    images, counts = ablation_inputs(explicands, baselines, attributions, num_steps, kind)
    flat = images.flatten(0, 1)
    out = torch.cat([score(x).float() for x in flat.split(batch_size)])
    return out.view(len(explicands), -1).cpu(), counts
