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
    """Every kafkatx module ``name`` imports, wherever the import statement stands."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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


def test_the_analysis_opens_no_file() -> None:
    """``kafkatx.analysis`` works on what storage read (``kafkatx.storage.readers``); only
    storage opens evidence files (issue 23 item 5)."""
    opening = {name for name, targets in GRAPH.items()
               if name.startswith("kafkatx.analysis") and "kafkatx.storage.files" in targets}
    assert not opening, f"analysis modules opening files themselves: {sorted(opening)}"
    assert "kafkatx.storage.files" in GRAPH["kafkatx.storage.readers"]  # the check can fail
