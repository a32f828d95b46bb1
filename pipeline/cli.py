"""The ``attnbench`` command: run, fetch, report, query, models, suites."""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pipeline.catalog import cmd_models, cmd_suites, compress_problems, weights_problems
from pipeline.clock import hms
from pipeline.defaults import DEFAULT_DB, DEFAULT_REPORTS, db_option
from pipeline.errors import AttnbenchError, ClusterLost
from pipeline.interrupts import sigterm_as_interrupt
from pipeline.records import RunStatus
from pipeline.reference_commands import add_price_parser, cmd_answer, cmd_reference


def _add_openml(p: argparse.ArgumentParser) -> None:
    p.add_argument("--openml-cache", default=os.environ.get("ATTNBENCH_OPENML_CACHE"),
                   help="OpenML client cache directory (default: the client's own, ~/.cache/openml)")
    p.add_argument("--openml-server", default=os.environ.get("ATTNBENCH_OPENML_SERVER"),
                   help="OpenML API server (default: the client's, https://www.openml.org/api/v1/xml)")


def _suite(path: str | None):
    from pipeline.spec import default_suite_path, load_suite

    return load_suite(path or default_suite_path())


def _reports_dir(path: str) -> Path:
    """The report folder, checked before any work (a run must not end unable to write it) and created
    only when the report is written: a refused command leaves no folder behind."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise AttnbenchError(f"--reports {path}: a file is in the way; give a folder")
    folder = out
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise AttnbenchError(f"--reports {path}: a file ({folder}) is in the way; give a folder")
    try:  # a probe that leaves nothing behind: a folder made and removed where the report would go
        os.rmdir(tempfile.mkdtemp(prefix=".attnbench-probe-", dir=folder))
    except OSError as err:
        raise AttnbenchError(f"--reports {path}: cannot write there ({err.strerror or err})") from None
    return out


def cmd_run(args: argparse.Namespace) -> int:
    import time

    from pipeline import runner
    from pipeline.data.openml_source import configure_openml

    stop_at = time.monotonic() + args.time_limit if args.time_limit else None  # from the command's start
    suite = _suite(args.suite)
    if args.dry_run:
        return _dry_run(suite, args)
    compress = compress_problems(suite) + weights_problems(suite)
    if compress:
        raise AttnbenchError(f"{suite.source_path or suite.name}: {compress[0]}")
    if not args.no_report:
        _reports_dir(args.reports)
    configure_openml(args.openml_cache, args.openml_server)
    args.interrupted = ("interrupted; completed cells are saved — run the same command again to resume")
    against = None
    if args.against:
        from pipeline.data.references import load

        against = load(args.against, "--against")
    try:
        summary = runner.run(suite, args.db, force=args.force, retry_failed=args.retry_failed, address=args.address,
                             num_cpus=args.num_cpus, num_gpus=args.num_gpus, argv=sys.argv,
                             predictions=not args.no_predictions, against=against, on_cluster_lost=_cluster_lost,
                             stop_at=stop_at, cheapest_first=args.cheapest_first)
    except ClusterLost as err:
        _cluster_lost(err)
    print(f"run {summary.run_id}: {summary.n_done} cells done, {summary.n_failed} failed, "
          f"{summary.n_skipped} already done before")
    if not args.no_report:
        from pipeline.report.pages import write_report

        index = write_report(args.db, args.reports)
        print(f"report: {index.resolve()}")
    if summary.status is RunStatus.STOPPED:
        if summary.shortest_left is not None and not summary.started_any:
            print(f"attnbench: no trial left would end within the time limit ({hms(args.time_limit)}): the shortest "
                  f"is expected to take {hms(summary.shortest_left)}; give a longer --time-limit", file=sys.stderr)
            return EXIT_STOPPED
        ended = "before its time limit, no trial left ending in time" if summary.shortest_left is not None else \
            "at its time limit"
        print(f"attnbench: stopped {ended} ({hms(args.time_limit)}) with {summary.suite_missing} cells of suite "
              f"{suite.name!r} to run; completed cells are saved — `{_resume_command()}` resumes the run",
              file=sys.stderr)
        return EXIT_STOPPED
    if summary.suite_failed:
        again = retry_command(args)
        print(f"attnbench: {summary.suite_failed} cell{'s' if summary.suite_failed != 1 else ''} of suite "
              f"{suite.name!r} failed (errors: attnbench query \"SELECT * FROM failures\"{db_option(args.db)}); "
              f"`{again}` runs them again", file=sys.stderr)
    return 0 if summary.suite_failed == 0 or args.allow_failures else 3


def _dry_run(suite: Any, args: argparse.Namespace) -> int:
    from pipeline import dry_run
    from pipeline.data.openml_source import configure_openml
    from pipeline.data.references import load, shipped

    configure_openml(args.openml_cache, args.openml_server)
    against = load(args.against, "--against") if args.against else None
    names = args.price_from if args.price_from is not None else shipped()
    refs = [load(n, "--price-from") for n in names]
    print(dry_run.text(dry_run.dry_run(suite, args.db, against=against, price_from=refs, ratios=dict(args.price_ratio or []),
                                      num_cpus=args.num_cpus)),
          end="")
    return 0


EXIT_CLUSTER_LOST = 4
EXIT_STOPPED = 5  # `run --time-limit` came before every cell ran: the same command resumes


def retry_command(args: argparse.Namespace) -> str:
    """The command that runs a suite's failed cells again: on the same file, and against the same reference
    (without it the cells would be planned on the default protocol's splits, not the reference's)."""
    return " ".join(["attnbench run", args.suite or "", *(["--db", args.db] if args.db != DEFAULT_DB else []),
                     *(["--against", args.against] if args.against else []), "--retry-failed"]).replace("  ", " ")


def _resume_command() -> str:
    """The command line that started this run: run again, it resumes (done cells are skipped)."""
    import shlex

    return shlex.join(["attnbench", *sys.argv[1:]])


def _cluster_lost(err: ClusterLost) -> NoReturn:
    """One line, and the process ends now with EXIT_CLUSTER_LOST: what was committed is on disk (DuckDB
    commits are durable), and Ray's own exit handler, its cluster gone, would wait for it (seconds, or a
    minute and then status 1 with its own messages). Called from the engine's watch thread too, when
    the run waits inside a call to Ray that cannot return."""
    print(f"attnbench: {err}; completed cells are saved — `{_resume_command()}` resumes the run", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_CLUSTER_LOST)


def cmd_fetch(args: argparse.Namespace) -> int:
    from pipeline.data import ingest, sources
    from pipeline.data.openml_source import configure_openml
    from pipeline.data.store import Store

    suite = _suite(args.suite)
    configure_openml(args.openml_cache, args.openml_server)
    store = Store(args.db)
    for spec in sources.expand(suite.datasets):
        ds = ingest.ingest(store, spec, suite.protocol, suite.seed, refresh=args.refresh)
        print(f"{ds.name}: {len(ds.y)} rows, {ds.features.shape[1]} features, {ds.task_type}"
              f"{', official folds' if ds.has_official_folds else ''}")
    from pipeline.data.views import install

    install(store)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pipeline.data.store import Store
    from pipeline.report.pages import write_report

    Store(args.db, create=False)  # a missing results file is refused before anything is written
    index = write_report(args.db, _reports_dir(args.reports))
    print(f"report: {index.resolve()}")
    if args.open:
        import webbrowser

        webbrowser.open(index.resolve().as_uri())
    return 0


SHOWN_CHOICES = 10  # a merge lists this many of its choices; the merge_choices table holds them all


def _several(n: int) -> str:
    return f"; {n} held by several inputs, the same result (copied once)" if n else ""


def cmd_merge(args: argparse.Namespace) -> int:
    from pipeline.data.merge import merge

    rep = merge(args.files, args.db)
    if not rep.written:
        print(f"merge: nothing new for {args.db} ({rep.cells_already} cells already there); the file is unchanged")
        return 0
    print(f"merge → {Path(args.db).resolve()}: {rep.cells_added} cells added, {rep.cells_replaced} replaced, "
          f"{rep.cells_already} already there{_several(rep.cells_in_several)}; {rep.runs_added} runs, "
          f"{rep.datasets_added} datasets added; "
          f"suites: {', '.join(rep.suites) or '—'}")
    for c in rep.choices[:SHOWN_CHOICES]:
        print(f"  {c.label}: kept {c.kept} over {c.dropped} ({c.why})")
    if len(rep.choices) > SHOWN_CHOICES:
        print(f"  … and {len(rep.choices) - SHOWN_CHOICES} more cells both files had (the merge_choices table lists "
              "every choice and why)")
    if not args.no_report:
        from pipeline.report.pages import write_report

        print(f"report: {write_report(args.db, _reports_dir(args.reports)).resolve()}")
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from pipeline.query import run_query

    run_query(args.db, args.sql, out=args.out, max_rows=args.max_rows)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from pipeline.report.serve import serve

    if args.db is not None:  # rewrite the report first only when asked to
        from pipeline.data.store import Store

        Store(args.db, create=False)
        _reports_dir(args.reports)
    args.interrupted = "stopped serving"
    serve(args.reports, args.port, db=args.db)
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    from pipeline.data.openml_source import configure_openml
    from pipeline.pin import pin_suite

    configure_openml(args.openml_cache, args.openml_server)
    out = pin_suite(args.suite_id, args.out or f"suites/openml-{args.suite_id}{'-lite' if args.lite else ''}.yaml",
                    lite=args.lite)
    print(f"pinned OpenML suite {args.suite_id} → {out}")
    return 0


def cmd_checksums(args: argparse.Namespace) -> int:
    from pipeline.pin import pin_checksums
    from pipeline.spec import default_suite_path

    paths = list(args.files) or sorted(str(p) for p in default_suite_path().parent.glob("*.yaml"))
    for path in paths:
        for name, checksum in pin_checksums(path):
            print(f"{path}: {name}: checksum {checksum}")
    return 0


class Parser(argparse.ArgumentParser):
    """argparse, with a bad option reported the way every other error is: one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"attnbench: error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def _pair(text: str) -> tuple[str, str]:
    """An argparse type: ``ENTRY=BASE``, two entry keys."""
    entry, _, base = text.partition("=")
    if not (entry and base):
        raise argparse.ArgumentTypeError(f"{text!r}: give ENTRY=BASE, e.g. tabm=ft_transformer")
    return entry, base


