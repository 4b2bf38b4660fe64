"""`kafkatx replay` semantics on real partition dirs: Kafka's client cases and random histories."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.analysis.consumer_view import (
    ABORTED,
    BEYOND_HW,
    BEYOND_LSO,
    find_partition,
    prepare,
    replay_records,
)
from kafkatx.analysis.replay import PartitionReplayer
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import discover
from kafkatx.storage.segment_writer import PartitionWriter, segment_name

T0 = 1_763_700_000_000
RC = IsolationLevel.READ_COMMITTED


@dataclass
class Partition:
    """Writes a partition batch by batch; its .txnindex files come from kafkatx's own replay."""

    root: Path
    topic: str = "t"
    number: int = 0
    writer: PartitionWriter = field(init=False)
    offset: int = 0
    seqs: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dir = self.root / f"{self.topic}-{self.number}"
        self.writer = PartitionWriter(self.dir)

    def data(self, pid: int, n: int = 1, *, txn: bool = True, epoch: int = 0) -> list[int]:
        recs = [Record(offset=self.offset + i, timestamp=T0 + self.offset + i,
                       key=b"k%d" % (self.offset + i), value=b"v%d" % (self.offset + i))
                for i in range(n)]
        seq = self.seqs.get(pid, 0)
        self.writer.append(build_batch(recs, producer_id=pid, producer_epoch=epoch,
                                       base_sequence=seq if pid >= 0 else -1,
                                       is_transactional=txn))
        self.seqs[pid] = seq + n
        self.offset += n
        return [r.offset for r in recs]

    def marker(self, pid: int, commit: bool, *, epoch: int = 0) -> int:
        off = self.offset
        self.writer.append(build_control_batch(
            base_offset=off, producer_id=pid, producer_epoch=epoch, timestamp=T0 + off,
            control_type=ControlType.COMMIT if commit else ControlType.ABORT))
        self.offset += 1
        return off

    def roll(self) -> None:
        self.writer.roll(self.offset)

    def close(self, *, write_txn_index: bool = True) -> Path:
        self.writer.close()
        if write_txn_index:
            replayer = PartitionReplayer()
            bases = sorted(int(p.name.split(".")[0]) for p in self.dir.glob("*.log"))
            for base in bases:
                replayer.feed(scan_segment((self.dir / segment_name(base, ".log")).read_bytes()))
            by_segment: dict[int, list[AbortedTxnEntry]] = {}
            for a in replayer.result.expected_aborted:
                base = max(b for b in bases if b <= a.last_offset)
                by_segment.setdefault(base, []).append(AbortedTxnEntry(
                    producer_id=a.producer_id, first_offset=a.first_offset,
                    last_offset=a.last_offset, last_stable_offset=a.last_stable_offset))
            for base, entries in by_segment.items():
                (self.dir / segment_name(base, ".txnindex")).write_bytes(build_txn_index(entries))
        return self.dir


def consume(path: Path, *, isolation: IsolationLevel = RC, show_hidden: bool = False,
            index_source: str = "file", from_offset: int | None = None, hw: int | None = None,
            as_of: int | None = None) -> list:
    pdir = find_partition(discover([path]).all_partitions(), "t", 0)
    view = prepare(pdir, isolation=isolation, high_watermark=hw, as_of_offset=as_of,
                   index_source=index_source)
    return list(replay_records(pdir, view, from_offset=from_offset, show_hidden=show_hidden))


def offsets(records: list) -> list[int]:
    return [r.record.offset for r in records if r.visible]


