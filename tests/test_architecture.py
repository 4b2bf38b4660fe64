"""The house rules of docs/architecture.md, checked on the imports and sizes of ``kafkatx/``.

- No import circle between modules, counting every import: module level, inside functions and
  under ``TYPE_CHECKING``.
- Imports point down: a room imports only rooms below it (``ROOMS``), never one above or a peer
  beside it; the broker's sub-packages have an order of their own (``BROKER_ROOMS``).
- No module over ``MAX_LINES`` lines.

``KNOWN_UPWARD`` and ``KNOWN_OVERSIZED`` list what issue 23 has still to move; they may only
shrink (an entry that no longer applies fails too, so the lists stay true).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkatx"
MAX_LINES = 700

# Rooms from the bottom up; a room may import the rooms of lower levels only. Rooms on one
# level are peers and import nothing of each other.
ROOMS: list[tuple[str, ...]] = [
    ("kafkatx", "kafkatx.errors"),
    ("kafkatx.formats",),
    ("kafkatx.semantics",),
    ("kafkatx.storage",),
    ("kafkatx.analysis", "kafkatx.broker"),
    ("kafkatx.engines",),
    ("kafkatx.cli", "kafkatx.testing"),
    ("kafkatx.__main__",),
]
# The broker's rooms from the bottom up (docs/architecture.md).
BROKER_ROOMS: list[tuple[str, ...]] = [
    ("kafkatx.broker.config",),
    ("kafkatx.broker.logs",),
    ("kafkatx.broker.kraft",),
    ("kafkatx.broker.logdir",),
    ("kafkatx.broker.wire",),
    ("kafkatx.broker.context",),
    ("kafkatx.broker.faults",),
    ("kafkatx.broker.replication",),
    ("kafkatx.broker.coordinators",),
    ("kafkatx.broker.protocol",),
    ("kafkatx.broker.composition", "kafkatx.broker.control"),
]
# (importer, imported) still running up, to be moved (issue 23 item 5).
KNOWN_UPWARD: set[tuple[str, str]] = set()
# Modules still over MAX_LINES, to be split (issue 23 item 6).
KNOWN_OVERSIZED: set[str] = set()


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = modules()


def imports(name: str, path: Path) -> Iterator[str]:
    """Every kafkatx module ``name`` imports, wherever the import statement stands, and the
    modules it imports by name (``importlib.import_module``: a registry's modules)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    yield from _imported_by_name(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")[:len(name.split(".")) - node.level + is_package]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in MODULES:
                    yield target
                elif base in MODULES:
                    yield base


def _imported_by_name(tree: ast.AST) -> Iterator[str]:
    """In a module that calls ``import_module``/``__import__``: every string naming a kafkatx
    module, whole or after an f-string's leading text (``f"kafkatx.analysis.checks.{name}"``
    with ``name`` one of the module's strings)."""
    calls = {node.func.attr if isinstance(node.func, ast.Attribute) else
             node.func.id if isinstance(node.func, ast.Name) else None
             for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if not calls & {"import_module", "__import__"}:
        return
    strings = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    prefixes = {node.values[0].value for node in ast.walk(tree)
                if isinstance(node, ast.JoinedStr) and node.values
                and isinstance(node.values[0], ast.Constant)}
    for text in strings:
        for prefix in ("", *prefixes):
            if prefix + text in MODULES:
                yield prefix + text


GRAPH = {name: {t for t in imports(name, path) if t != name} for name, path in MODULES.items()}


def room_of(module: str, rooms: list[tuple[str, ...]]) -> tuple[int, str] | None:
    """(level, room) of the longest room name that is ``module`` or a package holding it."""
    best: tuple[int, str] | None = None
    for level, names in enumerate(rooms):
        for room in names:
            if (module == room or module.startswith(room + ".")) and (
                    best is None or len(room) > len(best[1])):
                best = (level, room)
    return best


def upward(importer: str, imported: str) -> bool:
    for rooms in (BROKER_ROOMS, ROOMS):
        a, b = room_of(importer, rooms), room_of(imported, rooms)
        if a is None or b is None:
            continue
        if a[1] != b[1]:
            return b[0] >= a[0]
        if rooms is BROKER_ROOMS:
            return False
    return False


def test_every_module_and_package_has_a_room() -> None:
    loose = [m for m in MODULES if room_of(m, ROOMS) is None
             or (m.startswith("kafkatx.broker.") and room_of(m, BROKER_ROOMS) is None)]
    assert not loose, f"modules outside every room of docs/architecture.md: {loose}"


def test_no_import_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_imports_point_down() -> None:
    found = {(a, b) for a, targets in GRAPH.items() for b in targets if upward(a, b)}
    assert found - KNOWN_UPWARD == set(), "imports running up or sideways between rooms"
    assert KNOWN_UPWARD - found == set(), "fixed: remove from KNOWN_UPWARD"


def test_no_module_over_max_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for p in MODULES.values()}
    over = {p: n for p, n in sizes.items() if n > MAX_LINES and p not in KNOWN_OVERSIZED}
    assert not over, f"modules over {MAX_LINES} lines (split them by what they decide): {over}"
    shrunk = {p for p in KNOWN_OVERSIZED if sizes.get(p, 0) <= MAX_LINES}
    assert not shrunk, f"no longer oversized: remove from KNOWN_OVERSIZED: {shrunk}"


def test_the_checks_see_what_they_check() -> None:
    assert upward("kafkatx.formats.segment", "kafkatx.analysis.timeline")
    assert upward("kafkatx.semantics.producer_state", "kafkatx.storage.discovery")
    assert upward("kafkatx.analysis.replay", "kafkatx.broker.context")
    assert upward("kafkatx.broker.logs.partition_log", "kafkatx.broker.protocol.server")
    assert upward("kafkatx.broker.coordinators.txn_coordinator", "kafkatx.broker.protocol.server")
    assert not upward("kafkatx.broker.protocol.server", "kafkatx.broker.context")
    assert not upward("kafkatx.cli.main", "kafkatx.formats.segment")
    assert "kafkatx.broker.context" in GRAPH["kafkatx.broker.protocol.server"]
    # registries that import their modules by name
    assert "kafkatx.analysis.checks.indexes" in GRAPH["kafkatx.analysis.checks"]
    assert "kafkatx.broker.protocol.handlers.produce" in GRAPH["kafkatx.broker.protocol.handlers"]
    assert "kafkatx.cli.verify_cmd" in GRAPH["kafkatx.cli.main"]


def test_the_analysis_opens_no_file() -> None:
    """``kafkatx.analysis`` works on what storage read (``kafkatx.storage.readers``); only
    storage opens evidence files (issue 23 item 5)."""
    opening = {name for name, targets in GRAPH.items()
               if name.startswith("kafkatx.analysis") and "kafkatx.storage.files" in targets}
    assert not opening, f"analysis modules opening files themselves: {sorted(opening)}"
    assert "kafkatx.storage.files" in GRAPH["kafkatx.storage.readers"]  # the check can fail


def _code_strings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every string constant of ``path`` that is not a docstring (f-string
    parts included)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings):
            yield node.lineno, node.value


