"""The paper's thesis, measured on a result (never typed in).

Time slopes are fitted on log-log axes over the longest lengths (``fit_from`` and above), from
medians of repeated forwards. A slope is read as nearer 1 (linear) or nearer 2 (quadratic), the
dividing line being the midpoint 1.5. On a CPU the longest lengths can leave the core's cache,
and another process contends for it: at timing width 64 that raised Hrrformer's slope to about
1.4 at random, so the notebook preset times at width 32 (0.75-0.9 over seeds 0-4).
Accuracy rows compare models trained from the same seed on the same batches, and hold only by a
margin, never by a tie. The no-mixing control (attention output zeroed) is the arm that removes
only the mechanism: a task it solves (``majority``, whose answer the mean over the sequence
already sees) cannot show what attention adds, so the premise row checks that it fails.
"""

from __future__ import annotations

from companion.core import Claim, ClaimReport, Invariant, fmt
from companion.papers.hrrformer.experiment import HrrformerResult, loglog_slope

LINEAR_MAX = 1.5  # "≈ linear": Hrrformer's time slope nearer 1 than 2
QUADRATIC_MIN = 1.5  # "≈ quadratic": softmax attention's time slope nearer 2 than 1
NEEDS_MIXING = 0.30  # premise: the no-mixing control at least 30 points below softmax
COMPETITIVE = 0.05  # "comparable accuracy": Hrrformer at most 5 points below softmax
MIXES = 0.10  # "Hrrformer mixes tokens": at least 10 points above the no-mixing control
MIXING_GAP = 0.30  # the critique, restated: softmax at least 30 points above Hrrformer
DEPTH_GAIN = 0.05  # a deeper Hrrformer at least 5 points better than the 1-layer one
NARROWS = 0.05  # more training narrows the gap to softmax by at least 5 points
# speed at equal depth: Hrrformer needs at least SLOWER times the steps softmax needs to reach
# TARGET test accuracy. NOT fixed in advance of seeds 0-2: chosen after an earlier medium run on
# seeds 0-2 (commit 58d85bd, without the 3-layer softmax arms), from the first 400 steps of the
# 3-layer arms at seed 0 (the same seed and batches as medium seed 0; eval every 50): 3-layer
# softmax reached 0.95 at step 100 on both tasks, the 3-layer Hrrformer at step 350 on sort
# (3.5x) and not by step 400 on reverse. Likewise the "depth helps" row on sort is read at
# ``early_fraction`` of the steps because that earlier run showed both depths at the ceiling at
# the end (the end-point row held at 1 of 3 seeds). Seeds 0-2 are therefore where these
# criteria were chosen; the held-out medium seeds 5-7 (data/claims/medium/heldout/) test them.
# The rate is one shared constant Adam lr (config ``lr``), not tuned on validation data for
# either model: steps-to-target ratios depend on it.
TARGET = 0.95
SLOWER = 3.0


def _deepest(result: HrrformerResult, task: str):
    """(depth, test accuracy) of the deepest extra Hrrformer arm on ``task``, or None."""
    deeper = sorted(
        (a.depth, a.test_accuracy) for k, a in result.arms.items() if k.startswith(f"{task}/hrr@")
    )
    return deeper[-1] if deeper else None


def steps_to(arm, target: float = TARGET) -> int | None:
    """The first eval step at which ``arm``'s test accuracy reached ``target`` (None: never)."""
    return next((s for s, v in zip(arm.eval_steps, arm.eval_accuracy) if v >= target), None)


def accuracy_at(arm, step: float) -> tuple[int, float]:
    """(the eval step nearest ``step``, ``arm``'s test accuracy there)."""
    i = min(range(len(arm.eval_steps)), key=lambda j: abs(arm.eval_steps[j] - step))
    return arm.eval_steps[i], arm.eval_accuracy[i]


