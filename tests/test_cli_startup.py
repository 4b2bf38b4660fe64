"""CLI start-up: commands are imported only when used (no Kafka rule here: process start-up).

``kafkatx --help`` lists every command without importing any command module, and a command
does not import the others' dependencies (the broker and its protocol library for ``lso``).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.cli.main import COMMANDS, cli

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    code = ("import json, sys\nfrom kafkatx.cli.main import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_help_imports_no_command_module() -> None:
    loaded = _modules_after(["--help"])
    assert not {m for m in loaded if m.startswith("kafkatx.cli.") and m.endswith("_cmd")}
    for heavy in ("numpy", "pyarrow", "rich.table", "kio", "kafkatx.broker", "construct"):
        assert heavy not in loaded, heavy


def test_lso_does_not_load_the_broker() -> None:
    loaded = _modules_after(["lso", "fixtures/logdir", "--format", "json"])
    assert "kafkatx.cli.lso_cmd" in loaded
    for other in ("kafkatx.cli.serve_cmd", "kafkatx.cli.dump_cmd", "kafkatx.broker.protocol.server",
                  "kio", "pyarrow"):
        assert other not in loaded, other


def test_version_imports_no_library() -> None:
    """``kafkatx --version`` is click and the package's own two constants, nothing else."""
    loaded = _modules_after(["--version"])
    for heavy in ("numpy", "rich", "construct", "crc32c", "kafkatx.analysis",
                  "kafkatx.engines", "kafkatx.storage"):
        assert heavy not in loaded, heavy
    # The JSON writers' RawJsonList (a class holding a string, importing nothing) is the one
    # format module the CLI's output helpers need at start-up.
    assert {m for m in loaded if m.startswith("kafkatx.formats")} <= {
        "kafkatx.formats", "kafkatx.formats.raw_json"}


def test_lso_imports_only_what_it_draws() -> None:
    """Start-up of ``lso --format json``: no progress bar or stderr console unless drawn, no
    numpy.ma (np.unique's), and no crc32c package where the C extension computes CRCs."""
    from kafkatx.formats.batchscan import HAVE_EXTENSION

    loaded = _modules_after(["lso", "fixtures/logdir/payments-0", "--format", "json"])
    assert "numpy" in loaded  # the run happened
    lazy = ["rich.progress", "rich.live", "numpy.ma", "pyarrow", "kio"]
    for name in lazy + (["crc32c"] if HAVE_EXTENSION else []):
        assert name not in loaded, name


# Loaded only when the evidence holds what they decode: a KRaft metadata log (the cluster
# image and its joins), a __consumer_offsets partition (the group records), Spark.
ONLY_WHEN_NEEDED = ("kafkatx.semantics.cluster_metadata", "kafkatx.analysis.cluster_view",
                    "kafkatx.analysis.cluster_joins", "kafkatx.storage.metadata_log",
                    "kafkatx.formats.metadata_records", "kafkatx.semantics.leader_high_watermark",
                    "kafkatx.engines.partition_facts", "kafkatx.formats.consumer_offsets",
                    "kafkatx.formats.group_records", "kafkatx.engines.spark", "pyspark")


def test_lso_of_a_data_partition_loads_no_decoder_it_does_not_use() -> None:
    """``lso`` of a data partition, the common path, stays lazy: each module above becoming an
    eager import again fails here (start-up is measured in benchmarks/startup.py)."""
    loaded = _modules_after(["lso", "fixtures/logdir/payments-0", "--format", "json"])
    assert "kafkatx.engines.local" in loaded  # the inspection ran
    assert not [name for name in ONLY_WHEN_NEEDED if name in loaded]


# Loaded by ``lso`` only when the evidence or the flags need them: the coordinator's partitions
# (its record decoders and view), a timeline, the restart view (the model of Kafka's log load),
# damage, legacy entries or --validate-records (the exact construct parsers), --manifest, URIs
# to list in parallel (concurrent.futures imports logging); rich only to draw (a table,
# warnings). A clean v2 partition reads its .txnindex, .snapshot and index files with
# ``struct`` and its batches in C.
COMMON_PATH_LAZY = ("construct", "kafkatx.formats.primitives", "kafkatx.formats.record_batch",
                    "kafkatx.formats.segment", "kafkatx.formats.legacy_message",
                    "kafkatx.formats.compression", "kafkatx.formats.record_validation",
                    "kafkatx.formats.transaction_log", "kafkatx.semantics.transaction_states",
                    "kafkatx.analysis.coordinator", "kafkatx.analysis.timeline",
                    "kafkatx.analysis.restart_view", "kafkatx.semantics.log_load",
                    "kafkatx.storage.manifest", "concurrent.futures", "rich")


