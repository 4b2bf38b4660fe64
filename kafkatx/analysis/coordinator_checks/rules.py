"""Findings that need both the coordinator's log and the data partitions.

- ``hanging_transaction``: KIP-664's definition computed offline (``TransactionsCommand``
  ``find-hanging``: an open transaction whose producer id the coordinator no longer has an
  ongoing transaction for, with that partition), with Kafka's ``abort`` command to clear it;
- ``missing_marker``: a completed transaction whose set lists a partition with no marker,
  although that partition's log covers the time the marker was written;
- ``zombie_write``: data written under an epoch the coordinator had already fenced;
- ``transaction_timeout_exceeded``: a transaction the coordinator aborted after its timeout,
  or one still Ongoing past it;
- ``orphan_transaction``: an open transaction of a producer id no transactional id owns.

``coordinator_epoch_regression`` is the replay's (per partition, ``ProducerAppendInfo``'s
coordinator-epoch check); ``stuck_prepare`` and ``epoch_exhaustion_risk`` are the coordinator
view's. They get their transactional id here; none is reported twice.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kafkatx.analysis.checks.transactions import BOOTSTRAP, abort_command
from kafkatx.analysis.coordinator_transactions import (
    ABORT,
    COMMIT,
    CoordinatorTransaction,
    OffsetCommit,
    tp_name,
)
from kafkatx.analysis.findings import ERROR, WARNING, Finding, Step, steps_text
from kafkatx.analysis.stable_offsets import StableOffsets
from kafkatx.analysis.timefmt import duration
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.analysis.transaction_verdicts import (
    HANGING,
    ORPHAN,
    PENDING,
    SKEW_MS,
    DataVerdict,
    MissingMarker,
)
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as COORDINATOR_TOPIC


def _who(v: DataVerdict) -> str:
    t = v.txn
    who = f"producer {t.producer_id} epoch {t.producer_epoch}"
    return f"{v.transactional_id} ({who})" if v.transactional_id else who


def _span(v: DataVerdict) -> str:
    t = v.txn
    return f"from offset {t.first_offset} (last data at {t.last_data_offset})"


def restart_step(v: DataVerdict, *, forgets: dict[tuple[int, int], int]) -> Step | None:
    """What a broker restart on the evidence would cost, as a step before the abort, when
    Kafka's load forgets this hanging transaction (``kafkatx.analysis.restart_view``); a
    restart that rebuilds it open is ``restart_keeps_transaction``'s to say."""
    t = v.txn
    key = (t.producer_id, t.first_offset)
    if key not in forgets:
        return None
    served = (f"serves its {forgets[key]} record(s) to read_committed consumers"
              if forgets[key] else "lets read_committed consumers read past it")
    decision = v.coordinator.decision if v.coordinator is not None else None
    if decision == COMMIT:
        return Step(f"a broker restart would clear it too: loading these files forgets it (no "
                    f"marker, no .txnindex entry) and {served}, as its coordinator's COMMIT "
                    "decided, where an abort discards them (see restart_changes); the other "
                    "copies of the partition must be restarted alike")
    why = ("its coordinator ABORTED it" if decision == ABORT
           else "nothing says it was committed")
    return Step(f"do not restart the broker to clear it: loading these files forgets it (no "
                f"marker, no .txnindex entry) and {served} as if committed, though {why} "
                "(see restart_changes); abort it instead")


def hanging(v: DataVerdict, *, path: str, stable: StableOffsets,
            stale_copy: str | None = None, restart: Step | None = None) -> Finding:
    t = v.txn
    message = (f"{_who(v)} has an open transaction in {tp_name(v.tp)} {_span(v)} that no marker "
               f"will close: {v.reason}")
    if stable.held_by(t.first_offset):
        message += (f"; it holds the LSO at {stable.last_stable_offset}: read_committed "
                    "consumers stay stuck there until it is aborted")
    if v.fence is not None:
        message += " (written by a zombie: see zombie_write)"
    if stale_copy:
        message += f" ({stale_copy})"
    abort = abort_command(v.topic, v.partition, t.first_offset)
    steps = (restart, Step("abort it", abort)) if restart is not None else ()
    return Finding(kind="hanging_transaction", severity=ERROR if v.certain else WARNING,
                   topic=v.topic, partition=v.partition, producer_id=t.producer_id,
                   producer_epoch=t.producer_epoch, transactional_id=v.transactional_id,
                   offset=t.first_offset, location=path, message=message,
                   remediation=steps_text(steps) if steps else abort, steps=steps)