def _speed_rows(result: HrrformerResult, task: str, depth: int) -> list[Claim]:
    """Steps to ``TARGET``: Hrrformer against softmax attention, both with ``depth`` layers.
    Premise: softmax reaches the target. A Hrrformer that never reaches it needed more than
    the last eval step, which counts only if that is already ``SLOWER`` times softmax's."""
    hrr, sm = result.arms[f"{task}/hrr@{depth}"], result.arms[f"{task}/softmax@{depth}"]
    hrr_steps, sm_steps = steps_to(hrr), steps_to(sm)
    last = hrr.eval_steps[-1]
    reached = sm_steps is not None
    if not reached:
        holds = False
    elif hrr_steps is None:
        holds = last >= SLOWER * sm_steps
    else:
        holds = hrr_steps >= SLOWER * sm_steps
    return [
        Claim(
            f"premise: {depth}-layer softmax attention reaches {TARGET} accuracy on {task}",
            f"first at step {sm_steps}" if reached else f"not by step {sm.eval_steps[-1]}",
            f">= {TARGET} at some eval step",
            reached,
        ),
        Claim(
            f"speed: {depth}-layer Hrrformer needs >= {SLOWER:g}× the steps {depth}-layer "
            f"softmax needs to reach {TARGET} on {task}",
            f"steps to {TARGET}: Hrrformer "
            f"{hrr_steps if hrr_steps is not None else f'> {last}'} vs softmax {sm_steps}",
            f"Hrrformer >= {SLOWER:g} × softmax (never reached: counts as > the last step)",
            holds,
            premise_ok=reached,
        ),
    ]


def _depth_rows(result: HrrformerResult, acc, mixing, needs_mixing) -> list[Claim]:
    """Where deeper Hrrformers were trained (``task_depths``, ``critique_depths``): does depth
    help, and does the deep Hrrformer reach softmax attention? With ``baseline_depth`` set, the
    deep Hrrformer is the one of that depth and meets softmax (and the control) of its own
    depth; otherwise the deepest one meets the 1-layer softmax model, and the text says so."""
    cfg = result.config
    task, mix, one, rows = cfg["task"], cfg["critique_task"], cfg["depth"], []
    base = cfg.get("baseline_depth", 0)
    early = cfg.get("early_fraction", 0.0)
    ref = base if base else one  # the softmax model's depth in the deep rows

    def deep(t):
        if base:
            return base, result.arms[f"{t}/hrr@{base}"].test_accuracy
        return _deepest(result, t)

    def softmax_acc(t):
        return result.arms[f"{t}/softmax" + (f"@{base}" if base else "")].test_accuracy

    if _deepest(result, task):
        depth, best = deep(task)
        premise = needs_mixing
        if base:
            control = result.arms[f"{task}/none@{base}"].test_accuracy
            premise = control <= softmax_acc(task) - NEEDS_MIXING
            rows.append(
                Claim(
                    f"premise: {task} needs token mixing at {base} layers too (the {base}-layer "
                    f"no-mixing control falls short of {base}-layer softmax)",
                    f"no-mixing control {fmt(control)} vs softmax {fmt(softmax_acc(task))}",
                    f"control <= softmax − {NEEDS_MIXING}",
                    premise,
                )
            )
        if early:  # at the end both may sit at the ceiling: compare part way through
            shallow, deep_arm = result.arms[f"{task}/hrr"], result.arms[f"{task}/hrr@{depth}"]
            step, before = accuracy_at(shallow, early * cfg["steps"])
            _, after = accuracy_at(deep_arm, step)
            rows.append(
                Claim(
                    f"depth helps Hrrformer {task} ({depth} layers vs {one}, at {early:.0%} "
                    "of the steps)",
                    f"test accuracy at step {step}: {fmt(after)} vs {fmt(before)}",
                    f"deeper >= shallower + {DEPTH_GAIN}",
                    after >= before + DEPTH_GAIN,
                    premise_ok=needs_mixing,
                )
            )
        else:
            rows.append(
                Claim(
                    f"depth helps Hrrformer {task} ({depth} layers vs {one})",
                    f"test accuracy {fmt(best)} vs {fmt(acc['hrr'])}",
                    f"deeper >= shallower + {DEPTH_GAIN}",
                    best >= acc["hrr"] + DEPTH_GAIN,
                    premise_ok=needs_mixing,
                )
            )
        rows.append(
            Claim(
                f"with {depth} layers Hrrformer's accuracy is comparable to {ref}-layer softmax "
                f"attention ({task}, equal steps)",
                f"test accuracy {fmt(best)} vs softmax {fmt(softmax_acc(task))}",
                f"Hrrformer >= softmax − {COMPETITIVE}",
                best >= softmax_acc(task) - COMPETITIVE,
                premise_ok=premise,
            )
        )
        if base:
            rows += _speed_rows(result, task, base)
    if _deepest(result, mix):
        depth, best = deep(mix)
        rows.append(
            Claim(
                f"depth helps Hrrformer {mix} ({depth} layers vs {one})",
                f"per-position accuracy {fmt(best)} vs {fmt(mixing['hrr'])}",
                f"deeper >= shallower + {DEPTH_GAIN}",
                best >= mixing["hrr"] + DEPTH_GAIN,
            )
        )
        if base:  # like with like: speed (steps to a target) and reach (the end)
            rows += _speed_rows(result, mix, base)
            rows.append(
                Claim(
                    f"reach: with {base} layers Hrrformer's {mix} accuracy comes within "
                    f"{COMPETITIVE} of {base}-layer softmax attention's (equal steps)",
                    f"per-position accuracy {fmt(best)} vs softmax {fmt(softmax_acc(mix))}",
                    f"Hrrformer >= softmax − {COMPETITIVE}",
                    best >= softmax_acc(mix) - COMPETITIVE,
                )
            )
        elif _deepest(result, task):  # the critique restated at depth, against 1 layer
            rows.append(
                Claim(
                    f"critique, restated with {depth}-layer Hrrformer against {one}-layer "
                    f"softmax: at equal steps softmax is still far ahead on {mix}",
                    f"per-position accuracy: softmax {fmt(mixing['softmax'])} vs Hrrformer "
                    f"{fmt(best)}",
                    f"softmax >= Hrrformer + {MIXING_GAP}",
                    mixing["softmax"] >= best + MIXING_GAP,
                )
            )
    return rows