def test_interleaved_producers_committed_and_aborted(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    a = p.data(1, 2)
    b = p.data(2, 2)
    a += p.data(1, 1)
    p.marker(1, True)
    p.marker(2, False)
    plain = p.data(-1, 2, txn=False)
    p.close()
    assert offsets(consume(tmp_path)) == a + plain
    assert offsets(consume(tmp_path, isolation=IsolationLevel.READ_UNCOMMITTED)) == a[:2] + b + \
        a[2:] + plain
    hidden = [r for r in consume(tmp_path, show_hidden=True) if not r.visible]
    assert [(r.record.offset, r.reason, r.abort_marker_offset) for r in hidden] == [
        (b[0], ABORTED, 6), (b[1], ABORTED, 6)]


def test_aborted_producer_later_writes_non_transactional_data(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    p.data(1, 2)
    p.marker(1, False)
    later = p.data(1, 2, txn=False)
    p.close()
    assert offsets(consume(tmp_path)) == later


def test_fetch_starting_inside_a_batch(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    batch = p.data(-1, 5, txn=False)
    p.close()
    assert offsets(consume(tmp_path, from_offset=2)) == batch[2:]


def test_transaction_spanning_segments_is_filtered_in_the_second_fetch(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    p.data(1, 2)
    p.roll()
    p.data(1, 2)
    p.marker(1, False)
    tail = p.data(2, 1, txn=False)
    p.close()
    assert offsets(consume(tmp_path)) == tail


def test_open_transaction_hides_everything_after_it(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    before = p.data(-1, 1, txn=False)
    open_txn = p.data(1, 2)
    after = p.data(-1, 2, txn=False)
    p.close()
    records = consume(tmp_path, show_hidden=True)
    assert offsets(records) == before
    assert {r.record.offset: r.reason for r in records if not r.visible} == {
        **dict.fromkeys(open_txn, BEYOND_LSO), **dict.fromkeys(after, BEYOND_LSO)}
    assert {r.pinned_by for r in records if not r.visible} == {(1, open_txn[0])}


def test_high_watermark_bounds_read_uncommitted(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    first = p.data(-1, 2, txn=False)
    p.data(-1, 2, txn=False)
    p.close()
    records = consume(tmp_path, isolation=IsolationLevel.READ_UNCOMMITTED, hw=2,
                      show_hidden=True)
    assert offsets(records) == first
    assert {r.reason for r in records if not r.visible} == {BEYOND_HW}


def test_as_of_offset_replays_the_past(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    txn = p.data(1, 2)
    p.marker(1, True)
    p.close()
    assert offsets(consume(tmp_path)) == txn
    assert offsets(consume(tmp_path, as_of=2)) == []  # the transaction was still open then


def test_compacted_away_batches_leave_gaps(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    w = PartitionWriter(d)
    w.append(build_batch([Record(offset=0, timestamp=T0, key=b"a", value=b"1")]))
    # offsets 1..4 were compacted away; a batch keeps its last offset delta after cleaning
    w.append(build_batch([Record(offset=5, timestamp=T0, key=b"a", value=b"2"),
                          Record(offset=7, timestamp=T0, key=b"b", value=b"3")],
                         base_offset=5, last_offset_delta=3))
    w.close()
    assert offsets(consume(tmp_path)) == [0, 5, 7]


def test_missing_txnindex_shows_aborted_data_and_rebuild_fixes_it(tmp_path: Path) -> None:
    p = Partition(tmp_path)
    p.data(1, 2)
    p.marker(1, False)
    p.close(write_txn_index=False)
    assert offsets(consume(tmp_path)) == [0, 1]  # what that broker served: aborted data
    assert offsets(consume(tmp_path, index_source="rebuild")) == []
    pdir = find_partition(discover([tmp_path]).all_partitions(), "t", 0)
    view = prepare(pdir, isolation=RC, high_watermark=None)
    assert view.disagreements and "no .txnindex entry" in view.disagreements[0]


@st.composite
def histories(draw: st.DrawFn, actions: tuple[str, ...] = ("data", "data", "plain", "commit",
                                                          "abort", "roll"),
              close: bool = True, steps_at_most: int = 25) -> list[tuple[str, int, int]]:
    """(action, producer, size) steps; with ``close``, every transaction is closed before the
    end."""
    steps = []
    open_pids: set[int] = set()
    for _ in range(draw(st.integers(1, steps_at_most))):
        pid = draw(st.integers(1, 3))
        action = draw(st.sampled_from(actions))
        if action in ("commit", "abort") and pid not in open_pids:
            action = "data"
        if action == "plain" and pid in open_pids:
            action = "data"
        if action == "data":
            open_pids.add(pid)
        if action in ("commit", "abort"):
            open_pids.discard(pid)
        steps.append((action, pid, draw(st.integers(1, 3))))
    if close:
        steps.extend(("abort", pid, 1) for pid in sorted(open_pids))
    return steps


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(histories())
def test_replay_matches_the_per_transaction_model(tmp_path_factory, steps) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("h")
    p = Partition(root)
    pending: dict[int, list[int]] = {}
    expected: list[int] = []
    for action, pid, size in steps:
        if action == "data":
            pending.setdefault(pid, []).extend(p.data(pid, size))
        elif action == "plain":
            expected.extend(p.data(pid, size, txn=False))
        elif action == "roll":
            p.roll()
        else:
            p.marker(pid, action == "commit")
            txn = pending.pop(pid, [])
            if action == "commit":
                expected.extend(txn)
    p.close()
    assert offsets(consume(root)) == sorted(expected)
    assert offsets(consume(root, index_source="rebuild")) == sorted(expected)
