"""Machinery shared by every paper: presets, runtime, training loop, claims, exercises, plots."""

from companion.core.claims import Claim, ClaimReport, Invariant, fmt
from companion.core.exercises import ExerciseError, check, check_close, report_ok
from companion.core.plotting import save_figures, set_theme, subplots
from companion.core.presets import Config, get_preset
from companion.core.results import Result, read_json, write_json
from companion.core.robustness import robustness_table
from companion.core.runtime import (
    describe,
    progress,
    resolve_device,
    seed_everything,
    torch_threads,
)
from companion.core.source import show_source
from companion.core.training import (
    Every,
    History,
    LoaderBatches,
    StepBatches,
    fit,
    launch,
    launch_or_resume,
    make_fabric,
    train_arms,
)
from companion.core.widgets import interactive_figure

__all__ = [
    "Claim",
    "ClaimReport",
    "Config",
    "Every",
    "ExerciseError",
    "History",
    "Invariant",
    "LoaderBatches",
    "Result",
    "StepBatches",
    "check",
    "check_close",
    "describe",
    "fit",
    "fmt",
    "get_preset",
    "interactive_figure",
    "launch",
    "launch_or_resume",
    "train_arms",
    "make_fabric",
    "progress",
    "read_json",
    "report_ok",
    "resolve_device",
    "robustness_table",
    "save_figures",
    "seed_everything",
    "set_theme",
    "show_source",
    "subplots",
    "torch_threads",
    "write_json",
]
