"""``kafkatx serve --fault RULE``: typed fault-injection rules and the responses they force.

Each rule reproduces one way a real cluster breaks a transaction, so the log dir it leaves
carries the finding ``kafkatx inspect`` reports for it:

- ``drop-marker:TOPIC-P``: the coordinator never writes COMMIT/ABORT markers to that partition
  but completes the transaction in ``__transaction_state`` (``hanging_transaction``).
- ``crash-after:prepare-commit|prepare-abort``: the process exits with status 3 right after
  PrepareCommit/PrepareAbort is in ``__transaction_state``, before any marker
  (``stuck_prepare``; a restart without the fault completes it).
- ``crash-after:cleaned|swap``: the process exits with status 3 in the middle of a log clean,
  once the cleaned segment's ``.cleaned`` files are complete (a restart deletes them and keeps
  the old segments) or once they are all renamed ``.swap`` (a restart completes the swap), as
  ``LogLoader`` recovers either.
- ``delay-marker:TOPIC-P:MS``: markers to that partition are written MS later; the transaction
  stays in Prepare* (CONCURRENT_TRANSACTIONS to its producer) and the partition's LSO stays
  pinned until then.
- ``cut-replication:A-B`` (``--brokers N``): no replica fetch between brokers A and B; the
  follower falls out of the ISR after ``replica.lag.time.max.ms``.
- ``slow-replication:ID:MS`` (``--brokers N``): broker ID's replica fetches each wait MS first.
- ``reject:API:ERROR``: every request of that API is answered with that error in the
  response's own layout (per partition where the response has no top-level error code), as
  Kafka's ``AbstractRequest#getErrorResponse`` builds it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map

from kafkatx.broker.wire import codec
from kafkatx.formats.transaction_log import TransactionState
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import ApiRange, RequestContext

CRASH_EXIT_STATUS = 3
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")  # Topic#validate's legal characters
PRODUCE, LIST_OFFSETS, ADD_PARTITIONS_TO_TXN = 0, 2, 24
OFFSET_COMMIT, TXN_OFFSET_COMMIT = 8, 28
# Responses without a top-level error code whose per-partition layout is built here.
_PER_PARTITION = frozenset({PRODUCE, LIST_OFFSETS, ADD_PARTITIONS_TO_TXN, OFFSET_COMMIT,
                            TXN_OFFSET_COMMIT})

RULE_HELP = (
    "drop-marker:TOPIC-P (the coordinator never writes markers to that partition: a hanging "
    "transaction); crash-after:prepare-commit|prepare-abort (exit 3 right after that "
    "__transaction_state record: a stuck prepare); crash-after:cleaned|swap (exit 3 in the "
    "middle of a log clean, with its .cleaned or .swap files written); delay-marker:TOPIC-P:MS "
    "(markers to that partition written MS later); reject:API:ERROR (every request of that "
    "API, by name like Produce or api key, answered with that error, by name like "
    "NOT_LEADER_OR_FOLLOWER or code); with --brokers N: cut-replication:A-B (no replica "
    "fetch between brokers A and B), slow-replication:ID:MS (broker ID's replica fetches each "
    "wait MS)"
)


class FaultRuleError(ValueError):
    """A ``--fault`` rule that does not parse."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DropMarker:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"drop-marker:{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CrashAfter:
    state: TransactionState  # PREPARE_COMMIT or PREPARE_ABORT

    def __str__(self) -> str:
        return "crash-after:" + ("prepare-commit" if self.state is TransactionState.PREPARE_COMMIT
                                 else "prepare-abort")


@dataclass(frozen=True, slots=True, kw_only=True)
class CrashCleaning:
    step: str  # "cleaned" or "swap" (kafkatx.broker.logdir.log_cleaner's crash points)

    def __str__(self) -> str:
        return f"crash-after:{self.step}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DelayMarker:
    topic: str
    partition: int
    delay_ms: int

    def __str__(self) -> str:
        return f"delay-marker:{self.topic}-{self.partition}:{self.delay_ms}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reject:
    api_key: int
    error: ErrorCode

    def __str__(self) -> str:
        return f"reject:{api_name(self.api_key)}:{self.error.name.upper()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CutReplication:
    """No replica fetch between two brokers of a multi-broker serve, either way round."""

    first: int
    second: int

    def __str__(self) -> str:
        return f"cut-replication:{self.first}-{self.second}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowReplication:
    """Every replica fetch of broker ``node_id`` waits ``delay_ms`` first (a slow follower)."""

    node_id: int
    delay_ms: int

    def __str__(self) -> str:
        return f"slow-replication:{self.node_id}:{self.delay_ms}"


FaultRule = (DropMarker | CrashAfter | CrashCleaning | DelayMarker | Reject | CutReplication
             | SlowReplication)


def api_name(api_key: int) -> str:
    """``Produce`` for 0, ``EndTxn`` for 26 (Kafka's ``ApiKeys`` names)."""
    return "".join(part.capitalize() for part in api_key_map[api_key].split("_"))


def _parse_partition(text: str, rule: str) -> tuple[str, int]:
    topic, sep, number = text.rpartition("-")
    if not sep or not _TOPIC.match(topic) or not number.isdigit():
        raise FaultRuleError(f"{rule!r}: {text!r} is not TOPIC-PARTITION (e.g. payments-0)")
    return topic, int(number)


def _parse_api(text: str, rule: str, served: Mapping[int, ApiRange]) -> int:
    if text.isdigit():
        key = int(text)
        if key not in api_key_map:
            raise FaultRuleError(f"{rule!r}: {key} is not a Kafka api key")
    else:
        by_name = {api_name(k).lower(): k for k in api_key_map}
        found = by_name.get(text.replace("_", "").lower())
        if found is None:
            raise FaultRuleError(f"{rule!r}: {text!r} is not a Kafka API name (e.g. Produce, "
                                 "EndTxn)")
        key = found
    handler = served.get(key)
    if handler is None:
        raise FaultRuleError(f"{rule!r}: {api_name(key)} is not served by kafkatx serve")
    if key not in _PER_PARTITION and not all(
            codec.has_field(codec.response_type(key, v), "error_code")
            for v in range(handler.min_version, handler.max_version + 1)):
        raise FaultRuleError(f"{rule!r}: {api_name(key)} responses have no error code to set")
    return key


def _parse_error(text: str, rule: str) -> ErrorCode:
    try:
        error = ErrorCode(int(text)) if text.lstrip("-").isdigit() else ErrorCode[text.lower()]
    except (KeyError, ValueError):
        raise FaultRuleError(f"{rule!r}: {text!r} is not a Kafka error (e.g. "
                             "NOT_LEADER_OR_FOLLOWER or 6)") from None
    if error == ErrorCode.none:
        raise FaultRuleError(f"{rule!r}: NONE is not an error")
    return error


def parse_rule(rule: str, served: Mapping[int, ApiRange]) -> FaultRule:
    """One ``--fault`` rule; ``FaultRuleError`` with a one-line message when malformed.
    ``served``: the APIs ``kafkatx serve`` answers (its handler registry), which a
    ``reject`` rule must name."""
    kind, _, rest = rule.partition(":")
    if kind == "drop-marker" and rest:
        topic, partition = _parse_partition(rest, rule)
        return DropMarker(topic=topic, partition=partition)
    if kind == "crash-after" and rest in ("prepare-commit", "prepare-abort"):
        return CrashAfter(state=TransactionState.PREPARE_COMMIT if rest == "prepare-commit"
                          else TransactionState.PREPARE_ABORT)
    if kind == "crash-after" and rest in ("cleaned", "swap"):
        return CrashCleaning(step=rest)
    if kind == "delay-marker" and rest.count(":") == 1:
        where, delay = rest.split(":")
        topic, partition = _parse_partition(where, rule)
        if not delay.isdigit():
            raise FaultRuleError(f"{rule!r}: {delay!r} is not a delay in milliseconds")
        return DelayMarker(topic=topic, partition=partition, delay_ms=int(delay))
    if kind == "cut-replication" and rest.count("-") == 1:
        first, second = rest.split("-")
        if not (first.isdigit() and second.isdigit()) or first == second:
            raise FaultRuleError(f"{rule!r}: expected cut-replication:BROKER-BROKER (e.g. 1-2)")
        return CutReplication(first=int(first), second=int(second))
    if kind == "slow-replication" and rest.count(":") == 1:
        node, delay = rest.split(":")
        if not (node.isdigit() and delay.isdigit()):
            raise FaultRuleError(f"{rule!r}: expected slow-replication:BROKER:MS")
        return SlowReplication(node_id=int(node), delay_ms=int(delay))
    if kind == "reject" and rest.count(":") == 1:
        api, error = rest.split(":")
        return Reject(api_key=_parse_api(api, rule, served), error=_parse_error(error, rule))
    raise FaultRuleError(f"{rule!r} is not a fault rule: expected drop-marker:TOPIC-P, "
                         "crash-after:prepare-commit|prepare-abort|cleaned|swap, "
                         "delay-marker:TOPIC-P:MS, reject:API:ERROR, "
                         "cut-replication:BROKER-BROKER or slow-replication:BROKER:MS")


@dataclass(frozen=True, slots=True)
class Faults:
    """The rules in force, with the questions the broker asks of them."""

    rules: tuple[FaultRule, ...] = ()

    def drops_marker(self, topic: str, partition: int) -> bool:
        return any(isinstance(r, DropMarker) and (r.topic, r.partition) == (topic, partition)
                   for r in self.rules)

    def marker_delay_ms(self, topic: str, partition: int) -> int:
        return max((r.delay_ms for r in self.rules if isinstance(r, DelayMarker)
                    and (r.topic, r.partition) == (topic, partition)), default=0)

    def crashes_after(self, state: TransactionState) -> bool:
        return any(isinstance(r, CrashAfter) and r.state is state for r in self.rules)

    def crash_while_cleaning(self, step: str) -> None:
        """The log cleaner's crash point ``step``: exit now if a rule names it."""
        if any(isinstance(r, CrashCleaning) and r.step == step for r in self.rules):
            crash(f"crash-after:{step} during a log clean")

    def replication_cut(self, follower: int, leader: int) -> bool:
        return any(isinstance(r, CutReplication) and {r.first, r.second} == {follower, leader}
                   for r in self.rules)

    def replication_delay_ms(self, follower: int) -> int:
        return max((r.delay_ms for r in self.rules
                    if isinstance(r, SlowReplication) and r.node_id == follower), default=0)

    def rejection(self, api_key: int) -> ErrorCode | None:
        for r in self.rules:
            if isinstance(r, Reject) and r.api_key == api_key:
                return r.error
        return None


def crash(reason: str) -> None:
    """Exit now with ``CRASH_EXIT_STATUS``: no snapshot, index or checkpoint is written (what
    was appended is already in the files, as after a SIGKILL)."""
    sys.stderr.write(f"kafkatx serve: fault injected: {reason}; exiting with status "
                     f"{CRASH_EXIT_STATUS}\n")
    sys.stderr.flush()
    os._exit(CRASH_EXIT_STATUS)


def _per_partition(topics: Iterable[Any], partitions_of: str) -> Iterable[tuple[Any, Any]]:
    for topic in topics or ():
        yield topic, getattr(topic, partitions_of) or ()


def reject_response(ctx: RequestContext, request: Any, error: ErrorCode) -> Any:
    """``request`` answered with ``error``: the top-level error code, or every partition's
    (``ProduceRequest``/``ListOffsetsRequest``/``AddPartitionsToTxnRequest#getErrorResponse``)."""
    resp, make = ctx.resp, codec.make
    if ctx.api_key == PRODUCE:
        return make(ctx.response_cls, responses=tuple(
            make(resp.TopicProduceResponse, name=t.name, partition_responses=tuple(
                make(resp.PartitionProduceResponse, index=p.index, error_code=error,
                     base_offset=-1, log_append_time=None, log_start_offset=-1)
                for p in parts))
            for t, parts in _per_partition(request.topic_data, "partition_data")))
    if ctx.api_key == LIST_OFFSETS:
        return make(ctx.response_cls, topics=tuple(
            make(resp.ListOffsetsTopicResponse, name=t.name, partitions=tuple(
                make(resp.ListOffsetsPartitionResponse, partition_index=p.partition_index,
                     error_code=error, timestamp=-1, offset=-1, leader_epoch=-1)
                for p in parts))
            for t, parts in _per_partition(request.topics, "partitions")))
    if ctx.api_key == ADD_PARTITIONS_TO_TXN:
        return make(ctx.response_cls, results_by_topic_v3_and_below=tuple(
            make(resp.AddPartitionsToTxnTopicResult, name=t.name, results_by_partition=tuple(
                make(resp.AddPartitionsToTxnPartitionResult, partition_index=p,
                     partition_error_code=error) for p in parts))
            for t, parts in _per_partition(request.v3_and_below_topics, "partitions")))
    if ctx.api_key in (OFFSET_COMMIT, TXN_OFFSET_COMMIT):
        prefix = "OffsetCommit" if ctx.api_key == OFFSET_COMMIT else "TxnOffsetCommit"
        topic_cls = getattr(resp, f"{prefix}ResponseTopic")
        partition_cls = getattr(resp, f"{prefix}ResponsePartition")
        return make(ctx.response_cls, topics=tuple(
            make(topic_cls, name=t.name, partitions=tuple(
                make(partition_cls, partition_index=p.partition_index, error_code=error)
                for p in parts))
            for t, parts in _per_partition(request.topics, "partitions")))
    return codec.error_response(ctx.response_cls, error)
