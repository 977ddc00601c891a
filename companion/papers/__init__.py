"""One package per paper: ``companion.papers.<slug>`` with PRESETS, run, check_claims and plots."""
