"""kafkatx's restart view and Kafka's load, side by side in one shape.

:func:`kafka_view` reduces ``LoadDriver``'s JSON for one partition to what is compared;
:func:`kafkatx_view` computes the same from kafkatx's model of the load
(:mod:`kafkatx.storage.log_load`) and its read_committed replay (``replay --after-restart``);
:func:`differences` lists every field that disagrees. A read_committed consumer's view is
compared as the data batches it receives: Kafka's fetches filtered by the Java client's rules
(:class:`kafkatx.semantics.read_committed.ReadCommittedFilter`), against kafkatx's replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kafkatx.analysis.stable_offsets import stable_offsets
from kafkatx.semantics.read_committed import (
    AbortedTransaction,
    Decision,
    IsolationLevel,
    ReadCommittedFilter,
)
from kafkatx.storage.discovery import discover

COMPARED_SUFFIXES = (".log", ".txnindex", ".snapshot")
NOT_COMPARED = "delivered_past_log_end"  # Kafka serves them, kafkatx does not: see kafka_view


def _kept(name: str) -> bool:
    return name.endswith(COMPARED_SUFFIXES)


def kafka_view(answer: dict[str, Any]) -> dict[str, Any]:
    """The compared fields of one partition of ``LoadDriver``'s answer."""
    if "error" in answer:
        return {"failure": True}
    files = answer["files"]
    created = {n for n in files["created"] if _kept(n)}
    deleted = {n for n in files["deleted"] if _kept(n)}
    truncated = {n for n in files["rewritten"] if n.endswith(".log")}
    txnindex = {n for n in files["rewritten"] if n.endswith(".txnindex")}
    delivered = []
    for fetch in answer["fetches"]:
        if "error" in fetch:
            continue
        aborted = [AbortedTransaction(first, pid) for pid, first in fetch["aborted"]]
        flt = ReadCommittedFilter(aborted, IsolationLevel.READ_COMMITTED)
        for _, last, pid, txn, control, control_type, crc_ok, records in fetch["batches"]:
            decision = flt.decide(producer_id=pid, is_transactional=txn, is_control=control,
                                  last_offset=last, is_abort_marker=control and control_type == 0)
            # the client drops records below its position, and fails on a corrupt batch
            # (check.crcs), which kafkatx's replay reports as a problem instead; a batch the
            # cleaner went over holds fewer records than its offsets
            if decision is Decision.DELIVER and crc_ok:
                delivered.extend(o for o in records if o >= fetch["fetch_offset"])
    return {
        "failure": False,
        "log_start_offset": answer["log_start_offset"],
        "log_end_offset": answer["log_end_offset"],
        "recovery_point": answer["recovery_point"],
        "first_unstable_offset_at_load": answer["loaded_first_unstable_offset"],
        "lso_at_checkpoint_hw": answer["checkpoint_last_stable_offset"],
        "lso_at_log_end_hw": answer["last_stable_offset"],
        "segments": [[s["base_offset"], s["size"], s["aborted"]] for s in answer["segments"]],
        "producers": {pid: [p["producer_epoch"], p["coordinator_epoch"], p["batches"],
                                 p["last_timestamp"], p["current_txn_first_offset"]]
                      for pid, p in answer["producers"].items()},
        "snapshots": sorted(n for n in files["after"] if n.endswith(".snapshot")),
        "created": sorted(n for n in created if not n.endswith(".snapshot")),
        "deleted": sorted(n for n in deleted if not n.endswith(".snapshot")),
        "truncated": sorted(truncated),
        "txnindex_rewritten": sorted(txnindex),
        # kafkatx bounds reads by the log end offset, Kafka by the byte position of the log
        # end's metadata: a read below the log end can run into the last segment's bytes past
        # it (a partial last batch after a clean shutdown makes its base the log end); the
        # documented difference (docs/analysis.md) is kept apart and not compared
        "delivered": [o for o in delivered if o < answer["log_end_offset"]],
        NOT_COMPARED: [o for o in delivered if o >= answer["log_end_offset"]],
    }


CHUNK_BYTES_HERE = 300  # a few of the oracle's batches a chunk


