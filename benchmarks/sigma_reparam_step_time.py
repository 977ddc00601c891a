"""Training-step time of a σReparam ViT over the plain ViT, on the same input, in one run.

    python benchmarks/sigma_reparam_step_time.py [--dim 64 --depth 4 --batch 128 --steps 50]

Not a test: it prints the per-step times and their ratio (σReparam / plain).
"""

import argparse
import time

import torch
import torch.nn.functional as F

from companion.nn import ViT
from companion.papers.sigma_reparam import convert_to_sigma_reparam


def step_time(model, x, y, steps: int, warmup: int = 5) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.perf_counter() - start) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--image-size", type=int, default=8)
    ap.add_argument("--patch-size", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.rand(args.batch, 1, args.image_size, args.image_size)
    y = torch.randint(0, 10, (args.batch,))

    def build():
        torch.manual_seed(0)
        return ViT(
            image_size=args.image_size,
            patch_size=args.patch_size,
            in_channels=1,
            dim=args.dim,
            depth=args.depth,
            heads=args.heads,
            mlp_ratio=2,
        )

    plain = step_time(build(), x, y, args.steps)
    sigma = step_time(convert_to_sigma_reparam(build()), x, y, args.steps)
    print(f"plain ViT:    {plain * 1e3:.2f} ms/step")
    print(f"σReparam ViT: {sigma * 1e3:.2f} ms/step")
    print(f"ratio σReparam / plain: {sigma / plain:.2f}  ({torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
