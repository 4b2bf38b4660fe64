"""Fuzz targets: each takes any bytes and must end in values or located ``FormatError``s.

A target fails (an exception other than the ones the reader documents, or a broken promise
such as a problem placed outside the data) only where a user would see a traceback or an
"internal error". The targets call the readers the commands call, on bytes alone (no file),
so a run does thousands of executions a second. ``tests/fuzz/run.py`` drives them with
atheris (coverage-guided); ``tests/fuzz/test_fuzz.py`` replays the corpus and runs each target
for a bounded time.
"""

from __future__ import annotations

import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import crc32c

from kafkatx.errors import FormatError, KafkatxError

Target = Callable[[bytes], None]


def _positions_inside(problems, size: int) -> None:
    for p in problems:
        position = getattr(p, "position", None)
        assert position is None or 0 <= position <= size, (p, size)


def fix_crcs(data: bytes) -> bytes:
    """The same bytes with every frame's CRC made right (v2: CRC-32C from the attributes; v0/v1:
    CRC-32 from the magic), walking frames by their length fields, so the fuzzer reaches the
    decoders behind the CRC check instead of stopping at a mismatch."""
    buf = bytearray(data)
    pos = 0
    while pos + 17 <= len(buf):
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + length
        if length < 14 or end > len(buf):
            break
        if buf[pos + 16] == 2 and length >= 49:
            struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21:end])))
        elif buf[pos + 16] in (0, 1):
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:end])))
        pos = end
    return bytes(buf)


def segment(data: bytes) -> None:
    """A ``.log`` segment: the columnar scan (C and its exact fallback), the exact walk with
    records, the C record decoder of every v2 batch and the dump items, which agree."""
    from kafkatx.analysis.dump import DumpFilter, _scan_items, legacy_batch_dict
    from kafkatx.formats.legacy_message import LegacyEntry
    from kafkatx.formats.record_batch import RecordBatch
    from kafkatx.formats.record_decode import check_records_at, read_records_at
    from kafkatx.formats.record_validation import record_problems
    from kafkatx.formats.segment import SegmentProblem, iter_segment
    from kafkatx.formats.segment_scan import scan_segment

    if data[:1] == b"\x01":
        data = fix_crcs(data[1:])
    scan = scan_segment(data, path="fuzz.log")
    _positions_inside(scan.problems, len(data))
    items = list(_scan_items(scan, DumpFilter(), "fuzz.log"))
    assert items is not None
    h = scan.headers
    for row in range(len(h)):
        if int(h.magic[row]) == 2 and bool(h.crc_valid[row]):
            errors = []
            for decode in (read_records_at, check_records_at):
                try:
                    decode(data, h, row, path="fuzz.log")
                except FormatError as exc:
                    assert exc.position is None or 0 <= exc.position <= len(data), exc
                    errors.append(str(exc))
                else:
                    errors.append(None)
            assert errors[0] == errors[1], errors
    record_problems(data, scan)
    entries = []
    for entry in iter_segment(data, path="fuzz.log", decode_records=True):
        if isinstance(entry, SegmentProblem):
            assert 0 <= entry.position <= len(data), entry
            continue
        entries.append(entry)
        if isinstance(entry, LegacyEntry):
            legacy_batch_dict(entry, records=True)
        else:
            assert isinstance(entry, RecordBatch)
            entry.to_dict()
    assert [e.position for e in entries] == [int(p) for p in h.position], \
        "scan_segment and iter_segment disagree on the batches"


def _index_kind(data: bytes) -> tuple[int, bytes]:
    return (data[0] if data else 0), data[1:]