def orphan(v: DataVerdict, *, path: str, stable: StableOffsets) -> Finding:
    t = v.txn
    message = f"producer {t.producer_id} epoch {t.producer_epoch} has an open transaction in " \
              f"{tp_name(v.tp)} {_span(v)}, but {v.reason}"
    if v.certain and stable.held_by(t.first_offset):
        message += f"; it holds the LSO at {stable.last_stable_offset}"
    return Finding(kind="orphan_transaction", severity=ERROR if v.certain else WARNING,
                   topic=v.topic, partition=v.partition, producer_id=t.producer_id,
                   producer_epoch=t.producer_epoch, offset=t.first_offset, location=path,
                   message=message,
                   remediation=abort_command(v.topic, v.partition, t.first_offset)
                   if v.certain else None)


def zombie(v: DataVerdict, *, path: str) -> Finding:
    t, fence = v.txn, v.fence
    assert fence is not None
    message = (f"{_who(v)} wrote to {tp_name(v.tp)} (offsets {t.first_offset}.."
               f"{t.last_data_offset}, data until {iso(t.last_timestamp)}) after the coordinator "
               f"had fenced epoch {t.producer_epoch} ({fence.describe()}): a zombie producer (an "
               "old instance still writing after a new one took over, or a transaction that "
               "outlived its timeout)")
    if v.status == HANGING:
        message += "; its transaction here is hanging (see hanging_transaction)"
    return Finding(kind="zombie_write", topic=v.topic, partition=v.partition,
                   producer_id=t.producer_id, producer_epoch=t.producer_epoch,
                   transactional_id=v.transactional_id, offset=t.first_offset, location=path,
                   message=message)


def missing_marker(mm: MissingMarker, *, path: str) -> Finding:
    c = mm.coordinator
    assert c.complete is not None
    verb = "committed" if c.decision == COMMIT else "aborted"
    where = tp_name((mm.topic, mm.partition))
    message = (f"{c.describe()} was {verb} ({c.complete.describe()}) with {where} in its set, "
               f"but {where} has no {c.decision} marker of producer {c.producer_id} epoch "
               f"{c.marker_epoch} although its log runs from {iso(mm.log_span[0])} to "
               f"{iso(mm.log_span[1])}")
    severity = None
    if mm.contradicting is not None:
        m = mm.contradicting
        severity = ERROR
        message += (f"; it has a {m.type} marker of that producer and epoch at offset "
                    f"{m.offset} instead: the partition's outcome contradicts the coordinator's")
    if mm.data is not None:
        d = mm.data
        closed = ("still open" if d.marker_offset is None
                  else f"closed by the marker at offset {d.marker_offset}")
        message += (f"; the producer's data there (offsets {d.first_offset}.."
                    f"{d.last_data_offset}) is {closed}")
    return Finding(kind="missing_marker", severity=severity, topic=mm.topic,
                   partition=mm.partition, producer_id=c.producer_id,
                   producer_epoch=c.marker_epoch, transactional_id=c.transactional_id,
                   offset=mm.data.first_offset if mm.data is not None else None, location=path,
                   message=message)