def duration(text: str) -> float:
    """An argparse type: a duration in seconds (``2h``, ``1h45m``, ``90m``, ``5400``)."""
    from pipeline.clock import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def count(low: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} {what}: give at least {low}")
        return value
    return parse


def _version() -> str:
    """The installed distribution's version (the one place it is written is pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnbench")
    except PackageNotFoundError:  # run from a checkout that was never installed
        from pipeline import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="attnbench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    parser.add_argument("--version", action="version", version=f"attnbench {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a suite (default: the offline smoke suite) and write the report")
    p.add_argument("suite", nargs="?", help="suite YAML (default: suites/smoke.yaml)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"results DuckDB file (default: {DEFAULT_DB})")
    p.add_argument("--reports", default=DEFAULT_REPORTS, help="where to write the HTML report")
    p.add_argument("--force", action="store_true", help="re-run cells that are already done")
    p.add_argument("--retry-failed", action="store_true", help="re-run cells that failed")
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS"),
                   help="Ray cluster address (default: $RAY_ADDRESS, else start a local Ray)")
    p.add_argument("--num-cpus", type=count(1, "CPUs"), default=None, help="CPUs for a local Ray (default: all)")
    p.add_argument("--num-gpus", type=count(0, "GPUs"), default=None,
                   help="GPUs for a local Ray (default: detected)")
    p.add_argument("--no-report", action="store_true", help="skip writing the HTML report")
    p.add_argument("--allow-failures", action="store_true", help="exit 0 even when cells failed")
    p.add_argument("--no-predictions", action="store_true",
                   help="do not keep the trials' validation and test predictions (no post-hoc ensembles then)")
    p.add_argument("--time-limit", type=duration, metavar="DURATION",
                   help="stop the run after this long (2h, 1h45m, 90m), starting no trial its entry's earlier trials "
                        "say would outlast it; completed cells are saved and the same command resumes (exit 5)")
    p.add_argument("--cheapest-first", action="store_true",
                   help="take the cells cheapest first (default: longest first): in a run that goes in chunks, the "
                        "first chunks finish the most cells")
    p.add_argument("--dry-run", action="store_true",
                   help="print the cells it would run and their price (trial-hours per entry and size, and the wall "
                        "time on this machine) from finished cells of the same entries; run nothing, write nothing")
    p.add_argument("--price-from", action="append", metavar="REF",
                   help="with --dry-run: price from this reference or results file (repeatable; default: every "
                        "shipped reference, and the --db file)")
    p.add_argument("--price-ratio", type=_pair, action="append", metavar="ENTRY=BASE",
                   help="with --dry-run: price ENTRY's cells at sizes it has not run by its trial time over BASE's "
                        "where both ran, times BASE's price there, instead of scaling its own by rows (repeatable)")
    p.add_argument("--against", metavar="REF",
                   help="run only this suite's models, on the splits of reference results REF (a shipped name such "
                        "as study-lite, a reference folder or a results file), and report them beside its models")
    _add_openml(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("fetch", help="fetch a suite's datasets and splits into the database")
    p.add_argument("suite", nargs="?")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--refresh", action="store_true", help="fetch again even when stored")
    _add_openml(p)
    p.set_defaults(func=cmd_fetch)

    p = sub.add_parser("report", help="write the HTML leaderboards from the database")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--reports", default=DEFAULT_REPORTS)
    p.add_argument("--open", action="store_true", help="open the index in a browser")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("merge", help="merge results files of several runs or machines into one (--db), with its report")
    p.add_argument("files", nargs="+", help="results files to merge (only read, never modified)")
    p.add_argument("--db", required=True, help="the merged results file (created, or added to)")
    p.add_argument("--reports", default=DEFAULT_REPORTS, help="where to write the merged report")
    p.add_argument("--no-report", action="store_true", help="skip writing the HTML report")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("query", help="run read-only SQL on the results (tables: results, trials, ...)")
    p.add_argument("sql")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--out", help="write the answer to a .csv or .parquet file instead of printing it")
    p.add_argument("--max-rows", type=int, default=200)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("serve", help="serve the HTML report folder on 127.0.0.1 (with --db: rewritten from it first)")
    p.add_argument("--db", default=None, help="rewrite the report from this results file before serving it")
    p.add_argument("--reports", default=DEFAULT_REPORTS)
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("reference", help="reference results: `reference list` (shipped ones), `reference add DB NAME`")
    p.set_defaults(func=cmd_reference, reference_command="list")
    refs = p.add_subparsers(dest="reference_command")
    refs.add_parser("list", help="the shipped reference results").set_defaults(func=cmd_reference)
    add = refs.add_parser("add", help="add the cells of a results file a reference lacks as its next chunk")
    add.add_argument("db", help="the results file")
    add.add_argument("name", help="the reference's name (a folder under references/)")
    add.add_argument("--suite", help="the suite to add, where the file holds several")
    add.add_argument("--into", help="where references live (default: the checkout's references/)")
    add.add_argument("--no-predictions", action="store_true", help="leave the trials' predictions out")
    add.add_argument("--full-curves", action="store_true",
                     help="keep every point of the trials' learning curves (default: at most 128 each)")
    add.add_argument("--all-maps", action="store_true",
                     help="keep the attention maps of every dataset (default: of those with at most 64 features)")
    add.add_argument("--full-precision", action="store_true",
                     help="keep every digit of the curves' and attention maps' numbers (default: 4 significant)")
    add.add_argument("--note", help="a line on how the chunk was run")
    add.set_defaults(func=cmd_reference)
    export = refs.add_parser("export", help="a reference's results as a results file of its own (to report or query)")
    export.add_argument("name", help="a shipped reference's name, or a reference folder")
    export.add_argument("--db", required=True, help="the results file to write (a new one)")
    export.set_defaults(func=cmd_reference)

    p = sub.add_parser("answer", help="the answer in Markdown, from a reference's standings (what docs/STUDY.md holds)")
    p.add_argument("ref", metavar="REF", help="a shipped reference's name, a reference folder, or a results file")
    p.add_argument("--margin", type=float, default=None, metavar="M",
                   help="only the verdict counts, read at the equivalence margin M (the headline's is the "
                   "pre-registered 0.005; 0.01 is the field's usual one)")
    p.add_argument("--with", dest="with_", metavar="FILE",
                   help="instead: your results file's datasets, each size beside REF's at its nearest size, and the "
                        "by-size lines over REF's datasets and yours (docs/YOUR-DATA.md)")
    p.set_defaults(func=cmd_answer)

    add_price_parser(sub)

    p = sub.add_parser("models", help="list the models: kind, where each comes from, what it can do")
    p.add_argument("suite", nargs="?", help="also list the models this suite file declares by import path")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("suites", help="check suite files (`suites check [FILES]`) or pin an OpenML suite (`suites pin ID`)")
    p.set_defaults(func=cmd_suites, files=[])
    suites = p.add_subparsers(dest="suites_command")
    check = suites.add_parser("check", help="validate suite files (default: the checkout's suites/*.yaml)")
    check.add_argument("files", nargs="*")
    check.set_defaults(func=cmd_suites)
    pin = suites.add_parser("pin", help="resolve an OpenML suite and write a suite file with its tasks pinned")
    pin.add_argument("suite_id", help="OpenML suite id or alias, e.g. 99 or OpenML-CC18")
    pin.add_argument("--out", help="where to write (default: suites/openml-ID.yaml)")
    pin.add_argument("--lite", action="store_true", help="one fold and fewer trials: a quick look")
    _add_openml(pin)
    pin.set_defaults(func=cmd_pin)
    sums = suites.add_parser("checksum", help="write each file entry's rows checksum into the suite files "
                             "(default: the checkout's suites/*.yaml) where they give none")
    sums.add_argument("files", nargs="*")
    sums.set_defaults(func=cmd_checksums)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # A line at a time even into a pipe or a log file (`ray job logs`, tee): progress is only useful live.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        with sigterm_as_interrupt():  # from the first line to the last, not only while cells run
            return int(args.func(args))
    except AttnbenchError as err:
        print(f"attnbench: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attnbench: {getattr(args, 'interrupted', 'interrupted')}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`attnbench reference list | head -1`): stop, as
        # Unix tools do, without a traceback; a run it stopped has recorded so in its runs row
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit
        return 141


if __name__ == "__main__":
    sys.exit(main())
