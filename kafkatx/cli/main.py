"""The ``kafkatx`` command: one click group; errors become one line, tracebacks only with -vv."""

from __future__ import annotations

import os
import sys

import click

from kafkatx import SUPPORTED_KAFKA, __version__
from kafkatx.cli.cluster_cmd import cluster_command
from kafkatx.cli.dump_cmd import dump_command
from kafkatx.cli.groups_cmd import groups_command
from kafkatx.cli.inspect_cmd import inspect_command
from kafkatx.cli.lso_cmd import lso_command
from kafkatx.cli.replay_cmd import replay_command
from kafkatx.cli.serve_cmd import serve_command
from kafkatx.cli.timeline_cmd import timeline_command
from kafkatx.cli.txn_partition_cmd import txn_partition_command
from kafkatx.cli.verify_cmd import verify_command
from kafkatx.errors import KafkatxError, MissingPathError

EXIT_UNREADABLE = 1  # data problems: unreadable or undecodable input
EXIT_USAGE = 2  # click's convention: bad options, missing paths, impossible ranges
EXIT_INTERNAL = 3

VERSION_MESSAGE = f"%(prog)s %(version)s\n{SUPPORTED_KAFKA}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafkatx", message=VERSION_MESSAGE)
@click.option("-v", "--verbose", count=True, help="More detail on stderr; -vv shows tracebacks.")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """Forensics for Apache Kafka transaction logs, from copied log dirs, without a cluster.

    Read-only: nothing kafkatx does changes a byte or an mtime of what it inspects.
    """
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose


cli.add_command(dump_command)
cli.add_command(lso_command)
cli.add_command(inspect_command)
cli.add_command(verify_command)
cli.add_command(groups_command)
cli.add_command(replay_command)
cli.add_command(serve_command)
cli.add_command(txn_partition_command)
cli.add_command(timeline_command)
cli.add_command(cluster_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn errors into one line and an exit code."""
    verbose = _verbosity(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="kafkatx", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("kafkatx: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
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
        sys.exit(EXIT_USAGE if isinstance(exc, MissingPathError) else EXIT_UNREADABLE)
    except Exception as exc:
        if verbose >= 2:
            raise
        click.echo(f"kafkatx: internal error: {type(exc).__name__}: {exc} "
                   "(run with -vv for the traceback and please report it)", err=True)
        sys.exit(EXIT_INTERNAL)


def _verbosity(args: list[str]) -> int:
    n = 0
    for a in args:
        if a == "--verbose":
            n += 1
        elif a.startswith("-") and not a.startswith("--") and len(a) > 1 and set(a[1:]) == {"v"}:
            n += len(a) - 1
    return n