def transaction_timeout(c: CoordinatorTransaction, *, now_ms: int, is_current: bool
                        ) -> Finding | None:
    """An abort decided after the transaction's deadline, or an Ongoing transaction past it.

    Decided from the coordinator's timestamps, as ``TransactionStateManager#timedOutTransactions``
    does (Ongoing and ``txnStartTimestamp + txnTimeoutMs < now``): the PrepareAbort value's
    ``txnLastUpdateTimestamp`` is the time of the abort. Not from the epochs: the fence of
    ``TransactionCoordinator#abortTimedOutTransactions`` bumps the epoch once under transactions
    v0/v1, twice under v2 before KAFKA-19367 and once after it, which is also what a v2 client's
    own abort does."""
    start = c.start_timestamp_ms
    if start < 0:
        return None
    timeout = duration(c.timeout_ms)
    deadline = start + c.timeout_ms
    if c.decision == ABORT and c.prepare is not None:
        took = c.prepare.timestamp_ms - start
        if took <= c.timeout_ms:
            return None  # aborted in time: by its producer, or fenced by a new instance
        step = c.prepare
        message = (f"{c.describe()}: the coordinator aborted it {duration(took)} after it "
                   f"started, past its {timeout} transaction timeout (deadline {iso(deadline)};"
                   f" {c.prepare.describe(where=False)})")
        if (c.marker_epoch is not None and c.data_epoch is not None
                and c.marker_epoch > c.data_epoch):
            message += (f", and fenced epoch {c.data_epoch} (its markers carry "
                        f"{c.marker_epoch}); the producer must re-initialize")
    elif is_current and c.prepare is None and not c.closed:
        age = now_ms - start
        if age <= c.timeout_ms:
            return None
        step = c.last_step
        message = (f"{c.describe()} is still {c.state} {duration(age)} after it started "
                   f"({iso(start)}), past its {timeout} transaction timeout (deadline "
                   f"{iso(deadline)}): a running coordinator aborts it within seconds "
                   "(transaction.abort.timed.out.transaction.cleanup.interval.ms), so the "
                   "coordinator was not running, or the copy of its log stops before the abort")
    else:
        return None
    return Finding(kind="transaction_timeout_exceeded", topic=COORDINATOR_TOPIC,
                   partition=step.partition, producer_id=c.producer_id,
                   producer_epoch=c.data_epoch, transactional_id=c.transactional_id,
                   offset=step.offset, location=step.location, message=message)


def amend(f: Finding, verdict: DataVerdict | None, transactional_id: str | None) -> Finding:
    """A partition finding with its transactional id; ``open_transaction``/``lso_pinned``
    pointing at the joined finding that explains them (no contradicting second story)."""
    tid = f.transactional_id or transactional_id
    message = f.message
    if verdict is not None and f.kind in ("open_transaction", "lso_pinned"):
        if verdict.status == HANGING:
            message += "; it is hanging: no marker will ever close it (see hanging_transaction)"
        elif verdict.status == ORPHAN and verdict.certain:
            message += ("; no transactional id owns its producer: no marker will ever close it "
                        "(see orphan_transaction)")
        elif verdict.status == PENDING and verdict.reason and f.kind == "open_transaction":
            message += f"; {verdict.reason}"
    if tid == f.transactional_id and message == f.message:
        return f
    return replace(f, transactional_id=tid, message=message)


def committed(c: CoordinatorTransaction) -> bool:
    """The coordinator committed it: CompleteCommit is in ``__transaction_state``."""
    return c.decision == COMMIT and c.closed


def maybe_committed(v: DataVerdict) -> bool:
    """No coordinator transaction lists the partition, but the id's newest record is a
    CompleteCommit of the data's producer whose epoch fits it (v0/v1: the same; v2: one more):
    the records of its set were compacted away, and this partition may have been in it (not
    when its PrepareCommit survives without the partition: ``DataVerdict.never_added``)."""
    step, t = v.moved_on, v.txn
    return (step is not None and step.state == "CompleteCommit" and not v.never_added
            and step.producer_id == t.producer_id and step.producer_epoch is not None
            and step.producer_epoch in (t.producer_epoch, t.producer_epoch + 1)
            and step.timestamp_ms + SKEW_MS >= t.last_timestamp)


