"""LeadFL's client self-defence, a bursty backdoor attacker, and its participation schedule.

LeadFL (Zhu, Roos, Chen, ICML 2023) adds a term to the *benign* clients' local training "such
that the Hessian matrix of local gradients is nullified" (abstract), and leaves the server's
robust aggregation (coordinate median, Multi-Krum, Bulyan) as it is. The paper's equation for
the term was not available to us: what follows is the regularizer **as in the official code**
(``fltk/core/client.py``, ``Client.train``, branch ``defense == "LeadFL"``), step for step:

for every mini-batch i of a local epoch (θ the local weights, η the learning rate)

1. one ordinary SGD step on the cross-entropy of the batch;
2. for i > 0, the regularizer over the weight tensors (names containing ``weight``; biases
   excluded)

   R(θ) = Σ_W ‖W − W_prev − g_prev − η·1‖₂          (an unsquared 2-norm per tensor)

   with W_prev and g_prev the weights and their gradient saved at the end of batch i − 1, and
   the loss α·R backpropagated *without* zeroing the gradients, so the task gradient of step 1
   is applied a second time together with ∇(α·R);
3. every gradient element clipped to [−q, q] (``clip_grad_value_``), then a second optimizer
   step;
4. W and its gradient saved for batch i + 1 (batch 0 of each epoch is never regularized).

The official defaults are α = ``regular_weight`` = 0.4 and q = ``pert_strength`` = 0.2, with
learning rate 0.01 (``configs/template.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from companion.core.federated import local_sgd
from companion.errors import CompanionError


def regularized_names(model: nn.Module) -> list[str]:
    """The parameters the official code regularizes: those whose name contains ``weight``."""
    return [name for name, _ in model.named_parameters() if "weight" in name]


def leadfl_regularizer(
    model: nn.Module,
    prev_params: dict[str, torch.Tensor],
    prev_grads: dict[str, torch.Tensor],
    lr: float,
) -> torch.Tensor:
    """R(θ) = Σ_W ‖W − W_prev − g_prev − η·1‖₂ over the weight tensors (official code).

    ``prev_params`` and ``prev_grads`` map parameter names to the (detached) weights and
    gradients saved after the previous batch; the result is differentiable in the current W.
    """
    total = None
    for name, param in model.named_parameters():
        if name not in prev_params:
            continue
        gap = param - prev_params[name] - prev_grads[name] - lr * torch.ones_like(param)
        term = torch.linalg.vector_norm(gap)
        total = term if total is None else total + term
    if total is None:
        raise CompanionError("the model has no parameter named '*weight*' to regularize")
    return total


def _cross_entropy(model: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(model(xb), yb)


def local_training(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    momentum: float = 0.0,
    generator: torch.Generator,
    leadfl: bool = False,
    alpha: float = 0.4,
    q: float = 0.2,
) -> tuple[torch.Tensor, dict[str, float], torch.Tensor | None]:
    """Local SGD of one client for ``steps`` mini-batches, with LeadFL's extra step if ``leadfl``.

    The shared :func:`companion.core.federated.local_sgd` takes step 1 (the cross-entropy step,
    on the batches it draws from ``generator``); with LeadFL its ``after_step`` hook takes steps
    2-4 above, so the two arms differ by those steps only.
    Returns (delta = local − global as a flat vector, info, buffers): ``info["loss"]`` is the
    mean task loss and, with LeadFL, ``info["regularizer"]`` the mean α·R over the regularized
    batches; ``buffers`` the local model's BatchNorm statistics (``flat_buffers``), which the
    server averages. The global ``model`` is not modified.
    """
    regs: list[float] = []
    prev_params: dict[str, torch.Tensor] = {}
    prev_grads: dict[str, torch.Tensor] = {}
    names = set(regularized_names(model))

    def leadfl_steps(local: nn.Module, optimizer: torch.optim.Optimizer, i: int) -> None:
        if i > 0:
            # 2. α·R, backpropagated on top of the task gradient (no zero_grad, as coded)
            reg = alpha * leadfl_regularizer(local, prev_params, prev_grads, lr)
            reg.backward()
            regs.append(reg.item())
            # 3. element-wise clipping to [-q, q], then the second step
            params = [p for p in local.parameters() if p.requires_grad]
            torch.nn.utils.clip_grad_value_(params, q)
            optimizer.step()
        # 4. remember W and its gradient for the next batch
        for name, param in local.named_parameters():
            if name in names:
                prev_params[name] = param.detach().clone()
                prev_grads[name] = param.grad.detach().clone()

    delta, loss, buffers = local_sgd(
        model,
        x,
        y,
        _cross_entropy,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        momentum=momentum,
        generator=generator,
        after_step=leadfl_steps if leadfl else None,
    )
    info = {"loss": loss}
    if leadfl:
        info["regularizer"] = sum(regs) / len(regs) if regs else 0.0
    return delta, info, buffers


def bursty_schedule(
    num_clients: int,
    malicious: Sequence[int],
    per_round: int,
    burst_rounds: Sequence[int],
    burst_malicious: int,
    attackers_between_bursts: bool = True,
) -> Callable[[int, torch.Generator], list[int]]:
    """A ``select(round, generator)`` plug-in: who takes part in each round.

    As in the official federator (``fltk/core/federator.py``, ``exec_round``): an ordinary round
    draws ``per_round`` clients uniformly from all clients (attackers included, so a few take
    part by chance); a burst round (``burst_rounds``; official: 0, 10, 12) forces
    ``burst_malicious`` attackers and fills the rest with benign clients. The high variance of
    the attackers' count per round is the "bursty adversarial pattern".
    ``attackers_between_bursts=False`` draws ordinary rounds from the benign clients only.
    """
    mal = sorted(set(int(m) for m in malicious))
    benign = [c for c in range(num_clients) if c not in set(mal)]
    if not 0 < per_round <= num_clients:
        raise CompanionError(f"per_round {per_round} must be in 1..{num_clients}")
    if not 0 <= burst_malicious <= min(len(mal), per_round):
        raise CompanionError(
            f"burst_malicious {burst_malicious} must be in 0..{min(len(mal), per_round)}"
        )
    if per_round - burst_malicious > len(benign):
        raise CompanionError("not enough benign clients to fill a burst round")
    bursts = set(int(r) for r in burst_rounds)

    def select(round_: int, generator: torch.Generator) -> list[int]:
        if round_ in bursts:
            m = torch.randperm(len(mal), generator=generator)[:burst_malicious]
            b = torch.randperm(len(benign), generator=generator)[: per_round - burst_malicious]
            return sorted([mal[i] for i in m.tolist()] + [benign[i] for i in b.tolist()])
        if attackers_between_bursts:
            return sorted(torch.randperm(num_clients, generator=generator)[:per_round].tolist())
        b = torch.randperm(len(benign), generator=generator)[:per_round]
        return sorted(benign[i] for i in b.tolist())

    return select
