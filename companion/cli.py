"""The ``companion`` command.

    companion list [--track TRACK]
    companion info SLUG
    companion run SLUG --preset P [--set key=value ...] [--device D] [--devices N]
                  [--num-nodes M] [--strategy S] [--precision P] [--out DIR] [--resume]
    companion notebooks execute [SLUG ... | --all] [-p key=value ...] [--jobs N]
                  (--out DIR | --inplace) [--timeout S]
    companion notebooks student [SLUG ... | --all] --out DIR
    companion notebooks budget [NOTEBOOK ...] [--budget S] [--strict]
    companion notebooks assignment [SLUG ... | --all] --course DIR [-p preset=smoke]
    companion notebooks times [SLUG ... | --all]      (state each notebook's lab-plan time)
    companion notebooks guide [SLUG ... | --all] [--out FILE]   (the instructor guide)
    companion claims [SLUG ... | --all] --seeds 0-4 [--preset P] [--jobs N] [--set key=value]
                  [--resume] [--run-dir DIR]
    companion catalog [--write README.md]
    companion gpu-check [SLUG ... | --all] [--device cuda] [--scale gpu] [--work-dir DIR]

Bad input (unknown slug, preset, key, device, wrong value type) prints one line
``error: ...`` naming the bad value and the valid choices, and exits with status 2.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from companion import registry
from companion.errors import CompanionError, unknown
from companion.registry import load_paper


def _key_values(pairs: list[str], literal: bool) -> dict:
    """``["lr=1e-3", ...]`` -> dict; values stay text unless ``literal`` (papermill's -p)."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CompanionError(f"expected key=value, got {pair!r}")
        if literal:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                pass  # plain text, e.g. preset=smoke
        out[key.strip()] = value
    return out


def cmd_list(args) -> None:
    papers = list(registry.PAPERS.values())
    if args.track:
        tracks = sorted({p.track for p in papers})
        if args.track not in tracks:
            raise unknown("track", args.track, tracks)
        papers = [p for p in papers if p.track == args.track]
    rows = [(str(p.number), p.slug, p.venue, p.track, p.status, p.title) for p in papers]
    widths = [
        max(len(r[i]) for r in rows + [("#", "slug", "venue", "track", "status", "")])
        for i in range(5)
    ]
    header = ("#", "slug", "venue", "track", "status", "title")
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5])
    n_avail = sum(p.status == "available" for p in papers)
    print(f"{len(papers)} papers, {n_avail} with a notebook")


def cmd_info(args) -> None:
    p = registry.get(args.slug)
    print(f"{p.title}\n{p.authors} · {p.venue} · track: {p.track}")
    print(f"paper:    {p.paper_url}")
    print(f"code:     {p.code_url or '(no official code found)'}")
    print(f"notebook: notebooks/{p.slug}.ipynb ({p.status})")
    if p.status != "available":
        return
    paper = load_paper(p.slug)
    print("presets:")
    for name in paper.PRESETS:
        print(f"  {name:9s} companion run {p.slug} --preset {name} --out runs/{p.slug}-{name}")
    from companion.tools.classroom import lab_plan

    print(lab_plan(p.slug))
    print("settings (--set key=value), notebook preset values:")
    for key, value in paper.PRESETS["notebook"].to_dict().items():
        print(f"  {key} = {value!r}")


def cmd_run(args) -> None:
    from companion.core import get_preset, save_figures, write_json

    paper = load_paper(args.slug)
    cfg = get_preset(paper.PRESETS, args.preset)
    direct = {
        k: v
        for k, v in (
            ("device", args.device),
            ("devices", args.devices),
            ("num_nodes", args.num_nodes),
            ("strategy", args.strategy),
            ("precision", args.precision),
            ("seed", args.seed),
        )
        if v is not None
    }
    cfg = cfg.with_strings(_key_values(args.set, literal=False)).replace(**direct)
    out = Path(args.out or f"runs/{args.slug}-{args.preset}")
    result = paper.run(cfg, out_dir=out, resume=args.resume)

    from lightning_fabric.utilities.rank_zero import rank_zero_only

    if getattr(rank_zero_only, "rank", 0) != 0:
        return  # under DDP only rank 0 writes and reports
    write_json(out / "config.json", cfg.to_dict())
    result.save(out / "result.json")
    report = paper.check_claims(result)
    write_json(out / "claims.json", report.to_dict())
    save_figures(paper.figures(result), out / "figures")
    print(report)
    print(f"wrote {out}/result.json, claims.json, config.json, figures/")


