"""Findings: what kafkatx reports, each explaining itself in one line with a location.

Every kind is registered in ``KINDS`` with its severity and a one-line explanation;
docs/findings.md lists them (``tests/test_docs_reference.py`` checks it does). Severity
``error`` makes ``kafkatx verify`` exit 1.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkatx.lazy_dataclass import dataclass

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2}


class FindingKind(NamedTuple):
    severity: str
    explanation: str


KINDS: dict[str, FindingKind] = {
    # Damage in files
    "crc_mismatch": FindingKind(ERROR, "a batch's stored CRC does not match its bytes"),
    "truncated_batch": FindingKind(WARNING, "the segment ends inside a batch (crash or live copy)"),
    "corrupt_region": FindingKind(ERROR, "bytes that are no batch were skipped"),
    "zero_padding": FindingKind(INFO, "a zero-filled segment tail (preallocation or crash)"),
    "invalid_batch": FindingKind(ERROR, "a batch whose records or control record do not decode"),
    "offset_regression": FindingKind(ERROR, "a batch's offsets are not above the previous batch's"),
    "offset_gap": FindingKind(INFO, "offsets skipped between batches (compaction or deletion)"),
    "index_mismatch": FindingKind(WARNING, "an .index/.timeindex entry disagrees with the log"),
    "txnindex_mismatch": FindingKind(ERROR, "the .txnindex differs from the aborts in the log"),
    "snapshot_mismatch": FindingKind(WARNING, "a producer snapshot differs from the log's state"),
    "corrupt_snapshot": FindingKind(WARNING, "a producer snapshot Kafka would refuse to load"),
    "checkpoint_problem": FindingKind(WARNING, "a checkpoint file is missing, garbled or stale"),
    "orphaned_index": FindingKind(
        WARNING, "index files whose segment .log is missing: that segment's data is not there"),
    "interrupted_log_clean": FindingKind(
        INFO, "a clean or split left .cleaned/.swap files: the next load undoes or completes it"),
    "segment_deletion_pending": FindingKind(
        INFO, "segments renamed .deleted: no longer part of the log, removed at the next load"),
    # Producer and transaction rules
    "sequence_gap": FindingKind(WARNING, "a producer's sequence numbers skip or go back"),
    "duplicate_batch": FindingKind(ERROR, "the same producer batch was written twice"),
    "invalid_epoch": FindingKind(ERROR, "a write under a stale producer epoch: a zombie"),
    "invalid_txn_state": FindingKind(ERROR, "a non-transactional write inside a transaction"),
    "coordinator_epoch_regression": FindingKind(
        ERROR, "a marker from an older coordinator than an earlier marker"),
    "empty_transaction": FindingKind(INFO, "a marker that closes no data in this partition"),
    "unexpected_control_batch": FindingKind(WARNING, "a non-transaction control batch in data"),
    "open_transaction": FindingKind(WARNING, "a transaction with no marker yet"),
    "lso_pinned": FindingKind(
        ERROR, "an open transaction idle past find-hanging's threshold holds the LSO"),
    "restart_changes": FindingKind(
        WARNING, "a broker restart on these files would serve something else (Kafka's load)"),
    "restart_keeps_transaction": FindingKind(
        INFO, "the transaction holding the LSO survives a broker restart: restarting won't help"),
    "high_watermark_beyond_log_end": FindingKind(
        WARNING, "the checkpointed high watermark is above the log end offset"),
    "high_watermark_below_log_start": FindingKind(
        WARNING, "the checkpointed high watermark is below the log start offset"),
    # Several brokers' copies of a partition
    "replica_lagging": FindingKind(INFO, "a copy ends before the leader's, nothing diverges"),
    "replica_divergence": FindingKind(
        WARNING, "a copy holds offsets the newest leader's log does not (truncated on rejoin)"),
    "replica_lost_committed_records": FindingKind(
        ERROR, "a copy's acknowledged records (below its HW) are missing from the leader's log"),
    "replica_content_mismatch": FindingKind(
        ERROR, "copies hold different batches where their logs agree by leader epoch"),
    "replica_marker_mismatch": FindingKind(
        ERROR, "a transaction open on one copy has its marker on another"),
    "replica_outcome_mismatch": FindingKind(
        ERROR, "a transaction is committed on one copy and aborted on another"),
    # The transaction coordinator (__transaction_state)
    "invalid_coordinator_record": FindingKind(
        ERROR, "a __transaction_state record that does not decode or Kafka would not write"),
    "invalid_state_transition": FindingKind(
        ERROR, "a transaction state change Kafka's coordinator would not make"),
    "stuck_prepare": FindingKind(
        WARNING, "PrepareCommit/PrepareAbort with no CompleteCommit/CompleteAbort after it"),
    "epoch_exhaustion_risk": FindingKind(
        WARNING, "a producer epoch near 32767, where Kafka must move to a new producer id"),
    "wrong_coordinator_partition": FindingKind(
        WARNING, "a transactional id in a partition partitionFor does not pick for it"),
    # The coordinator's log joined with the data partitions
    "hanging_transaction": FindingKind(
        ERROR, "an open transaction the coordinator has moved on from: no marker will come"),
    "missing_marker": FindingKind(
        WARNING, "a completed transaction left no marker in a partition of its set"),
    "zombie_write": FindingKind(
        ERROR, "data written under an epoch the coordinator had already fenced"),
    "transaction_timeout_exceeded": FindingKind(
        WARNING, "a transaction that outlived its transaction timeout"),
    "orphan_transaction": FindingKind(
        WARNING, "an open transaction whose producer id no transactional id owns"),
    # The KRaft metadata log joined with the partitions
    "topic_id_mismatch": FindingKind(
        ERROR, "a partition dir whose topic id is not its topic's: a deleted topic's data"),
    "topic_not_in_metadata": FindingKind(
        WARNING, "a partition dir of a topic the metadata log deleted or never had"),
    "leader_epoch_mismatch": FindingKind(
        ERROR, "data or a leader-epoch-checkpoint in an epoch the controller never led"),
    "producer_id_unallocated": FindingKind(
        WARNING, "a producer id no ProducerIdsRecord block ever covered"),
    "transaction_version_mismatch": FindingKind(
        WARNING, "a transactions-v2 commit while the cluster's transaction.version was below 2"),
}


TOOLS = ("kafka-transactions.sh", "kafka-consumer-groups.sh", "kafkatx ")


class Step(NamedTuple):
    """One step of a remediation: what it does and, when a tool does it, the whole command
    (the tool's name and ``--bootstrap-server`` every time)."""

    what: str
    command: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"what": self.what, "command": self.command}

    def text(self) -> str:
        return self.what if self.command is None else f"{self.what}: {self.command}"


