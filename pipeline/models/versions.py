"""The versions of attnbench's own code that decide a model's results, each pinned by its syntax.

A cell's result depends on more than its suite entry: on the model's module and its Learner, the loop and
recipe a torch model trains by, the preprocessing, and the scoring of its predictions. Each such file has
a version here (``PINNED``) with the digest of its syntax tree at that version (comments, docstrings and
layout aside: :func:`syntax_digest`). A change that alters results raises the file's version, and the
cells of every model that reads the file get new ids; a refactor that alters none records the file's new
digest under the same version, saying so in its commit (``tests/test_code_versions.py`` fails until one
or the other is done). Version 1 of every file adds nothing to a cell's id, so the ids of results computed
before versions existed stay as they were.

Which files a model reads is found, not listed: the files its builder's and its Learner's modules import,
transitively (imports inside functions too), with the trial's own path (``ROOTS``), among those pinned.

A checkout whose file differs from its pin (a local edit) runs the models that read it as *modified*:
their cells get ids of their own, and the run says so in one line. Reads source files as text; imports
nothing of the package.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # pipeline/

# file (relative to pipeline/) → (version, sha256 of its syntax at that version). Raise a version where a
# change alters results; record a new digest under the same version where it does not.
PINNED: dict[str, tuple[int, str]] = {
    "data/preprocess.py": (1, "ebaff0742a036689"),
    "evaluation.py": (1, "2503fe5347df7b61"),
    "metrics.py": (1, "40eebe89a86d3d1c"),
    "train/loop.py": (1, "af9795158030158d"),
    "train/recipe.py": (1, "27b8aa2a4888ce85"),
    "train/precision.py": (1, "e5aafe12aacb20bc"),
    "learners/base.py": (1, "a60ddac82608603c"),
    "learners/trial.py": (1, "e1922ab6cfe4e2c5"),
    "learners/resolve.py": (1, "f29582d633ee1858"),
    "learners/compression.py": (1, "2b4f7e344a2b0963"),
    "learners/torch.py": (1, "b9052209aa6f298c"),
    "learners/tabm.py": (1, "35f0e69f9cf0d075"),
    "learners/realmlp.py": (1, "f5cbec13651e5185"),
    "learners/xgboost.py": (1, "2575b845dc05a8f6"),
    "learners/catboost.py": (1, "fd39f087a794f8e5"),
    "learners/lightgbm.py": (1, "8b54ccec1872f0ae"),
    "learners/random_forest.py": (1, "288a037ef19195e9"),
    "learners/extra_trees.py": (1, "ce7e5bd9291679ff"),
    "learners/estimator.py": (1, "5adbace4c8f7ab38"),
    "learners/in_context.py": (1, "2444bf73a2e76bef"),
    "learners/tabicl.py": (1, "2cbc06aa33d9d0f7"),
    "learners/tabpfn.py": (1, "259ebbda7065c3bc"),
    "models/layers.py": (1, "a8a11ff7a6947f52"),
    "models/embeddings.py": (1, "dfddeb4096bfdac6"),
    "models/mlp.py": (1, "c857cddeedc1997f"),
    "models/ft_transformer.py": (1, "5ccfb34f80a45b41"),
    "models/tab_transformer.py": (1, "e219fddaef8945ef"),
    "models/cnn_attention.py": (1, "6cf8a80005feb594"),
    "models/single_head_attention.py": (1, "b9bfac2d74a81526"),
    "models/cross_attention_se.py": (1, "93f74a317bd18c9b"),
    "models/cbam_cnn.py": (1, "a32734c5c2610e7a"),
    "models/cnn_transformer.py": (1, "4408e6ebda0054d1"),
}
# Every model's trial passes through these, whatever its Learner: its configuration resolved, fitted,
# predicted and scored.
ROOTS = ("learners/resolve.py", "learners/trial.py")
# What the compressed variants of an entry run (pruning retrains a torch network): read by an entry that
# asks for variants only, not followed from the trial's path otherwise.
VARIANTS = "learners/compression.py"


def syntax_digest(source: str, ignore: tuple[str, ...] = ()) -> str:
    """sha256 of a module's code: its syntax tree without docstrings, comments, formatting or line
    numbers, and without assignments to the names in ``ignore`` (a version number is not code), written
    out the same way on every Python version (fields that are empty or None, which newer Pythons add or
    leave out, are skipped)."""
    def ignored(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ignore for t in stmt.targets)

    def docless(body: list[ast.stmt]) -> list[ast.stmt]:
        first = body[0] if body else None
        is_doc = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                  and isinstance(first.value.value, str))
        return [s for s in (body[1:] if is_doc else body) if not ignored(s)]

    def text(node: object) -> str:
        if isinstance(node, list):
            return "[" + ",".join(text(n) for n in node) + "]"
        if not isinstance(node, ast.AST):
            return repr(node)
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if name == "body" and isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                value = docless(list(value or []))
            if value is None or value == [] or name in ("ctx", "kind", "type_comment"):
                continue
            fields.append(f"{name}={text(value)}")
        return f"{type(node).__name__}({','.join(fields)})"

    return hashlib.sha256(text(ast.parse(source)).encode()).hexdigest()


@functools.cache
def file_digest(rel: str) -> str:
    """The syntax digest of ``pipeline/<rel>`` as it is on disk now (16 hex digits, as pinned)."""
    return syntax_digest((PACKAGE / rel).read_text(encoding="utf-8"))[:16]


def module_file(module: str) -> str | None:
    """``pipeline.a.b`` → ``a/b.py`` (or ``a/b/__init__.py``), relative to the package; None outside it."""
    parts = module.split(".")
    if parts[0] != "pipeline":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(PACKAGE).as_posix()
    return None


@functools.cache
def imports_of(rel: str) -> tuple[str, ...]:
    """The package's files that ``pipeline/<rel>`` imports, anywhere in it (inside functions too)."""
    tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]  # a submodule by name
        for name in names:
            if (f := module_file(name)) is not None:
                found.add(f)
    return tuple(sorted(found - {rel}))