def kafkatx_view(log_dir: Path, partition_name: str, now_ms: int,
                 high_watermark: int | None) -> dict[str, Any]:
    """The same fields from kafkatx's model of the load of ``log_dir``'s partition."""
    from kafkatx.analysis.consumer_view import prepare, replay_records
    from kafkatx.analysis.restart_view import load_after_restart
    from kafkatx.engines.segment_chunks import file_chunks

    pdir = next(p for p in discover([log_dir]).all_partitions() if p.name == partition_name)
    # inspect walks a segment in chunks (here of a few batches each), kafkatx serve whole and
    # replays batch by batch: the same load, the same answer
    out = load_after_restart(pdir, now_ms=now_ms, chunks=file_chunks(CHUNK_BYTES_HERE))
    exact = load_after_restart(pdir, now_ms=now_ms, columnar=False)
    if (out.failure is None) != (exact.failure is None):
        return {"failure": "columnar and batch-by-batch replays disagree on failing: "
                           f"{out.failure} / {exact.failure}"}
    if out.failure is not None:
        return {"failure": True}
    for name, ours, theirs in (
            ("producers", out.state.snapshot_entries(), exact.state.snapshot_entries()),
            ("ongoing", list(out.state.ongoing_txns.items()),
             list(exact.state.ongoing_txns.items())),
            ("unreplicated", list(out.state.unreplicated_txns.items()),
             list(exact.state.unreplicated_txns.items())),
            ("aborted", out.aborted, exact.aborted),
            ("files", out.file_changes(), exact.file_changes()),
            ("load", out.to_dict(), exact.to_dict())):
        if ours != theirs:
            return {"failure": f"columnar and batch-by-batch replays disagree on {name}: "
                               f"{ours} / {theirs}"}
    state = out.state
    start, end = out.log_start_offset, out.log_end_offset
    first = state.first_unstable_offset()
    at_load = None if first is None else out.offset_metadata(max(first, start))
    at_checkpoint = stable_offsets(state, end, 0 if high_watermark is None else high_watermark,
                                   start, out.offset_metadata).last_stable_offset
    at_end = stable_offsets(state, end, None, start, out.offset_metadata).last_stable_offset
    changes = out.file_changes()
    view = prepare(pdir, isolation=IsolationLevel.READ_COMMITTED, high_watermark=None,
                   after_restart=True, now_ms=now_ms)
    corrupt: set[int] = set()  # offsets in batches failing their CRC: a consumer fails there
    for seg in out.segments:
        h = seg.scan().headers
        for base, last in zip(h.base_offset[~h.crc_valid].tolist(),
                              h.last_offset[~h.crc_valid].tolist(), strict=True):
            corrupt.update(range(base, last + 1))
    delivered = [rec.record.offset for rec in replay_records(pdir, view)
                 if rec.visible and rec.record.offset not in corrupt]
    return {
        "failure": False,
        "log_start_offset": start,
        "log_end_offset": end,
        "recovery_point": out.recovery_point,
        "first_unstable_offset_at_load": at_load,
        "lso_at_checkpoint_hw": at_checkpoint,
        "lso_at_log_end_hw": at_end,
        "segments": [[s.base_offset, s.size, [[a.producer_id, a.first_offset, a.last_offset,
                                                a.last_stable_offset] for a in s.aborted]]
                     for s in out.segments],
        "producers": {str(pid): [e.producer_epoch, e.coordinator_epoch,
                            [[b.last_seq, b.last_offset, b.offset_delta, b.timestamp]
                             for b in e.batch_metadata],
                            e.last_timestamp, e.current_txn_first_offset]
                      for pid, e in sorted(state.producers.items())},
        "snapshots": sorted(f"{o:020d}.snapshot" for o in out.snapshots.files),
        "created": sorted(n for n in changes["created"]
                          if _kept(n) and not n.endswith(".snapshot")),
        "deleted": sorted(n for n in changes["deleted"]
                          if _kept(n) and not n.endswith(".snapshot")),
        "truncated": changes["truncated"],
        "txnindex_rewritten": [n for n in changes["rewritten"] if n.endswith(".txnindex")],
        "delivered": delivered,
    }


def differences(kafka: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Every compared field that differs, as ``field: kafka=... kafkatx=...``."""
    if kafka["failure"] or ours["failure"]:
        return [] if kafka["failure"] == ours["failure"] else [
            f"failure: kafka={kafka['failure']} kafkatx={ours['failure']}"]
    return [f"{key}: kafka={kafka[key]!r} kafkatx={ours[key]!r}"
            for key in kafka if key != NOT_COMPARED and kafka[key] != ours.get(key)]


def checkpointed_high_watermarks(log_dir: Path) -> dict[str, int]:
    """``replication-offset-checkpoint`` of ``log_dir``, by partition directory name."""
    from kafkatx.formats.checkpoints import read_offset_checkpoint

    path = log_dir / "replication-offset-checkpoint"
    if not path.exists():
        return {}
    return {f"{e.topic}-{e.partition}": e.offset
            for e in read_offset_checkpoint(path.read_bytes()).entries}


def log_dir_differences(kafka_answer: dict[str, Any], log_dir: Path, now_ms: int,
                        partitions: Iterable[str]) -> list[str]:
    """kafkatx's restart view of each of ``partitions`` (directory names) of ``log_dir``
    against ``kafka_answer``, Kafka's load of a copy of it (``KafkaLoad.load``)."""
    hws = checkpointed_high_watermarks(log_dir)
    out = []
    for name in sorted(partitions):
        answer = kafka_answer["partitions"][name]
        diffs = differences(kafka_view(answer), kafkatx_view(log_dir, name, now_ms,
                                                             hws.get(name)))
        out += [f"{log_dir.name}/{name}: {d}" for d in diffs]
    return out


def kafka_load_differences(kafka_load: Any, log_dir: Path) -> list[str]:
    """Kafka's load (``storage.KafkaLoad``) of a copy of ``log_dir`` now, against kafkatx's
    restart view of every partition in it (the metadata log is KRaft's, not LogManager's)."""
    import time

    now_ms = int(time.time() * 1000)
    answer = kafka_load.load(log_dir, now_ms)
    names = [n for n in answer["partitions"] if not n.startswith("__cluster_metadata-")]
    assert names, f"Kafka loaded no partition of {log_dir}"
    return log_dir_differences(answer, log_dir, now_ms, names)
