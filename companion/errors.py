"""The one error type users see for bad input (unknown slug, preset, key, device, ...)."""


class CompanionError(ValueError):
    """Bad input from the user. The message names the bad value and the valid choices.

    The CLI prints it as a single line (``error: ...``) and exits with status 2.
    """


def unknown(what: str, value, valid) -> CompanionError:
    """Build the standard message: ``unknown <what> 'value'; valid: a, b, c``."""
    choices = ", ".join(str(v) for v in valid)
    return CompanionError(f"unknown {what} {value!r}; valid: {choices}")