INTERNAL_TOPICS_MODULE = "kafkatx.formats.internal_topics"
# A topic name as code uses it: the whole string, or a partition name being built
# (``f"__consumer_offsets-{p}"``, ``'__transaction_state-' + p`` in the timeline page's script).
_TOPIC = r"(?:__transaction_state|__consumer_offsets|__cluster_metadata)"
_TOPIC_IN_CODE = re.compile(rf"^{_TOPIC}$|{_TOPIC}-(?:$|['\"])|['\"]{_TOPIC}['\"]")


def test_internal_topic_names_in_one_module() -> None:
    """``__transaction_state``, ``__consumer_offsets`` and ``__cluster_metadata`` are spelt in
    ``formats/internal_topics.py`` only; prose (help, messages, docstrings) may name them."""
    found = [f"{MODULES[name].relative_to(ROOT)}:{line}: {text[:60]!r}"
             for name in MODULES if name != INTERNAL_TOPICS_MODULE
             for line, text in _code_strings(MODULES[name]) if _TOPIC_IN_CODE.search(text)]
    assert not found, f"internal topic names outside {INTERNAL_TOPICS_MODULE}: {found}"
    assert _TOPIC_IN_CODE.search(" in __consumer_offsets-")  # the check can fail
    assert _TOPIC_IN_CODE.search("__transaction_state")
    assert not _TOPIC_IN_CODE.search("no __cluster_metadata-N directory found")


BATCH_LAYOUT_MODULE = "kafkatx.formats.batch_layout"
# The header's field offsets past the log overhead (8, the batch length, is also the end of
# the base offset every v0/v1 entry shares; LOG_OVERHEAD's 12 likewise).
_HEADER_OFFSETS = {16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61}
# Layouts that are not the v2 batch header but use one of its numbers (module: why).
_NOT_THE_BATCH_HEADER = {
    "kafkatx.formats.compression": "xerial snappy framing",
    "kafkatx.formats.legacy_message": "the v0/v1 message layout (LegacyRecord)",
    "kafkatx.formats.producer_snapshot": "the .snapshot file's header (ProducerStateManager)",
}


