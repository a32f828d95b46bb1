"""Kinds and families: what a model declares itself to be (``attention``, ``network``, ``boosting``,
``trees`` or a word of a user's own) and the family the report names it by. The one place that reads a
kind; the registry stores each model's, the report asks here which family a stored kind is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# The kinds the report names families by; a model may declare any other kind, shown as written.
KINDS = {"attention": "attention network", "network": "other network", "boosting": "gradient boosting",
         "trees": "other trees"}
OWN_KIND = re.compile(r"[a-z][a-z0-9_ -]{0,40}")  # a word of one's own, once lower-cased
ATTENTION, NETWORK, BOOSTING, TREES = KINDS.values()  # the families in words, as the report names them


def models_of_kind(kinds: Mapping[str, str], kind: str) -> list[str]:
    """The models of ``kinds`` (model → its declared kind) that declare ``kind``, one the report names.

    >>> models_of_kind({"xgboost": "boosting", "mlp": "network", "lightgbm": "boosting"}, "boosting")
    ['xgboost', 'lightgbm']
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    return [m for m, k in kinds.items() if k == kind]


def models_of_family(kinds: Mapping[str, str], family: str, among: Iterable[str] | None = None) -> list[str]:
    """The models of ``among`` (default: all of ``kinds``, model → kind) in ``family`` (:func:`family_of`), in order.

    >>> models_of_family({"xgboost": "boosting", "mlp": "network"}, "gradient boosting")
    ['xgboost']
    """
    return [m for m in (kinds if among is None else among) if family_of(kinds.get(m)) == family]


def family_of(kind: str | None) -> str:
    """A kind in words: the family the report names (a kind of a user's own is its own family)."""
    return KINDS.get(kind or "", kind or "unknown")


def families(kinds: Mapping[str, str]) -> list[str]:
    """The families of these models (model → kind): ours in a fixed order, then users' own, sorted."""
    present = {family_of(k) for k in kinds.values()}
    return [f for f in KINDS.values() if f in present] + sorted(present - set(KINDS.values()))


def normal_kind(word: str) -> str:
    """A declared kind as stored: lower case, and a family's name in words (``attention network``)
    read as its kind (``attention``). Raises a ValueError listing the accepted words.

    >>> normal_kind("Attention"), normal_kind("gradient boosting"), normal_kind("Neighbours")
    ('attention', 'boosting', 'neighbours')
    """
    kind = " ".join(word.split()).lower()
    kind = next((k for k, family in KINDS.items() if kind == family), kind)
    if not OWN_KIND.fullmatch(kind):
        raise ValueError(f"kind {word!r}: write one of {', '.join(KINDS)} (the report's families: "
                         f"{', '.join(KINDS.values())}), or a word of your own: letters, digits, spaces, '_' and "
                         "'-', starting with a letter, at most 41 characters; case does not matter")
    return kind