def index_files(data: bytes) -> None:
    """The files beside a segment and in a log dir's root, chosen by the first byte: offset
    and time indexes (entry readers, numpy columns, Kafka's sanity check), ``.txnindex``,
    producer snapshots, the offset and leader-epoch checkpoints, ``partition.metadata``,
    ``meta.properties`` and ``quorum-state``."""
    from kafkatx.formats import (
        checkpoints,
        index_columns,
        offset_index,
        producer_snapshot,
        quorum_state,
        time_index,
        txn_index,
    )

    kind, body = _index_kind(data)
    base = struct.unpack(">q", body[:8])[0] if len(body) >= 8 and kind & 0x80 else 0
    kind &= 0x7F
    size = len(body)
    readers: list[Callable[[], object]] = [
        lambda: offset_index.read_offset_index(body, base_offset=base, path="f.index"),
        lambda: offset_index.sanity_check(body, base_offset=base, path="f.index"),
        lambda: index_columns.read_offset_index_columns(body, base_offset=base, path="f.index"),
        lambda: time_index.read_time_index(body, base_offset=base, path="f.timeindex"),
        lambda: time_index.sanity_check(body, base_offset=base, path="f.timeindex"),
        lambda: index_columns.read_time_index_columns(body, base_offset=base,
                                                      path="f.timeindex"),
        lambda: txn_index.read_txn_index(body, path="f.txnindex", base_offset=base),
        lambda: txn_index.sanity_check(body, base_offset=base, path="f.txnindex"),
        lambda: producer_snapshot.read_producer_snapshot(body, path="f.snapshot"),
        lambda: checkpoints.read_offset_checkpoint(body, path="cp"),
        lambda: checkpoints.read_leader_epoch_checkpoint(body, path="lec"),
        lambda: checkpoints.read_partition_metadata(body, path="pm"),
        lambda: checkpoints.read_meta_properties(body, path="mp"),
        lambda: quorum_state.read_quorum_state(body, path="qs"),
    ]
    try:
        result = readers[kind % len(readers)]()
    except FormatError as exc:
        assert exc.position is None or 0 <= exc.position <= size, exc
        return
    if isinstance(result, list):
        _positions_inside(result, size)
        return
    _positions_inside(getattr(result, "problems", ()), size)
    for entry in getattr(result, "entries", ()):
        entry.to_dict()
    if hasattr(result, "to_dict"):
        result.to_dict()


def coordinator_records(data: bytes) -> None:
    """A record of ``__transaction_state``, ``__consumer_offsets`` or ``__cluster_metadata``:
    the first byte chooses the decoder, the second splits key from value."""
    from kafkatx.analysis.dump import _group_record, _metadata_record, _txn_log_record
    from kafkatx.formats import consumer_offsets, metadata_records, transaction_log
    from kafkatx.formats.record_batch import Record

    if len(data) < 2:
        return
    kind, cut, body = data[0] % 5, data[1], data[2:]
    key, value = body[:cut], body[cut:] or None
    record = Record(offset=0, timestamp=0, key=key, value=value, headers=(), attributes=0)
    try:
        if kind == 0:
            transaction_log.parse_key(key, path="t", base=0)
            if value is not None:
                transaction_log.parse_value(value, path="t", base=0)
        elif kind == 1:
            group_key = consumer_offsets.parse_key(key, path="c", base=0)
            consumer_offsets.parse_value(group_key, value, path="c", base=0)
        elif kind == 2:
            metadata_records.parse_metadata_record(value, path="m", base=0)
        elif kind == 3:
            metadata_records.parse_control_value(cut % 8, value, path="m", base=0)
    except FormatError as exc:
        assert exc.position is None or 0 <= exc.position <= len(body), exc
    if kind == 4:  # the dump items of the same record, as dump renders each topic's
        _txn_log_record(record, "t")
        _group_record(record, "c")
        _metadata_record(record, "m")


