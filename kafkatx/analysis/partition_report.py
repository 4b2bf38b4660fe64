"""What kafkatx knows about one partition after a scan: offsets, LSO, transactions, findings."""

from __future__ import annotations

from dataclasses import field

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import Transaction
from kafkatx.lazy_dataclass import dataclass

LSO_COLUMNS = (
    "topic", "partition", "broker", "log_start_offset", "log_end_offset", "high_watermark",
    "last_stable_offset", "lso_source", "hw_minus_lso", "records_pending", "open_transactions",
)


@dataclass(slots=True, kw_only=True)
class PartitionReport:
    """One partition's answer: offsets, LSO and what holds it, transactions, findings."""

    topic: str
    partition: int
    path: str
    broker: str | None = None  # the log dir it came from, when several were given
    state: str = "live"
    log_start_offset: int = 0
    log_end_offset: int = 0
    high_watermark: int | None = None
    # checkpoint (replication-offset-checkpoint), leader_log_end (the broker leads it as its
    # only replica: kafkatx.semantics.leader_high_watermark) or log_end_offset (unknown)
    high_watermark_source: str = "log_end_offset"
    last_stable_offset: int = 0
    lso_source: str = "log_end_offset"
    records_pending: int = 0
    open_transactions: list[Transaction] = field(default_factory=list)
    segments: int = 0
    size_bytes: int = 0
    batches: int = 0
    data_records: int = 0
    producers: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    longest_transaction_ms: int | None = None
    min_timestamp: int | None = None  # of the partition's batches (max timestamps), None: none
    max_timestamp: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def hw_minus_lso(self) -> int:
        hw = self.log_end_offset if self.high_watermark is None else self.high_watermark
        return max(hw - self.last_stable_offset, 0)

    def lso_row(self) -> dict[str, object]:
        """The ``kafkatx lso`` JSON contract for this partition."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "high_watermark_source": self.high_watermark_source,
            "last_stable_offset": self.last_stable_offset,
            "lso_source": self.lso_source,
            "hw_minus_lso": self.hw_minus_lso,
            "records_pending": self.records_pending,
            "open_transactions": [
                {"producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
                 "first_offset": t.first_offset, "last_offset": t.last_data_offset,
                 "first_timestamp": t.first_timestamp, "last_timestamp": t.last_timestamp}
                for t in self.open_transactions
            ],
        }

    def to_dict(self) -> dict[str, object]:
        """The ``kafkatx inspect`` partition object: the lso row plus counts."""
        row = self.lso_row()
        row.update({
            "path": self.path, "state": self.state,
            "segments": self.segments, "size_bytes": self.size_bytes, "batches": self.batches,
            "data_records": self.data_records, "producers": self.producers,
            "transactions_committed": self.transactions_committed,
            "transactions_aborted": self.transactions_aborted,
            "transactions_open": len(self.open_transactions),
            "longest_transaction_ms": self.longest_transaction_ms,
            "min_timestamp": self.min_timestamp, "max_timestamp": self.max_timestamp,
            "findings": len(self.findings),
        })
        return row
