"""Checks on the values a model's configuration is written with: text that reads as a number (quoted in YAML),
and a search-space domain written as data (``{loguniform: [1e-4, 1e-2]}``)."""

from __future__ import annotations

from typing import Any


def number_text(value: Any) -> bool:
    """Whether ``value`` is text that reads as a number (``'1e-4'``, quoted in YAML)."""
    if not isinstance(value, str) or not any(c.isdigit() for c in value):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def not_a_number(value: Any) -> str:
    """Why ``value`` is not a number, in words; for text that reads as one, how to write it as one.

    >>> not_a_number("1e-4")
    "'1e-4' is text, not a number; write it without quotes (1e-4)"
    """
    if isinstance(value, str):
        hint = f"; write it without quotes ({value.strip()})" if number_text(value) else ""
        return f"{value!r} is text, not a number{hint}"
    what = "true or false" if isinstance(value, bool) else "empty" if value is None else f"a {type(value).__name__}"
    return f"{value!r} is {what}, not a number"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_domain(key: str, dom: dict[str, Any]) -> None:
    """Validate one search-space domain written as data, e.g. ``{loguniform: [1e-4, 1e-2]}``."""
    if len(dom) != 1:
        raise ValueError(f"space.{key}: give exactly one of uniform, loguniform, int, logint, choice")
    (kind, arg), = dom.items()
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise ValueError(f"space.{key}.choice must be a non-empty list")
        return
    if kind not in ("uniform", "loguniform", "int", "logint"):
        raise ValueError(f"space.{key}: unknown domain {kind!r}; allowed: uniform, loguniform, int, logint, choice")
    if not (isinstance(arg, list) and len(arg) == 2):
        given = f"a list of {len(arg)}" if isinstance(arg, list) else repr(arg)
        raise ValueError(f"space.{key}.{kind} must be [low, high], two numbers, not {given}")
    for a in arg:
        if isinstance(a, bool) or not isinstance(a, int | float):
            raise ValueError(f"space.{key}.{kind} must be [low, high], two numbers: {not_a_number(a)}")
    lo, hi = arg
    if not lo < hi:
        raise ValueError(f"space.{key}.{kind}: low {lo} must be below high {hi}")
    if kind.startswith("log") and lo <= 0:
        raise ValueError(f"space.{key}.{kind}: low must be positive on a log scale")