def test_lso_of_a_data_partition_is_the_columnar_path_only() -> None:
    """``lso --format json`` of a clean data partition: each module above becoming an eager
    import again fails here."""
    loaded = _modules_after(["lso", "fixtures/logdir/payments-0", "--format", "json"])
    assert "kafkatx.engines.local" in loaded and "kafkatx.formats.txn_index" in loaded
    assert not [name for name in COMMON_PATH_LAZY if name in loaded]


def test_lso_piped_table_loads_no_rich_and_no_parser() -> None:
    """The piped table of a data partition, its "ages at" line (whose ``:MM:`` is no emoji
    code) and its footer are written plainly (``StdoutLines``, kafkatx.cli.plain_table): rich
    (or a parser) becoming an eager import there fails here. The other side: a terminal's
    colours (``FORCE_COLOR``) are drawn by rich."""
    loaded = _modules_after(["lso", "fixtures/logdir/payments-0"])
    assert "kafkatx.cli.plain_table" in loaded  # the table was written
    assert not [name for name in loaded if name.split(".")[0] == "rich"]
    assert not [name for name in COMMON_PATH_LAZY if name in loaded]
    coloured = _modules_after(["lso", "fixtures/logdir/payments-0"], {"FORCE_COLOR": "1"})
    assert {"rich.console", "rich.table"} <= coloured


# Loaded by ``dump --records`` only when a file needs them: construct's parsers (legacy entries,
# compressed or control batches other than markers, batches the C formatter refuses), the
# codecs, and the decoders of the coordinators' and KRaft's records and of every other kind of
# file. A clean segment of uncompressed v2 batches is the C scan and formatter alone.
DUMP_RECORDS_LAZY = ("construct", "kafkatx.formats.record_batch", "kafkatx.formats.segment",
                     "kafkatx.formats.legacy_message", "kafkatx.formats.record_decode",
                     "kafkatx.formats.compression", "cramjam", "zstandard",
                     "kafkatx.formats.consumer_offsets", "kafkatx.formats.transaction_log",
                     "kafkatx.formats.metadata_records", "kafkatx.formats.kafka_messages",
                     "kafkatx.formats.offset_index", "kafkatx.formats.time_index",
                     "kafkatx.formats.quorum_state")
PLAIN_SEGMENT = "fixtures/logdir/payments-1/00000000000000000000.log"


def test_dump_records_jsonl_of_a_data_segment_loads_no_parser_and_no_rich() -> None:
    """``dump --records -f jsonl`` of a clean data segment: each module above, or rich,
    becoming an eager import again fails here."""
    loaded = _modules_after(["dump", "--records", "-f", "jsonl", PLAIN_SEGMENT])
    assert "kafkatx.analysis.dump_lines" in loaded  # the dump ran
    assert not [name for name in (*DUMP_RECORDS_LAZY, "rich") if name in loaded]


def test_dump_records_piped_table_of_a_data_segment_loads_no_parser_and_no_rich() -> None:
    """The piped table of the same segment: no parser either, and no rich -- its heading
    and the C function's padded rows are written plainly (the table's Python renderer,
    kafkatx.cli.render, neither)."""
    loaded = _modules_after(["dump", "--records", PLAIN_SEGMENT])
    assert "kafkatx.analysis.dump_lines" in loaded
    assert not [name for name in (*DUMP_RECORDS_LAZY, "rich", "kafkatx.cli.render")
                if name in loaded]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1/ :-_.[]\\\té中"), max_size=30)
       | st.text(alphabet="x/", min_size=200, max_size=230)
       | st.sampled_from(["a:smile:b", "seg:00:01.log", ":+1:", "a[b]c", "[bold]x",
                          "x\\[y", " lead", "trail "]),
       st.sampled_from(["batch", "index entry", "time index entry"]))
def test_a_plain_heading_is_riches(text: str, note: str) -> None:
    """``StdoutLines.heading`` on a pipe writes rich's bytes for dump's ``[bold]FILE[/]
    [dim](KIND)[/]`` line, whether it writes them itself or through rich."""
    from kafkatx.cli.output import StdoutLines, stdout_console

    assert _written(stdout_console(io.StringIO()), "print", f"[bold]{text}[/] [dim]({note})[/]") \
        == _written(StdoutLines(io.StringIO()), "heading", text, note)


def _written(out: object, method: str, *args: object, **options: object) -> str:
    """What ``out.method(*args, **options)`` writes to ``out.file`` (a StringIO), or the name
    of the error it raises (rich's markup error: a plain writer leaves it to rich)."""
    try:
        getattr(out, method)(*args, **options)
    except Exception as error:
        return type(error).__name__
    return out.file.getvalue()  # type: ignore[attr-defined]


