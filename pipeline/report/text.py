"""Numbers and lists as the Markdown answers write them (``attnbench answer``, its tuning and configurations blocks)."""

from __future__ import annotations


def signed(x: float, sign: bool = True) -> str:
    """A difference to three decimals, its sign always shown (``sign``) and a true minus; a dash for none."""
    return "–" if x != x else (f"{x:+.3f}" if sign else f"{x:.3f}").replace("-", "−")


def thousands(n: float) -> str:
    """A count of rows, whole, with thousands separators."""
    return f"{round(n):,}"


def listed(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: sizes written with thousands separators read apart only so."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def counted(n: int, noun: str) -> str:
    """``1 dataset``, ``2 datasets``: a count and its noun, plural unless one."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