def _header_reads(path: Path) -> Iterator[tuple[int, str]]:
    """Reads of bytes at a literal v2 header offset: ``data[p + 23:p + 27]``, ``data[p + 16]``,
    ``unpack_from(buf, 8)``, and ``struct`` formats of two or more consecutive header fields."""
    header_format = "qiibIhiqqqhii"
    tree = ast.parse(path.read_text(), str(path))

    def literal_offset(node: ast.AST | None) -> int | None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            node = node.right
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            bounds = ([node.slice.lower, node.slice.upper] if isinstance(node.slice, ast.Slice)
                      else [node.slice])
            if any(isinstance(b, ast.BinOp) and literal_offset(b) in _HEADER_OFFSETS | {8, 12}
                   for b in bounds):
                yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("unpack_from", "pack_into") and len(node.args) >= 2 and \
                    literal_offset(node.args[-1]) in _HEADER_OFFSETS | {8, 12}:
                yield node.lineno, ast.unparse(node)
            if node.func.attr in ("Struct", "unpack_from", "unpack", "pack", "pack_into") and \
                    node.args and isinstance(node.args[0], ast.Constant) and \
                    isinstance(node.args[0].value, str):
                fmt = node.args[0].value.lstrip(">!")
                if len(fmt) >= 3 and fmt in header_format:
                    yield node.lineno, ast.unparse(node)


def test_batch_header_layout_in_one_module() -> None:
    """The v2 batch header's offsets and ``struct`` formats come from
    ``formats/batch_layout.py``; nothing else reads its fields at numbers of its own."""
    found = [f"{MODULES[name].relative_to(ROOT)}:{line}: {text}"
             for name in MODULES if name != BATCH_LAYOUT_MODULE
             and name not in _NOT_THE_BATCH_HEADER
             for line, text in _header_reads(MODULES[name])]
    layout_names = {t.id for node in ast.parse((PACKAGE / "formats" / "batch_layout.py")
                                               .read_text()).body
                    if isinstance(node, ast.Assign) for t in node.targets
                    if isinstance(t, ast.Name)}
    assert {"LOG_OVERHEAD", "RECORDS_COUNT_OFFSET", "HEADER"} <= layout_names
    found += [f"{MODULES[name].relative_to(ROOT)}:{node.lineno}: {t.id} defined again"
              for name in MODULES if name != BATCH_LAYOUT_MODULE
              and name not in _NOT_THE_BATCH_HEADER
              for node in ast.parse(MODULES[name].read_text()).body
              if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and t.id in layout_names]
    assert not found, f"v2 batch header read outside {BATCH_LAYOUT_MODULE}: {found}"
    sample = PACKAGE / "formats" / "batch_layout.py"
    assert list(_header_reads(sample))  # the check can fail: HEADER is defined there


# What opens, lists or maps a file.
_FILE_CALLS = {"open", "read_bytes", "read_text", "write_bytes", "write_text", "iterdir",
               "glob", "rglob", "walk", "scandir", "listdir", "stat", "exists", "is_dir",
               "is_file", "mmap"}


def test_the_analysis_touches_no_file_itself() -> None:
    """Beyond importing no opener: no module of ``kafkatx.analysis`` opens, lists, maps or
    stats a path (``open``, ``Path.read_bytes``, ``os.walk``, ``Path.glob``, ``mmap.mmap``...);
    ``kafkatx.storage`` does it and hands the result over."""
    found = []
    for name, path in MODULES.items():
        if not name.startswith("kafkatx.analysis"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                called = (node.func.attr if isinstance(node.func, ast.Attribute)
                          else node.func.id if isinstance(node.func, ast.Name) else None)
                if called in _FILE_CALLS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, f"analysis modules touching files: {found}"


def test_commands_do_not_borrow_from_each_other() -> None:
    """A command module (``cli/*_cmd.py``) imports no other command: what two share lives in
    ``cli/render.py`` (rendering), ``cli/output.py`` or ``cli/analysis_options.py``."""
    commands = {name for name in MODULES if name.startswith("kafkatx.cli.")
                and name.endswith("_cmd")}
    assert len(commands) >= 10
    borrowed = {(a, b) for a in commands for b in GRAPH[a] if b in commands}
    assert not borrowed, f"commands importing other commands: {sorted(borrowed)}"


def test_one_entry_point_for_an_inspection() -> None:
    """``kafkatx.engines.inspection.inspect`` is where an inspection runs, for the commands,
    ``kafkatx.testing`` and either engine: nothing outside it calls an engine's ``inspect``
    or the local engine's steps of one."""
    steps = {"start_inspection", "finish_inspection", "inspect_paths"}
    found = []
    for name, path in MODULES.items():
        if name in ("kafkatx.engines.inspection", "kafkatx.engines.local",
                    "kafkatx.engines.spark", "kafkatx.engines.base"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "inspect":
                found.append(f"{name}:{node.lineno}: {ast.unparse(node.func)}")
            if isinstance(node, ast.ImportFrom) and any(a.name in steps for a in node.names):
                found.append(f"{name}:{node.lineno}: imports {[a.name for a in node.names]}")
    assert not found, f"inspections run around engines/inspection.py: {found}"
    for user in ("kafkatx.testing", "kafkatx.cli.analysis_options", "kafkatx.cli.timeline_cmd"):
        assert "kafkatx.engines.inspection" in GRAPH[user], user
    assert "kafkatx.engines.factory" in GRAPH["kafkatx.engines.inspection"]  # local or Spark