# What kafkatx prints lines with (and a style and an option the plain writers leave to rich)
PRINT_OPTIONS = st.fixed_dictionaries({}, optional={
    "markup": st.booleans(), "highlight": st.booleans(), "emoji": st.booleans(),
    "style": st.sampled_from(["dim", "bold", "bold red", "yellow", "green", "italic"]),
    "end": st.just("!\n")})
LINE_TEXT = (st.text(max_size=40)
             | st.text(alphabet=st.sampled_from("ab1 :[]\\/"), max_size=14)
             | st.text(alphabet="ab ", min_size=215, max_size=225)
             | st.sampled_from(["note: a:smile:b", "x\ty", "é 漢字", " pad ", "", "x\\",
                                "kafkatx: problem: [bold]x[/]", "a\\[b]", "x" * 220,
                                "ages at: 2026-11-29T03:56:31.775Z (capture time)"]))


@settings(max_examples=300, deadline=None)
@given(LINE_TEXT, PRINT_OPTIONS)
def test_stdout_lines_are_riches(text: str, options: dict[str, object]) -> None:
    """``StdoutLines.print`` on a pipe writes what rich's stdout console writes for the same
    print (a line longer than the console folded, markup, emoji codes), or hands it to rich."""
    from kafkatx.cli.output import StdoutLines, stdout_console

    assert _written(StdoutLines(io.StringIO()), "print", text, **options) == \
        _written(stdout_console(io.StringIO()), "print", text, **options)


def test_dump_of_other_files_still_loads_their_decoders() -> None:
    """The lazy imports are there when needed: a compressed batch's codec, an index's reader,
    a __consumer_offsets partition's group records."""
    loaded = _modules_after(["dump", "--records", "-f", "jsonl", "fixtures/logdir/payments-0",
                             "fixtures/logdir/__consumer_offsets-41"])
    for name in ("kafkatx.formats.compression", "kafkatx.formats.offset_index",
                 "kafkatx.formats.consumer_offsets"):
        assert name in loaded, name


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1200 :-[]/"), max_size=14)
       | st.sampled_from(["ages at: 2026-11-29T03:56:31.775Z", "a:smile:b", ":100:", ":1234:",
                          ":smile-text:", ":+1:", "[b]:smile:[/b]", "x :12: y"]))
def test_emoji_free_text_prints_the_same_without_emoji(text: str) -> None:
    """``emoji_free`` (what lets a print skip rich's emoji table) never says so of a text
    rich's emoji codes would change, with or without markup."""
    from rich._emoji_codes import EMOJI
    from rich.console import Console

    from kafkatx.cli.output import emoji_free

    assert not [code for code in EMOJI if len(code) == 2 and code.isdigit()]
    if emoji_free(text):
        for markup in (False, True):
            printed = []
            for emoji in (True, False):
                out = Console(file=io.StringIO(), width=80, highlight=False)
                try:
                    out.print(text, markup=markup, emoji=emoji)
                except Exception as error:  # rich's markup error, the same either way
                    printed.append(type(error).__name__)
                else:
                    printed.append(out.file.getvalue())
            assert printed[0] == printed[1]


def test_the_lazy_modules_load_where_they_are_needed() -> None:
    """The other side: the coordinator's partitions load their decoders (construct), ``inspect``
    predicts the restart (the log load model), ``timeline`` builds the timeline."""
    loaded = _modules_after(["lso", "fixtures/logdir", "--format", "json"])
    for name in ("kafkatx.analysis.coordinator", "kafkatx.formats.transaction_log", "construct"):
        assert name in loaded, name
    loaded = _modules_after(["inspect", "fixtures/logdir/payments-0", "--format", "json"])
    assert {"kafkatx.analysis.restart_view", "kafkatx.semantics.log_load"} <= loaded
    loaded = _modules_after(["timeline", "fixtures/logdir/payments-0", "--format", "json"])
    assert "kafkatx.analysis.timeline" in loaded


def test_metadata_log_loads_its_decoders() -> None:
    """The other side of the test above: the same modules do load when the evidence holds a
    metadata log, so the names listed there are the ones that decode it."""
    loaded = _modules_after(["lso", "fixtures/kraft", "--format", "json"])
    for name in ("kafkatx.semantics.cluster_metadata", "kafkatx.analysis.cluster_joins",
                 "kafkatx.storage.metadata_log"):
        assert name in loaded, name