@functools.cache
def reads(roots: tuple[str, ...], variants: bool = False) -> tuple[str, ...]:
    """The pinned files that these files import, transitively, themselves included (the variants' code
    only where ``variants``)."""
    seen: set[str] = set()
    todo = [*roots, *([VARIANTS] if variants else [])]
    while todo:
        f = todo.pop()
        if f not in seen and (variants or f != VARIANTS):
            seen.add(f)
            todo.extend(imports_of(f))
    return tuple(sorted(seen & set(PINNED)))


@dataclass(frozen=True)
class CodeVersion:
    """The versions of attnbench's own files a model's results depend on, and those of them that differ
    from their pins in this checkout (their digest now)."""

    versions: dict[str, int] = field(default_factory=dict)
    modified: dict[str, str] = field(default_factory=dict)

    def key(self) -> dict[str, str]:
        """What enters a cell's id: the files past version 1, and the modified ones (empty: as before
        versions existed)."""
        out = {f: str(v) for f, v in self.versions.items() if v > 1}
        out.update({f: f"{self.versions.get(f, 1)}+{d}" for f, d in self.modified.items()})
        return dict(sorted(out.items()))

    def stored(self) -> str:
        """The record a planned cell keeps (``suite_cells.code_versions``): every file with its version,
        ``<version>+<digest>`` where it is modified."""
        return json.dumps({f: (f"{v}+{self.modified[f]}" if f in self.modified else v)
                           for f, v in sorted(self.versions.items())}, separators=(",", ":"))

    def words(self) -> str:
        """The modified files in words, for the run's notice."""
        return ", ".join(f"pipeline/{f}" for f in sorted(self.modified))


def comparable(stored: str | None) -> dict[str, str]:
    """A stored record (or None: a row from before versions were stored, version 1 throughout) in the
    form :meth:`CodeVersion.key` gives: files past version 1 or modified. Two records with equal forms
    describe the same code."""
    out: dict[str, str] = {}
    for f, v in (json.loads(stored) if stored else {}).items():
        if str(v) != "1":
            out[f] = str(v)
    return dict(sorted(out.items()))


def _file(path: str | None) -> str | None:
    return module_file(path.partition(":")[0]) if path else None


def code_version(builder: str | None, learner: str | None, *, variants: bool = False,
                 imported: tuple[str, ...] = ()) -> CodeVersion:
    """The code version of a model built by ``builder`` and trained by ``learner`` (import paths), with
    its compressed variants' code where ``variants``. ``imported``: the modules of attnbench that code
    from outside it imports (a user's builder built on our layers reads them too)."""
    own = {_file(builder), _file(learner), *(module_file(m) for m in imported)}
    roots = tuple(sorted({*ROOTS, *(f for f in own if f)}))
    files = reads(roots, variants)
    versions = {f: PINNED[f][0] for f in files}
    modified = {f: file_digest(f) for f in files if file_digest(f) != PINNED[f][1]}
    return CodeVersion(versions, modified)
