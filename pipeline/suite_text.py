"""A suite file's text: how it is read (YAML 1.2 numbers and booleans, a key given twice refused) and how
its validation problems are worded (pipeline.spec validates; this module reads and words)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipeline.errors import SpecError


def validation_problems(path: str, err: ValidationError) -> str:
    """A suite's validation errors as one line, or a first line and one line per problem: where (the
    key's path), and what is wrong in words a YAML author reads (the type given, a number in quotes)."""
    from pipeline.models.values import number_text

    lines = [f"{path}: invalid suite ({err.error_count()} problems)"]
    for e in err.errors():
        tags = {"OpenMLTask", "OpenMLSuite", "LocalFile", "SklearnDataset"}
        loc = ".".join(str(p) for p in e["loc"] if p not in tags)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        elif e["type"] in ("int_type", "float_type", "bool_type", "string_type"):
            # strict types: say what was given, since YAML turns `true`, `"5"` and `1.0` into other types
            msg = f"{msg}, not {e['input']!r} ({type(e['input']).__name__})"
            if e["type"] in ("int_type", "float_type") and number_text(e["input"]):
                msg += "; write it without quotes"
            elif e["type"] == "string_type" and isinstance(e["input"], int | float) and not isinstance(e["input"], bool):
                msg += "; YAML reads it as a number: put it in quotes for text"
        lines.append(f"  - {loc or '(top level)'}: {msg}")
    if len(lines) == 2:  # one problem: one line
        return f"{path}: invalid suite: {lines[1].removeprefix('  - ')}"
    return "\n".join(lines)



class DuplicateKey(yaml.YAMLError):
    pass


class SuiteLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error (plain YAML
    loaders keep the last one silently), and that a plain scalar in exponent notation (``1e-4``,
    ``1E+3``, ``5e3``) is a number, as in YAML 1.2 (YAML 1.1, PyYAML's own, reads it as text unless
    it has a dot and a signed exponent: ``1.0e-4``), and that only ``true`` and ``false`` are booleans,
    as in YAML 1.2 (``off``, ``yes`` are text). A quoted ``"1e-4"`` stays text."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKey(f"the key {key!r} is given twice in one mapping (lines {seen[key].line + 1} "
                                   f"and {key_node.start_mark.line + 1}); keep one")
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


# YAML 1.2's floats with an exponent that YAML 1.1 leaves as text: 1e-4, 1E+3, 5e3, 1.0e4, .5e1 (plain
# scalars only: a resolver is not asked about quoted ones).
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+|[-+]?\.[0-9_]+[eE][-+]?[0-9]+)$"),
    list("-+0123456789."))
# YAML 1.2's booleans too: only true and false. YAML 1.1 also reads yes/no/on/off as booleans, so that
# `amp: off` became False, passed the check and failed every trial.
SuiteLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in SuiteLoader.yaml_implicit_resolvers.items()}
SuiteLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def read_suite_file(p: Path) -> Any:
    """The suite file's YAML, read with :class:`SuiteLoader`; a file that is not there, not UTF-8 or not
    YAML is one line naming it."""
    if not p.is_file():
        raise SpecError(f"{p}: suite file not found")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        line = p.read_bytes()[: err.start].count(b"\n") + 1
        raise SpecError(f"{p}: not UTF-8 text (byte 0x{err.object[err.start]:02x} on line {line}); "
                        "save the suite file as UTF-8") from None
    except OSError as err:
        raise SpecError(f"{p}: cannot read the suite file ({err.strerror or err})") from None
    try:
        data = yaml.load(text, Loader=SuiteLoader)  # a SafeLoader subclass
    except DuplicateKey as err:
        raise SpecError(f"{p}: {err}") from None
    except yaml.YAMLError as err:
        raise SpecError(f"{p}: not valid YAML{_yaml_where(err)}") from None
    return data


def _yaml_where(err: Exception) -> str:
    """The parser's complaint in one line: where (line, column) and what, while parsing what."""
    mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None)
    if mark is None or not problem:
        return ": " + " ".join(str(err).split())
    context = getattr(err, "context", None)
    return (f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
            + (f" ({context})" if context else ""))