def committed_hang(f: Finding, v: DataVerdict, c: CoordinatorTransaction | None, *,
                   commits: list[OffsetCommit], log_start: int = 0) -> Finding:
    """``hanging_transaction`` of a transaction the coordinator committed, told as it is: the
    partitions its COMMIT marker reached, what ``abort`` (``Admin#abortTransaction``, an ABORT
    marker through WriteTxnMarkers: Kafka has no tool that writes a COMMIT) discards, the
    ``kafkatx dump`` that exports it first, and the live checks, since a copy may come from a
    lagging replica whose marker is still on its way."""
    t, where = v.txn, tp_name(v.tp)
    if c is None:
        text = (f"; that CompleteCommit is of this producer and epoch, and the records listing "
                f"its partitions were compacted away, so {where} may have been in it: then "
                "these records are COMMITTED")
        what = "records {} of a transaction that may be committed"
    else:
        entries = sorted(c.entries.items())
        reached = [f"{tp_name(tp)} (offset {e.marker_offset})" for tp, e in entries
                   if e.marker_type == COMMIT and e.marker_offset is not None and tp != v.tp]
        lacking = [tp_name(tp) for tp, e in entries if e.marker_offset is None and tp != v.tp]
        unseen = [tp_name(tp) for tp in sorted(c.partitions)
                  if tp not in c.entries and tp != v.tp]
        text = ("; it is COMMITTED: " + (f"its COMMIT marker did reach {', '.join(reached)}"
                                          if reached else "no other partition among the "
                                                          "evidence has its COMMIT marker"))
        if lacking:
            text += f"; no COMMIT marker either in {', '.join(lacking)}"
        if unseen:
            text += f"; not among the evidence: {', '.join(unseen)}"
        if not c.partitions:
            text += ("; the records listing its partitions were compacted away, so others may "
                     "have it")
        what = "records {} of a committed transaction"
    span = f"{t.first_offset}..{t.last_data_offset}"
    text += (f". Aborting it in {where} unblocks read_committed consumers but discards "
             f"{what.format(span)} (Kafka's tools can only abort; none writes the missing "
             "COMMIT marker)")
    if v.topic == GROUP_METADATA_TOPIC:
        if commits:
            shown = ", ".join(f"{o.group} {o.topic}-{o.partition} -> {o.offset}"
                              for o in commits[:5]) + (", ..." if len(commits) > 5 else "")
            text += (f"; they are offset commits ({shown}): aborting rolls those groups' "
                     "committed offsets back to their previous commits, and their consumers "
                     "read again from there")
        else:
            text += ("; in __consumer_offsets these are transactional offset commits: aborting "
                     "rolls the group's committed offsets back to its previous commit")
    tool = f"kafka-transactions.sh --bootstrap-server {BOOTSTRAP}"
    where_args = f"--topic {v.topic} --partition {v.partition}"
    if t.last_data_offset < log_start:  # UnifiedLog#deleteOldSegments took all of it
        first = Step(f"nothing to export from this copy: retention deleted records {span} (the "
                     f"log starts at {log_start}); another replica or a backup may still hold "
                     "them")
    else:
        start = max(t.first_offset, log_start)
        gone = (f" (records below the log start {log_start} were deleted by retention)"
                if start > t.first_offset else "")
        copy = Path(f.location).parent.name if f.location else "copy"
        first = Step(f"export the records first{gone}",
                     f"kafkatx dump {f.location}/*.log --producer-id {t.producer_id} "
                     f"--from-offset "
                     f"{start} --to-offset {t.last_data_offset} --records --format jsonl > "
                     f"{v.topic}-{v.partition}-txn-{t.producer_id}-{t.first_offset}"
                     f"-{copy}.jsonl")
    abort = f.steps[-1].command if f.steps else f.remediation
    steps = (first,
             Step("confirm on the live cluster that it hangs (this copy may come from a "
                  "lagging replica)", f"{tool} find-hanging {where_args}"),
             Step("see which producer holds it", f"{tool} describe-producers {where_args}"),
             *f.steps[:-1],
             Step("only then abort it", abort))
    return replace(f, message=f.message + text, remediation=steps_text(steps), steps=steps)


def committed_pointer(f: Finding) -> Finding:
    """``lso_pinned``/``open_transaction`` of a committed hanging transaction: its remediation
    points to the hanging finding's instead of a bare abort."""
    if f.remediation is None:
        return f
    steps = (Step("the coordinator COMMITTED this transaction: export its records and "
                  "confirm first, as hanging_transaction's steps say"),
             Step("then abort it", f.remediation))
    return replace(f, remediation=steps_text(steps), steps=steps)


