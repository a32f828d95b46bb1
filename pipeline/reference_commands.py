"""The commands that read shipped results: ``attnbench reference list | add | export``, ``attnbench answer`` and
``attnbench price``, each on a reference (a shipped name or a folder) or a results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipeline.defaults import db_option
from pipeline.errors import AttnbenchError


def cost_text(cost: dict[str, Any]) -> str:
    """A chunk's cost (``chunks.chunk_cost``) in a line: trial-hours in all, then per training size."""
    def size(name: str, e: dict[str, Any]) -> str:
        rows = f"{int(name):,} rows" if name.isdigit() else f"{name} rows"
        bad = ", ".join(f"{n} {status}" for status, n in e["not_ok"].items())
        return f"{rows}: {e['cells']:,} cells{f' ({bad})' if bad else ''}, {e['trial_hours']:.2f} h"
    parts = [size(name, e) for name, e in cost["sizes"].items()]
    if cost["searching_trial_hours"]:
        parts.append(f"searches not finished: {cost['searching_trial_hours']:.2f} h")
    return f"cost: {cost['trial_hours']:.2f} trial-hours" + (f" ({'; '.join(parts)})" if parts else "")


def cmd_reference(args: argparse.Namespace) -> int:
    from pipeline.data import chunks, references

    if args.reference_command == "add":
        added = chunks.add_chunk(args.db, args.name, suite=args.suite, root=Path(args.into) if args.into else None,
                                 predictions=not args.no_predictions, note=args.note or "",
                                 curve_points=None if args.full_curves else chunks.CURVE_POINTS,
                                 map_features=None if args.all_maps else chunks.MAP_FEATURES,
                                 digits=None if args.full_precision else chunks.DIGITS)
        total = sum(mb for _, mb in added.files)
        left = (f", {added.maps_left_out} attention maps of datasets over {added.map_features} features left out"
                if added.maps_left_out else "")
        traits = f" and the characteristics of {added.traits} datasets' rows" if added.traits else ""
        traits += f" and the ended runs {', '.join(added.ended)} (shipped while running)" if added.ended else ""
        traits += (f" and {added.searching} trial{'s' if added.searching != 1 else ''} of searches not finished yet"
                   if added.searching else "")
        traits += (f" and {added.unplanned:,} cell{'s' if added.unplanned != 1 else ''} its plan no longer holds "
                   "(planned by an earlier chunk)" if added.unplanned else "")
        print(f"reference {args.name}: {added.chunk} with {added.cells} cell{'s' if added.cells != 1 else ''}{traits} → {added.folder} ({total:.1f} MB"
              f"{'' if added.predictions else ', no predictions'}"
              f"{f', learning curves of at most {added.curve_points} points' if added.curve_points else ''}"
              f"{f', curves and maps to {added.digits} significant digits' if added.digits else ''}{left})")
        if added.meta_changes:
            print(f"  reference.json, for every chunk it holds now: {'; '.join(added.meta_changes)}")
        print(f"  {cost_text(added.cost)} (its chunk.json's cost)")
        return 0
    if args.reference_command == "export":
        return _export_reference(args.name, args.db)
    names = references.shipped()
    if not names:
        print(f"no reference results in {references.shipped_root()}")
    for name in names:
        ref = references.load(name)
        n = ref.df("SELECT count(*) AS n, count(DISTINCT dataset) AS d, count(DISTINCT model) AS m, "
                   "(SELECT count(*) FROM ref_suite_cells) AS planned FROM ref_results "
                   "WHERE cell_id IN (SELECT cell_id FROM ref_suite_cells)")
        print(f"{name}: suite {ref.suite!r}, {n.n[0]:,} of {n.planned[0]:,} planned cells, {n.d[0]} dataset"
              f"{'s' if n.d[0] != 1 else ''}, {n.m[0]} model{'s' if n.m[0] != 1 else ''} — attnbench run YOUR_SUITE.yaml --against {name}")
        print(f"  code: {_code_words(ref.code_versions())}")
        ref.close()
    return 0


def _code_words(code: dict[str, list[dict[str, str]]]) -> str:
    """A reference's code versions in words: version 1 of attnbench's files, or each model's others."""
    other = {m: forms for m, forms in code.items() if any(forms)}
    if not other:
        return f"version 1 of every attnbench file its {len(code)} models read (pipeline/models/versions.py)"
    return "; ".join(f"{m}: " + " / ".join(", ".join(f"{f} {v}" for f, v in form.items()) or "version 1"
                                            for form in forms) for m, forms in sorted(other.items()))


