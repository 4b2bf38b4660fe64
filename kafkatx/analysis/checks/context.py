"""What a check is handed: one segment with its index files (``SegmentContext``), walked chunk by
chunk of its columns (``SegmentWalk``), or a whole replayed partition (``PartitionContext``);
the checks' signatures. The check modules import this, the registry in
:mod:`kafkatx.analysis.checks` imports the check modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import ReplayResult
from kafkatx.analysis.stable_offsets import StableOffsets
from kafkatx.errors import FormatError
from kafkatx.formats.index_columns import OffsetIndexColumns, TimeIndexColumns
from kafkatx.formats.producer_snapshot import ProducerSnapshot
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import TxnIndexRead
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.swap_recovery import SwapRecoveryPlan

if TYPE_CHECKING:  # the exact parsers (construct) load only where a scan meets damage
    from kafkatx.formats.segment import SegmentProblem


@dataclass(slots=True, kw_only=True)
class SegmentContext:
    """One segment of a partition with its parsed sibling index files; ``batches``, ``size``
    and ``problems`` are filled in once its chunks were walked."""

    topic: str
    partition: int
    base_offset: int  # from the file name
    log_path: str
    batches: int = 0  # entries of the segment
    size: int = 0  # bytes of the segment file
    problems: tuple[SegmentProblem, ...] = ()  # the damage its scan met, in file order
    offset_index: OffsetIndexColumns | None = None
    offset_index_path: str | None = None
    time_index: TimeIndexColumns | None = None
    time_index_path: str | None = None
    # What OffsetIndex#sanityCheck / TimeIndex#sanityCheck say about the files as they are on disk
    offset_index_sanity: tuple[FormatError, ...] = ()
    time_index_sanity: tuple[FormatError, ...] = ()
    txn_index: TxnIndexRead | None = None
    txn_index_path: str | None = None
    previous_last_offset: int | None = None  # last offset of the previous segment's last batch
    next_base_offset: int | None = None  # base offset of the next segment (None: active one)


@dataclass(slots=True, kw_only=True)
class SnapshotFile:
    """A producer-state ``.snapshot`` file of the partition, read."""

    offset: int  # exclusive end offset from the file name
    path: str
    snapshot: ProducerSnapshot


@dataclass(slots=True, kw_only=True)
class PartitionContext:
    """A whole partition after replay: what the partition checks look at."""

    topic: str
    partition: int
    path: str
    replay: ReplayResult
    stable: StableOffsets
    log_start_offset: int
    log_end_offset: int
    segment_bases: list[int] = field(default_factory=list)
    txn_indexes: dict[int, TxnIndexRead] = field(default_factory=dict)  # by segment base offset
    txn_index_paths: dict[int, str] = field(default_factory=dict)
    snapshots: list[SnapshotFile] = field(default_factory=list)
    snapshot_replay: ReplayResult | None = None  # rebuilt from the newest good snapshot + tail
    snapshot_replay_offset: int | None = None
    cleaned_end: int = 0  # offsets below it lie in the cleaned prefix (kafkatx.analysis.cleaned)
    now_ms: int = -1  # --now, else the newest timestamp in the log
    transaction_timeout_ms: int = 60_000
    max_transaction_timeout_ms: int = 900_000  # find-hanging's --max-transaction-timeout
    max_timeout_said: str = "--max-transaction-timeout-ms"  # where that threshold came from
    swap_recovery: SwapRecoveryPlan | None = None  # what the next load does with leftovers
    # The transactions open as found that a broker restart on these files forgets, by
    # (producer id, first offset) -> their data records (kafkatx.analysis.restart_view).
    restart_forgets: dict[tuple[int, int], int] = field(default_factory=dict)


class SegmentWalk(Protocol):
    """A segment check walking the segment's columns chunk by chunk (``feed``: consecutive
    chunks in file order, ``SegmentScan``s of ``scan_segment_chunks``), then judging it once
    the walk is over (``findings``, when ``SegmentContext``'s totals are filled in). What it
    keeps between chunks is O(what it reports), never a column of the segment."""

    # True when the chunks could not answer exactly (the walk then runs again over the whole
    # segment as one chunk): a segment whose base offsets go back.
    whole_segment_needed: bool

    def feed(self, chunk: SegmentScan) -> None: ...

    def findings(self) -> Iterable[Finding]: ...


SegmentCheck = Callable[[SegmentContext], SegmentWalk]
PartitionCheck = Callable[[PartitionContext], Iterable[Finding]]