def cmd_notebooks(args) -> None:
    from companion.tools import notebooks

    if args.action == "budget":
        paths = [Path(p) for p in args.paths] or sorted(notebooks.NOTEBOOK_DIR.glob("*.ipynb"))
        text, over = notebooks.budget_report(paths, args.budget)
        print(text)
        if over and args.strict:
            raise CompanionError(f"over the {args.budget:g} s budget: {', '.join(over)}")
        return
    slugs = notebooks.all_slugs() if args.all else args.slugs
    if not slugs:
        raise CompanionError(
            "name at least one notebook or pass --all; valid: " + ", ".join(notebooks.all_slugs())
        )
    if args.action == "assignment":
        from companion.tools.classroom import write_course

        if not args.course:
            raise CompanionError("assignment needs --course DIR (the nbgrader course folder)")
        preset = _key_values(args.p, literal=False).get("preset")
        for path in write_course(slugs, Path(args.course), preset):
            print(f"wrote {path}")
        print(f"next: cd {args.course} && nbgrader generate_assignment SLUG, then autograde")
        return
    if args.action == "times":
        from companion.tools.classroom import write_stated_times

        for slug, before, after in write_stated_times(slugs):
            print(f"{slug}: stated {before} -> {after} minutes")
        return
    if args.action == "guide":
        from companion.tools.classroom import instructor_guide

        text = instructor_guide(slugs)
        if args.out:
            Path(args.out).write_text(text)
            print(f"wrote {args.out}")
        else:
            print(text, end="")
        return
    if args.action == "student":
        if not args.out:
            raise CompanionError("student versions need --out DIR")
        for path in notebooks.make_student(slugs, Path(args.out)):
            print(f"wrote {path}")
        return
    runs = notebooks.execute(
        slugs,
        parameters=_key_values(args.p, literal=True),
        out_dir=Path(args.out) if args.out else None,
        inplace=args.inplace,
        jobs=args.jobs,
        timeout=args.timeout,
    )
    print(notebooks.summary_table(runs))
    if any(r.status != "ok" for r in runs):
        sys.exit(1)


def cmd_claims(args) -> None:
    from companion.core.robustness import claims_over_seeds, parse_seeds, robustness_table

    slugs = [p.slug for p in registry.available()] if args.all else args.slugs
    if not slugs:
        raise CompanionError(
            "name at least one paper or pass --all; available: "
            + ", ".join(p.slug for p in registry.available())
        )
    for slug in slugs:
        load_paper(slug)  # unknown or planned papers fail before anything runs
    if args.show:  # the stored files, every seed's measurement; nothing runs
        for slug in slugs:
            print(robustness_table(slug, preset=args.preset, per_seed="all"))
            print()
        return
    seeds = parse_seeds(args.seeds)
    if args.jobs < 1:
        raise CompanionError(f"--jobs {args.jobs} must be at least 1")
    for slug in slugs:
        claims_over_seeds(
            slug,
            seeds,
            preset=args.preset,
            overrides=_key_values(args.set, literal=False),
            jobs=args.jobs,
            resume=args.resume,
            run_dir=Path(args.run_dir) / slug if args.run_dir else None,
        )
        print(robustness_table(slug, preset=args.preset, per_seed="all"))
        print()


def cmd_catalog(args) -> None:
    from companion.tools import notebooks

    tables = notebooks.readme_tables()
    if not args.write:
        print("\n\n".join(tables.values()))
        return
    path = Path(args.write)
    text = path.read_text()
    for name, table in tables.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        if start not in text or end not in text:
            raise CompanionError(f"{path} has no markers {start} ... {end}")
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{start}\n{table}\n{end}{tail}"
    path.write_text(text)
    from companion.core.fullscale import SCALING_FILE, write_scaling

    write_scaling(notebooks.all_slugs())
    print(f"wrote the {', '.join(tables)} parts of {path}, and {SCALING_FILE.name}")