def describe_command(transactional_id: str | None) -> str:
    if transactional_id is None:
        return ("kafka-transactions.sh --bootstrap-server <broker:9092> find-hanging "
                "--broker-id <leader>")
    return ("kafka-transactions.sh --bootstrap-server <broker:9092> describe "
            f"--transactional-id {transactional_id}")


def still_running(f: Finding, v: DataVerdict, *, now_ms: int) -> Finding:
    """``lso_pinned`` of a transaction the coordinator still has Ongoing or Prepare* with this
    partition: not hanging (``TransactionsCommand`` ``find-hanging`` keeps only partitions
    ``DescribeTransactions`` does not list), so a warning with what to watch, never an abort:
    aborting a running transaction behind its coordinator's back breaks it."""
    c = v.coordinator
    where = tp_name(v.tp)
    watch = f"watch, do not abort: {describe_command(v.transactional_id)}"
    if c is not None and c.prepare is not None:
        verb = "commit" if c.decision == COMMIT else "abort"
        what = (f"the coordinator decided to {verb} it ({c.prepare.describe()}) and sends its "
                f"{c.decision} marker to {where} again whenever a coordinator loads "
                f"{COORDINATOR_TOPIC}-{c.prepare.partition}: watch the LSO of {where} move and "
                "see stuck_prepare if it does not")
    elif c is not None and c.start_timestamp_ms >= 0:
        deadline = c.start_timestamp_ms + c.timeout_ms
        what = (f"the coordinator has it {c.state} with {where} since "
                f"{iso(c.start_timestamp_ms)}: its producer can still commit or abort it, and "
                f"the coordinator aborts it at its deadline {iso(deadline)} (start + its "
                f"{duration(c.timeout_ms)} timeout)")
        if 0 <= deadline < now_ms:
            what += (f"; that deadline passed {duration(now_ms - deadline)} ago: a running "
                     "coordinator aborts it within seconds, so check that the leader of "
                     f"{COORDINATOR_TOPIC}-{c.coordinator_partition} is up (see "
                     "transaction_timeout_exceeded)")
        watch += f" (expect it to end by {iso(deadline)})"
    else:
        what = v.reason or "the coordinator still has a transaction open with this partition"
    return replace(f, severity=WARNING, remediation=watch,
                   message=f"{f.message}; not hanging: {what}")


def in_progress(v: DataVerdict, *, now_ms: int) -> bool:
    """The coordinator has the transaction Ongoing with this partition and its deadline
    (``txnStartTimestamp + txnTimeoutMs``, ``TransactionStateManager#timedOutTransactions``)
    has not passed: a transaction running when the copy was taken, nothing wrong."""
    c = v.coordinator
    return (c is not None and c.prepare is None and not c.closed and c.start_timestamp_ms >= 0
            and v.tp in c.partitions and now_ms <= c.start_timestamp_ms + c.timeout_ms)


def without_coordinator(f: Finding) -> Finding:
    """``lso_pinned`` when no ``__transaction_state`` partition was copied: past the threshold,
    but whether the coordinator still runs it is unknown."""
    return replace(f, message=f"{f.message}; no {COORDINATOR_TOPIC} partition among the "
                              "evidence, so whether its coordinator still runs it is unknown: "
                              "confirm with kafka-transactions.sh find-hanging before aborting")


def stuck_prepare_detail(f: Finding, c: CoordinatorTransaction) -> Finding:
    """``stuck_prepare`` with the markers found and missing, partition by partition."""
    written = [f"{tp_name(tp)} (offset {e.marker_offset})" for tp, e in sorted(c.entries.items())
               if e.marker_offset is not None]
    pending = [tp_name(tp) for tp, e in sorted(c.entries.items()) if e.marker_offset is None]
    unseen = [tp_name(tp) for tp in sorted(c.partitions) if tp not in c.entries]
    parts = []
    if written:
        parts.append("markers written to " + ", ".join(written))
    if pending:
        parts.append("missing from " + ", ".join(pending))
    if unseen:
        parts.append("not among the evidence: " + ", ".join(unseen))
    if not parts:
        return f
    return replace(f, message=f"{f.message} ({'; '.join(parts)})")