def request(data: bytes) -> None:
    """A request frame's body as the broker reads it: the header peeked, the schema of that
    (api key, version) chosen, header and body parsed; only ``RequestDecodeError`` escapes."""
    from kafkatx.broker.wire.codec import (
        RequestDecodeError,
        parse_request,
        peek_header,
        request_type,
    )

    try:
        info = peek_header(data)
    except RequestDecodeError:
        return
    cls = request_type(info.api_key, info.api_version)
    if cls is None:
        return
    try:
        parse_request(data, cls)
    except RequestDecodeError:
        return


def request_any_api(data: bytes) -> None:
    """:func:`request` with the first two bytes choosing a served (api key, version), so the
    fuzzer spends its time inside bodies rather than on unknown keys."""
    from kafkatx.broker.wire.codec import request_type

    if len(data) < 2:
        return
    served = _served_requests()
    api_key, api_version = served[(data[0] << 8 | data[1]) % len(served)]
    assert request_type(api_key, api_version) is not None
    request(struct.pack(">hhi", api_key, api_version, 7) + data[2:])


_SERVED: list[tuple[int, int]] = []


def _served_requests() -> list[tuple[int, int]]:
    if not _SERVED:
        from kafkatx.broker.wire.codec import request_type

        _SERVED.extend((key, version) for key in range(100) for version in range(20)
                       if request_type(key, version) is not None)
    return _SERVED


_LOGDIR: list[Path] = []


def partition_dir(data: bytes) -> None:
    """A whole partition (a segment and its ``.index`` / ``.timeindex`` / ``.txnindex``, cut
    from the input by its first bytes) through ``inspect``'s analysis: the producer-state
    replay, the LSO, every check, every record decoded: what ``verify`` does with a damaged
    copy, minus the CLI."""
    from kafkatx.engines.local import AnalysisOptions, inspect_paths

    if not _LOGDIR:
        _LOGDIR.append(Path(tempfile.mkdtemp(prefix="kafkatx-fuzz-")))
    part = _LOGDIR[0] / "t-0"
    part.mkdir(exist_ok=True)
    for old in part.iterdir():
        old.unlink()
    cuts = list(data[:3]) if len(data) >= 3 else [0, 0, 0]
    body = data[3:]
    if cuts[0] & 1:
        body = fix_crcs(body)
    segment_end = len(body) - sum(cuts) if len(body) > sum(cuts) else len(body)
    pieces = {".log": body[:segment_end]}
    at = segment_end
    for suffix, n in zip((".index", ".timeindex", ".txnindex"), cuts, strict=True):
        if n and at < len(body):
            pieces[suffix] = body[at:at + n]
            at += n
    for suffix, piece in pieces.items():
        (part / f"00000000000000000000{suffix}").write_bytes(piece)
    try:
        result = inspect_paths([_LOGDIR[0]], options=AnalysisOptions(validate_records=True))
    except KafkatxError:
        return
    for finding in result.findings:
        finding.to_dict()


TARGETS: dict[str, Target] = {
    "segment": segment,
    "index_files": index_files,
    "coordinator_records": coordinator_records,
    "request": request_any_api,
    "partition_dir": partition_dir,
}


def preload() -> None:
    """Import every module the targets reach, so a caller can instrument them first."""
    import kafkatx.analysis.dump
    import kafkatx.broker.wire.codec
    import kafkatx.engines.local
    import kafkatx.formats.checkpoints
    import kafkatx.formats.consumer_offsets
    import kafkatx.formats.index_columns
    import kafkatx.formats.metadata_records
    import kafkatx.formats.offset_index
    import kafkatx.formats.producer_snapshot
    import kafkatx.formats.quorum_state
    import kafkatx.formats.record_decode
    import kafkatx.formats.record_validation
    import kafkatx.formats.segment_scan
    import kafkatx.formats.time_index
    import kafkatx.formats.transaction_log
    import kafkatx.formats.txn_index  # noqa: F401

    # The served (api key, version) list imports every request schema: seconds on a busy
    # machine, which libFuzzer charged to the first input as a slow unit (the hour's soak,
    # docs/development.md). Built here, before the clock starts.
    _served_requests()