def cmd_gpu_check(args) -> None:
    import torch

    from companion.core.fullscale import SCALES, gpu_check, gpu_table

    slugs = [p.slug for p in registry.available()] if args.all or not args.slugs else args.slugs
    for slug in slugs:
        load_paper(slug)
    if args.scale not in SCALES:
        raise unknown("scale", args.scale, SCALES)
    rows = gpu_check(slugs, Path(args.work_dir), device=args.device, scale=args.scale)
    name = torch.cuda.get_device_name() if args.device == "cuda" else args.device
    print(gpu_table(rows, name))


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="companion", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="all 56 papers with their status")
    p.add_argument("--track")
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("info", help="links, presets and commands of one paper")
    p.add_argument("slug")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("run", help="run a paper's experiment at a preset")
    p.add_argument("slug")
    p.add_argument("--preset", default="notebook")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a setting")
    p.add_argument("--device", help="auto, cpu, cuda or mps")
    p.add_argument("--devices", type=int)
    p.add_argument("--num-nodes", type=int)
    p.add_argument("--strategy", help="Fabric strategy: auto, ddp, ddp_spawn, fsdp, ...")
    p.add_argument("--precision", help="32-true, 16-mixed, bf16-mixed, 64-true")
    p.add_argument("--seed", type=int)
    p.add_argument("--out", help="run folder (default runs/SLUG-PRESET)")
    p.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("notebooks", help="execute notebooks, make student versions, budgets")
    p.add_argument(
        "action", choices=("execute", "student", "budget", "assignment", "times", "guide")
    )
    p.add_argument("slugs", nargs="*", help="notebook slugs (budget: notebook paths)")
    p.add_argument("--all", action="store_true")
    p.add_argument("-p", action="append", metavar="KEY=VALUE", help="papermill parameter")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--inplace", action="store_true")
    p.add_argument("--course", help="assignment: the nbgrader course folder to write into")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--budget", type=float, default=60.0, help="budget: seconds per notebook")
    p.add_argument("--strict", action="store_true", help="budget: exit 2 when one is over")
    p.set_defaults(fn=cmd_notebooks)

    p = sub.add_parser(
        "claims", help="run the claims at several seeds -> data/claims/[PRESET/][heldout/]SLUG.json"
    )
    p.add_argument("slugs", nargs="*")
    p.add_argument("--all", action="store_true", help="every paper with an implementation")
    p.add_argument("--seeds", default="0-4", help="a range like 0-4 or a list like 0,3,7")
    p.add_argument("--preset", default="notebook")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a setting")
    p.add_argument("--jobs", type=int, default=1, help="seeds run in parallel processes")
    p.add_argument("--resume", action="store_true", help="keep seeds the file already holds")
    p.add_argument(
        "--show", action="store_true", help="print the stored claims files, every seed; run nothing"
    )
    p.add_argument("--run-dir", help="keep each seed's run folder (checkpoints) under DIR/SLUG")
    p.set_defaults(fn=cmd_claims)

    p = sub.add_parser(
        "gpu-check", help="each full preset on the GPU for a bounded number of steps"
    )
    p.add_argument("slugs", nargs="*")
    p.add_argument("--all", action="store_true", help="every paper (the default)")
    p.add_argument("--device", default="cuda", help="cuda (default); cpu to try the code path")
    p.add_argument("--scale", default="gpu", help="gpu: full-size synthetic data; tiny: fixtures")
    p.add_argument("--work-dir", default="runs/gpu-check", help="data and run folders")
    p.set_defaults(fn=cmd_gpu_check)

    p = sub.add_parser(
        "catalog",
        help="the README's catalog and scaling-up tables (data/claims, papers' fullscale)",
    )
    p.add_argument("--write", metavar="README", help="replace the table between its markers")
    p.set_defaults(fn=cmd_catalog)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "action", None) == "budget":
        args.paths = args.slugs
    try:
        args.fn(args)
    except CompanionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