def test_every_command_module_is_registered() -> None:
    """A ``*_cmd.py`` module added without an entry in ``COMMANDS`` would be unreachable."""
    modules = {f"kafkatx.cli.{p.stem}" for p in (ROOT / "kafkatx" / "cli").glob("*_cmd.py")}
    assert modules == {module for module, _, _ in COMMANDS.values()}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_summary_is_the_commands_own(name: str) -> None:
    """The listing shows what click would show from the command's own help, at any width."""
    module, attribute, summary = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert command.name == name
    assert cli.get_command(click.Context(cli), name) is command
    for limit in (20, 45, 60, 100, 200):
        assert click.Command(name, help=summary).get_short_help_str(limit) == \
            command.get_short_help_str(limit)


# ``replay -f jsonl`` of a clean partition: records decoded in C (construct's record_batch only
# for a batch the C decoder hands over, primitives only for a snappy block's length from
# formats/varints.py), its stderr lines written plainly (rich for a terminal or a progress
# bar), the comparison of copies only with --broker or several copies.
REPLAY_LAZY = ("construct", "kafkatx.formats.record_batch", "kafkatx.formats.primitives",
               "rich", "kafkatx.analysis.replicas", "pyarrow")


def test_replay_jsonl_decodes_in_c_and_writes_stderr_plainly() -> None:
    loaded = _modules_after(["replay", "fixtures/logdir/payments-0", "-t", "payments", "-p",
                             "0", "-f", "jsonl"])
    assert {"kafkatx.formats.record_decode", "kafkatx.formats.compression"} <= loaded
    assert not [name for name in REPLAY_LAZY if name in loaded]


def test_lso_does_not_compare_a_single_copy() -> None:
    loaded = _modules_after(["lso", "fixtures/logdir/payments-0", "--format", "json"])
    assert "kafkatx.analysis.replicas" not in loaded
    loaded = _modules_after(["lso", "fixtures/replicas", "--format", "json"])
    assert "kafkatx.analysis.replicas" in loaded


@settings(max_examples=300, deadline=None)
@given(LINE_TEXT, PRINT_OPTIONS)
def test_stderr_lines_are_riches(text: str, options: dict[str, object]) -> None:
    """``StderrLines`` writes what rich's stderr console (soft-wrapped: long lines whole)
    writes for the same print, or hands the print to rich."""
    from kafkatx.cli.output import StderrLines, stderr_console

    def printed(make: object) -> str:
        saved, sys.stderr = sys.stderr, io.StringIO()
        try:
            make().print(text, **options)  # type: ignore[operator]
            return sys.stderr.getvalue()
        except Exception as error:  # rich's markup error, the same either way
            return type(error).__name__
        finally:
            sys.stderr = saved

    assert printed(StderrLines) == printed(stderr_console)
    lines = StderrLines()
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        lines.print("note: plain", markup=False)
    finally:
        sys.stderr = saved
    assert lines._console is None  # written without rich (stderr is no terminal here)


def _collections_during(argv: list[str] | None) -> dict[str, int | bool]:
    """Run ``lso`` of a data partition in a fresh interpreter: how often the cyclic GC ran
    while ``main`` did (imports of the command included), what it froze, whether the
    threshold came back."""
    call = "main()" if argv is None else f"main({argv!r})"
    code = ("import gc, json, sys\n"
            "sys.argv = ['kafkatx', 'lso', 'fixtures/logdir/payments-0', '--format', 'json']\n"
            "from kafkatx.cli.main import main\n"
            "runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(1) if phase == 'start' "
            "else None)\n"
            "before = gc.get_threshold()\n"
            f"try:\n    {call}\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(json.dumps({'collections': len(runs), "
            "'frozen': gc.get_freeze_count(), 'restored': gc.get_threshold() == before}))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_the_command_line_loads_its_command_without_collecting_it() -> None:
    """As the process's command line, the command's module (numpy, the analysis) loads with
    the analysis's GC threshold and is then frozen: the collector does not walk the tens of
    thousands of objects it created (~50 collections with the default threshold); the
    threshold is the one from before once the command has run."""
    cli_run = _collections_during(None)
    assert cli_run["frozen"] > 10_000 and cli_run["restored"]
    assert cli_run["collections"] < 5, cli_run
    # Called with an argv (in-process, as tests do), the caller's collector is left alone.
    embedded = _collections_during(["lso", "fixtures/logdir/payments-0", "--format", "json"])
    assert embedded["frozen"] == 0 and embedded["restored"]
    assert embedded["collections"] > cli_run["collections"]


def test_difflib_only_for_a_mistyped_command() -> None:
    assert "difflib" not in _modules_after(["lso", "fixtures/logdir/payments-0", "--format",
                                             "json"])
    assert "difflib" in _modules_after(["lsx"])