def gap_at(result: HrrformerResult, task: str, step: float) -> tuple[int, float]:
    """(the eval step nearest ``step``, softmax's test accuracy minus Hrrformer's there), read
    off the learning curves of the ``cfg.depth``-layer arms."""
    hrr, sm = result.arms[f"{task}/hrr"], result.arms[f"{task}/softmax"]
    i = min(range(len(hrr.eval_steps)), key=lambda j: abs(hrr.eval_steps[j] - step))
    return hrr.eval_steps[i], sm.eval_accuracy[i] - hrr.eval_accuracy[i]


def _training_rows(result: HrrformerResult, needs_mixing) -> list[Claim]:
    """The gap to softmax at ``early_fraction`` of the steps against the gap at the end."""
    cfg, rows = result.config, []
    for task, premise in ((cfg["task"], needs_mixing), (cfg["critique_task"], True)):
        steps = cfg["critique_steps"] if task == cfg["critique_task"] else cfg["steps"]
        _, before = gap_at(result, task, cfg["early_fraction"] * steps)
        _, after = gap_at(result, task, steps)
        rows.append(
            Claim(
                f"more training narrows Hrrformer's gap to softmax on {task} "
                f"(from {cfg['early_fraction']:.0%} of the steps to the end)",
                f"softmax minus Hrrformer accuracy: {fmt(before)} -> {fmt(after)}",
                f"end gap <= early gap − {NARROWS}",
                after <= before - NARROWS,
                premise_ok=premise,
            )
        )
    return rows


def slopes(result: HrrformerResult, what: str = "seconds") -> dict[str, float]:
    """Log-log slope of forward time (``"seconds"``) or peak memory (``"peak_bytes"``)
    against T, per attention, over lengths ``>= fit_from``."""
    fit_from = result.config["fit_from"]
    return {
        kind: loglog_slope(c.lengths, getattr(c, what), fit_from)
        for kind, c in result.costs.items()
    }


