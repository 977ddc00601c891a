"""t-SimCNE: seconds per training epoch of each stage and 2-D kNN accuracy, at the notebook
size (1,797 8x8 digits shifted on a 14x14 canvas) and at a larger size (the 5,000-image
MNIST subset, 28x28).

    python benchmarks/tsimcne_epoch_time.py [--sizes notebook larger] [--threads 2]
        [--epochs 30 5 20] [--no-tsne]

Not a test: for each size it runs ``companion.papers.tsimcne.run`` (the three stages, then
t-SNE of the pixels unless ``--no-tsne``) and prints seconds per epoch of every stage, the
kNN accuracy (k = 15) of every stage's output, and t-SNE's time and kNN accuracy.
"""

import argparse
import os
import time

import torch

SIZES = {
    "notebook": {},
    "larger": {"dataset": "mnist_subset", "image_size": 28},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--epochs", type=int, nargs=3, default=None, help="stage epochs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-tsne", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("COMPANION_PROGRESS", "0")
    from companion.papers import tsimcne as paper

    for name in args.sizes:
        overrides = dict(SIZES[name], seed=args.seed, tsne=not args.no_tsne)
        if args.epochs:
            overrides["epochs"] = tuple(args.epochs)
        cfg = paper.PRESETS["notebook"].replace(**overrides)
        start = time.perf_counter()
        result = paper.run(cfg)
        total = time.perf_counter() - start
        side = cfg.canvas if cfg.dataset == "shifted_digits" else cfg.image_size
        print(
            f"== {name}: {cfg.dataset} {side}x{side}, "
            f"{len(result.labels)} images, widths {cfg.widths}, batch {cfg.batch_size}, "
            f"{args.threads} threads, {total:.1f} s in all"
        )
        for s in result.stages:
            print(
                f"stage {s.stage}: {s.epochs:4d} epochs, {s.seconds / s.epochs:6.2f} s/epoch, "
                f"{s.out_dim:3d}-d kNN accuracy {s.knn:.3f}"
            )
        if result.tsne is not None:
            print(
                f"t-SNE of pixels: {result.tsne.seconds:.1f} s, 2-d kNN accuracy "
                f"{result.tsne.knn:.3f}"
            )
        print(f"pixel space: kNN accuracy {result.pixel_knn:.3f}")


if __name__ == "__main__":
    main()
