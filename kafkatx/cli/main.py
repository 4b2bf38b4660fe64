"""The ``kafkatx`` command: one click group; errors become one line, tracebacks only with -vv."""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from kafkatx import SUPPORTED_KAFKA, __version__
from kafkatx.cli.exit_status import (
    EVIDENCE,
    EXIT_INTERNAL,
    EXIT_USAGE,
    INTERNAL,
    USAGE,
    output_format,
    write_error,
)
from kafkatx.cli.output import tolerate_any_encoding
from kafkatx.errors import KafkatxError, MissingPathError

VERSION_MESSAGE = f"%(prog)s %(version)s\n{SUPPORTED_KAFKA}"

# numpy's bundled OpenBLAS starts a thread per core when numpy is imported, and those threads
# spin for ~0.1 CPU-s (measured on 2 cores: `import numpy` 0.20 CPU-s, 0.10 with one thread).
# kafkatx does no linear algebra; a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# A command's imports (numpy, the analysis's modules) create tens of thousands of objects that
# live as long as the process: with Python's default young-generation threshold (700
# allocations) the cyclic GC walked them ~50 times while the command's module loaded, and the
# first collections after it walked them all again (~8-10 ms of a 0.2 s `lso` of a tiny dir).
# Run as the process's command line, the CLI loads a command's module collecting every 100,000
# allocations (as the analysis commands run: cli/analysis_options.py's
# ANALYSIS_GC_THRESHOLD), then moves what it loaded out of the collector's sight
# (``gc.freeze``); the command runs with the threshold it had before. Called in-process with
# an argv (tests, other programs) it leaves the caller's collector alone.
IMPORT_GC_THRESHOLD = (100_000, 50, 100)


# name -> (module, attribute, summary for ``kafkatx --help``). A command's module is imported
# only when that command runs (or its own --help is asked for), so ``kafkatx --help`` and each
# command start without the others' dependencies (the broker, numpy, pyarrow, rich tables).
# tests/test_cli_startup.py checks each summary against its command's own help.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "cluster": ("kafkatx.cli.cluster_cmd", "cluster_command",
        "Topics, partitions, leaders, configs, features, brokers and producer-id "
        "blocks, from a KRaft metadata log (__cluster_metadata-0: the newest snapshot, "
        "then the log after it)."),
    "dump": ("kafkatx.cli.dump_cmd", "dump_command",
        "Decode segment .log, .index, .timeindex, .txnindex, .snapshot and checkpoint "
        "files, and the KRaft metadata log (__cluster_metadata-0 segments, .checkpoint "
        "snapshots, quorum-state)."),
    "groups": ("kafkatx.cli.groups_cmd", "groups_command",
        "Consumer groups' committed offsets and lag, marker-aware, and what holds a "
        "stuck group."),
    "inspect": ("kafkatx.cli.inspect_cmd", "inspect_command",
        "The incident overview: partitions, transactions, LSO vs HW, and findings by "
        "severity."),
    "lso": ("kafkatx.cli.lso_cmd", "lso_command",
        "The last stable offset (LSO) of every partition, and what holds it back."),
    "replay": ("kafkatx.cli.replay_cmd", "replay_command",
        "Replay what a consumer of one partition received, as Kafka's broker and client "
        "decide it."),
    "serve": ("kafkatx.cli.serve_cmd", "serve_command",
        "Run a single-node Kafka-protocol broker that writes a real Kafka log dir."),
    "timeline": ("kafkatx.cli.timeline_cmd", "timeline_command",
        "Every transaction, joined across its coordinator and data partitions."),
    "txn-partition": ("kafkatx.cli.txn_partition_cmd", "txn_partition_command",
        "Print the __transaction_state partition that holds transactional id ID (with "
        "--group, the __consumer_offsets partition of group ID), as the broker computes "
        "it: Utils.abs(ID.hashCode()) % partitions, with Java's String.hashCode over "
        "UTF-16 code units."),
    "verify": ("kafkatx.cli.verify_cmd", "verify_command",
        "Run every check; exit status 1 when any error-severity finding exists, else 0."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is used."""

    freeze_imports = False  # main() of the process's own command line sets it (see above)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        if self.freeze_imports and module not in sys.modules:
            before = gc.get_threshold()
            gc.set_threshold(*IMPORT_GC_THRESHOLD)
            try:
                importlib.import_module(module)
                gc.freeze()
            finally:
                gc.set_threshold(*before)
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, with "did you mean" for a mistyped command."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            close = difflib.get_close_matches(name, COMMANDS, n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint} (kafkatx --help lists them)")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's listing, from the summaries above (no command module imported)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.Command(n, help=COMMANDS[n][2]).get_short_help_str(limit))
                for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafkatx", message=VERSION_MESSAGE)
@click.option("-v", "--verbose", count=True, help="More detail on stderr; -vv shows tracebacks.")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """Forensics for Apache Kafka transaction logs, from copied log dirs, without a cluster.

    Read-only: nothing kafkatx does changes a byte or an mtime of what it inspects.
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose




def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn errors into one line and an exit code."""
    args = global_options_first(sys.argv[1:] if argv is None else argv)
    verbose = _verbosity(args)
    fmt = output_format(args)
    tolerate_any_encoding()
    if argv is None:
        cli.freeze_imports = True
    try:
        cli.main(args=args, prog_name="kafkatx", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("kafkatx: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # every refusal of the command line (click's FileError too) is a usage error
        exc.show()
        write_error(fmt, USAGE, exc.format_message(), EXIT_USAGE, exc)
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except KafkatxError as exc:
        if verbose >= 2:
            raise
        click.echo(f"kafkatx: error: {exc}", err=True)
        kind = USAGE if isinstance(exc, MissingPathError) else EVIDENCE
        write_error(fmt, kind, str(exc), EXIT_USAGE, exc)
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        if verbose >= 2:
            raise
        message = f"{type(exc).__name__}: {exc}"
        click.echo(f"kafkatx: internal error: {message} "
                   "(run with -vv for the traceback and please report it)", err=True)
        write_error(fmt, INTERNAL, message, EXIT_INTERNAL)
        sys.exit(EXIT_INTERNAL)


def global_options_first(args: list[str]) -> list[str]:
    """``-v``/``-vv``/``--verbose`` anywhere on the line (``kafkatx inspect -v DIR`` as
    ``kafkatx -v inspect DIR``): the global options are taken before the command."""
    before: list[str] = []
    rest: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            rest += args[i:]
            break
        verbose = arg == "--verbose" or (arg.startswith("-") and not arg.startswith("--")
                                         and len(arg) > 1 and set(arg[1:]) == {"v"})
        (before if verbose else rest).append(arg)
    return before + rest


def _verbosity(args: list[str]) -> int:
    n = 0
    for a in args:
        if a == "--verbose":
            n += 1
        elif a.startswith("-") and not a.startswith("--") and len(a) > 1 and set(a[1:]) == {"v"}:
            n += len(a) - 1
    return n