def check_claims(result: HrrformerResult) -> ClaimReport:
    cfg = result.config
    task, mix = cfg["task"], cfg["critique_task"]
    time_slope = slopes(result, "seconds")
    mem_slope = slopes(result, "peak_bytes")
    hrr_cost, sm_cost = result.costs["hrr"], result.costs["softmax"]
    common = sm_cost.lengths[-1]  # the longest T both were timed at
    speedup = sm_cost.seconds[-1] / hrr_cost.seconds[hrr_cost.lengths.index(common)]
    acc = {k: result.arms[f"{task}/{k}"].test_accuracy for k in ("hrr", "softmax", "none")}
    mixing = {k: result.arms[f"{mix}/{k}"].test_accuracy for k in ("hrr", "softmax", "none")}
    chance = result.arms[f"{mix}/hrr"].chance
    needs_mixing = acc["none"] <= acc["softmax"] - NEEDS_MIXING
    rows = [
        Claim(
            "Hrrformer's forward time grows nearer linear than quadratic in T",
            f"log-log slope {fmt(time_slope['hrr'])}",
            f"slope <= {LINEAR_MAX}",
            time_slope["hrr"] <= LINEAR_MAX,
        ),
        Claim(
            "softmax attention's forward time grows quadratically in T",
            f"log-log slope {fmt(time_slope['softmax'])} (Hrrformer ×{fmt(speedup, 1)} "
            "faster at softmax's longest T)",
            f"slope >= {QUADRATIC_MIN}",
            time_slope["softmax"] >= QUADRATIC_MIN,
        ),
        Claim(
            f"premise: {task} needs token mixing (the no-mixing control falls short of softmax)",
            f"no-mixing control {fmt(acc['none'])} vs softmax {fmt(acc['softmax'])}",
            f"control <= softmax − {NEEDS_MIXING}",
            needs_mixing,
        ),
        Claim(
            f"Hrrformer's attention mixes tokens ({task})",
            f"test accuracy {fmt(acc['hrr'])} vs no-mixing control {fmt(acc['none'])}",
            f"Hrrformer >= control + {MIXES}",
            acc["hrr"] >= acc["none"] + MIXES,
            premise_ok=needs_mixing,
        ),
        Claim(
            f"Hrrformer's accuracy is comparable to softmax attention ({task}, equal steps)",
            f"test accuracy {fmt(acc['hrr'])} vs softmax {fmt(acc['softmax'])}",
            f"Hrrformer >= softmax − {COMPETITIVE}",
            acc["hrr"] >= acc["softmax"] - COMPETITIVE,
            premise_ok=needs_mixing,
        ),
        Claim(
            f"against the critique: the weights do carry other tokens, Hrrformer learns to {mix}",
            f"per-position accuracy {fmt(mixing['hrr'])} vs no-mixing control "
            f"{fmt(mixing['none'])} (chance {fmt(chance)})",
            f"Hrrformer >= control + {MIXES}",
            mixing["hrr"] >= mixing["none"] + MIXES,
        ),
        Claim(
            f"critique, restated: at equal steps softmax is far ahead on {mix}",
            f"per-position accuracy: softmax {fmt(mixing['softmax'])} vs Hrrformer "
            f"{fmt(mixing['hrr'])}",
            f"softmax >= Hrrformer + {MIXING_GAP}",
            mixing["softmax"] >= mixing["hrr"] + MIXING_GAP,
        ),
    ]
    rows += _depth_rows(result, acc, mixing, needs_mixing)
    if cfg.get("early_fraction", 0.0):
        rows += _training_rows(result, needs_mixing)
    largest = max(range(len(sm_cost.lengths)), key=lambda i: sm_cost.lengths[i])
    invariants = (
        Invariant(
            "Hrrformer forms no T × T tensor: its peak memory is linear in T",
            f"memory slope {fmt(mem_slope['hrr'])} (softmax {fmt(mem_slope['softmax'])})",
            abs(mem_slope["hrr"] - 1.0) < 0.05,
        ),
        Invariant(
            "softmax's counted peak holds its T × T score matrices (h·T²·4 bytes)",
            f"peak / score-matrix bytes at the longest T: "
            f"{fmt(sm_cost.peak_bytes[largest] / result.score_matrix_bytes[largest])}",
            sm_cost.peak_bytes[largest] >= result.score_matrix_bytes[largest],
        ),
    )
    note = (
        "time slopes are fitted on the longest lengths; at short T both are dominated by "
        "fixed per-call overhead, so a slope fitted there is below the asymptotic one"
    )
    return ClaimReport(tuple(rows), note=note, invariants=invariants)