def _results_file(ref: str, tmp: str, prefix: str = "") -> str:
    """A results file for REF: itself where it is one (``.duckdb``), else the reference (a shipped name or a
    folder) exported into ``tmp`` (as ``prefix`` + its name: two references of one name stay two files)."""
    from pipeline.data import references

    if Path(ref).suffix == ".duckdb":
        if not Path(ref).is_file():
            raise AttnbenchError(f"no results file {ref}")
        return ref
    db = str(Path(tmp) / f"{prefix}{Path(ref).name}.duckdb")
    references.export_file(ref, db)
    return db


def cmd_answer(args: argparse.Namespace) -> int:
    """The answer's Markdown from a reference (a shipped name, a folder, or a results file)."""
    import tempfile

    from pipeline.report import across_text
    from pipeline.report.answer_text import largest, markdown, pairs
    from pipeline.report.margin_text import at_margin

    if args.margin is not None and not 0 <= args.margin < 1:
        raise AttnbenchError(f"--margin {args.margin:g} is not a margin of accuracy or R² (0 to 1)")
    with tempfile.TemporaryDirectory() as tmp:
        db = _results_file(args.ref, tmp)
        if args.margin is None and args.with_ is None:  # the across-datasets fits this data lacks, stored in the file
            across_text.refresh(db, say=lambda line: print(line, file=sys.stderr, flush=True))
        if args.with_ is not None:
            from pipeline.report import with_text

            mine = _results_file(args.with_, tmp, "with-")
            print(with_text.markdown(db, mine, args.ref, args.with_), end="")
        elif args.margin is not None:
            p = pairs(db)
            print(at_margin(p, largest(p), args.margin), end="")
        else:
            print(markdown(db, Path(args.ref).name if db == args.ref else args.ref), end="")
    return 0


def cmd_price(args: argparse.Namespace) -> int:
    """A pilot's price of the entries a study does not run yet, scaled by the study's own cost."""
    import tempfile

    from pipeline.report.price_text import markdown

    with tempfile.TemporaryDirectory() as tmp:
        pilot, study = _results_file(args.pilot, tmp, "pilot-"), _results_file(args.study, tmp, "study-")
        try:
            print(markdown(pilot, study, args.pilot, args.study, base=args.base, extend=args.extend,
                           race=dict(args.race or []), budget=args.budget, cut_sizes=args.cut, entries=args.entries,
                           so_far=args.so_far, thin=args.thin),
                  end="")
        except ValueError as e:
            raise AttnbenchError(str(e)) from None
    return 0


def _export_reference(name: str, db: str) -> int:
    """A shipped reference (or a reference folder) as a results file of its own, to report or query."""
    from pipeline.data import references

    if Path(db).exists():
        raise AttnbenchError(f"{db} exists: export a reference into a new file (it would mix with what is there)")
    n = references.export_file(name, db)
    print(f"reference {name}: {n:,} cell{'s' if n != 1 else ''} → {db}; its report: attnbench report{db_option(db)}")
    return 0


def add_price_parser(sub: Any) -> None:
    """``attnbench price``'s arguments, on the command line's subcommands ``sub``."""
    p = sub.add_parser("price", help="price the entries a study does not run yet, from a pilot's cells (trial-hours)")
    p.add_argument("pilot", metavar="PILOT", help="the pilot: a shipped reference's name, a folder, or a results file")
    p.add_argument("study", metavar="STUDY", help="the study it prices for (the same three forms)")
    p.add_argument("--base", default="ft_transformer", help="the study's entry the pilot also ran (default: ft_transformer)")
    p.add_argument("--extend", type=int, action="append", metavar="ROWS",
                   help="also price this training size the pilot did not run, by each entry's ratio at its largest")
    p.add_argument("--race", type=_race, action="append", metavar="ROWS=K",
                   help="at ROWS only K attention entries run (a race's leaders): priced as the K dearest there")
    p.add_argument("--budget", type=float, metavar="HOURS",
                   help="cut datasets by the study's stated rule while the plan projects more trial-hours than this "
                        "(with --so-far: the plan as it stands against it, at what its cells cost, and cut again if over)")
    p.add_argument("--entry", action="append", metavar="NAME", dest="entries",
                   help="price this entry (default: every one of the pilot's the study does not hold yet)")
    p.add_argument("--cut", type=int, action="append", metavar="ROWS",
                   help="a size the cut may thin, in the order given (default: the --extend sizes, then the pilot's largest)")
    p.add_argument("--so-far", action="store_true",
                   help="instead: what the study's cells of these entries cost so far against that price, and the rest")
    p.add_argument("--thin", action="store_true",
                   help="with --so-far and --budget: over the budget, thin the datasets the plan keeps now (the same "
                        "steps), rather than cut from every dataset")
    p.set_defaults(func=cmd_price)


def _race(text: str) -> tuple[int, int]:
    """An argparse type: ``ROWS=K``, a training size and how many entries run there."""
    rows, _, k = text.partition("=")
    if not (rows.isdigit() and k.isdigit() and int(k) > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: give ROWS=K, e.g. 10000=3")
    return int(rows), int(k)