def steps_text(steps: tuple[Step, ...]) -> str:
    """The steps as the one line of ``remediation`` (deprecated: ``remediation_steps``)."""
    return "; ".join(s.text() for s in steps)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing worth an operator's attention, located as ``path:position`` where possible."""

    kind: str
    message: str
    severity: str | None = None
    topic: str | None = None
    partition: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    transactional_id: str | None = None
    offset: int | None = None
    location: str | None = None
    remediation: str | None = None  # one line (deprecated: the steps, joined)
    steps: tuple[Step, ...] = ()  # the remediation as numbered steps, when it has several

    @property
    def level(self) -> str:
        return self.severity or KINDS[self.kind].severity

    @property
    def remediation_steps(self) -> tuple[Step, ...]:
        """The remediation as steps: the steps given, else the one line as one step (a
        command when it starts with a tool's name)."""
        if self.steps:
            return self.steps
        if self.remediation is None:
            return ()
        if self.remediation.startswith(TOOLS):
            what = "abort it" if " abort " in self.remediation else "run"
            return (Step(what, self.remediation),)
        return (Step(self.remediation),)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind, "severity": self.level, "topic": self.topic,
            "partition": self.partition, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "transactional_id": self.transactional_id,
            "offset": self.offset, "location": self.location, "message": self.message,
            "remediation": self.remediation,
            "remediation_steps": [s.to_dict() for s in self.remediation_steps],
        }


def location(path: str | None, position: int | None) -> str | None:
    if path is None:
        return None
    return path if position is None else f"{path}:{position}"


def rank(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; within a level by topic, partition, offset."""
    return sorted(findings, key=lambda f: (SEVERITY_RANK[f.level], f.topic or "",
                                           f.partition if f.partition is not None else -1,
                                           f.offset if f.offset is not None else -1, f.kind))
