"""Which ``__transaction_state`` value may follow which: the coordinator's transition rules.

Mirrors ``TransactionMetadata`` (``transaction-coordinator``, Kafka 4.x): ``prepareTransitionTo``
(non-negative producer id and epoch), ``completeTransitionTo`` and its consistency checks
(``validProducerEpoch``, ``validProducerEpochBump``), and the epoch arithmetic of
``prepareIncrementProducerEpoch``, ``prepareProducerIdRotation``, ``prepareFenceProducerEpoch``,
``prepareAbortOrCommit`` and ``prepareComplete``, plus the transactions-v2 ``endTransaction`` of
``TransactionCoordinator`` (an epoch fence followed by an EndTxn bump). The state table
(``TransactionState#validPreviousStates``, ``#isExpirationAllowed``) is defined here, once: the
broker's coordinator and the forensic checks both use it.

Only what the log shows can be checked: ``lastProducerEpoch`` is not stored (Kafka reads it
back as -1), so the v2 checks on it become checks on the stored epochs. Checks Kafka itself makes
give errors; consistency Kafka does not enforce but always produces gives warnings.
"""

from __future__ import annotations

from kafkatx.formats.transaction_log import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionLogValue,
    TransactionState,
    state_name,
)
from kafkatx.lazy_dataclass import dataclass

ERROR = "error"
WARNING = "warning"

SHORT_MAX = 32767
# TransactionMetadata.isEpochExhausted: producerEpoch >= Short.MAX_VALUE - 1.
EPOCH_EXHAUSTED = SHORT_MAX - 1
# Written to the log by no code path: Dead ends in a tombstone, PrepareEpochFence in PrepareAbort.
IN_MEMORY_ONLY: frozenset[TransactionState] = frozenset(
    {TransactionState.DEAD, TransactionState.PREPARE_EPOCH_FENCE}
)
_S = TransactionState
_PREPARE = frozenset({_S.PREPARE_COMMIT, _S.PREPARE_ABORT})
_COMPLETE = frozenset({_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})

# TransactionState's static validPreviousStates block (Kafka 4.x, with transactions v2).
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
# Entries of the table above that only transactions v2 added (an EndTxn(abort) "when unsure");
# Kafka 3.x's Scala PrepareAbort allowed only Ongoing and PrepareEpochFence.
TV2_ONLY_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.PREPARE_ABORT: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
}
EXPIRATION_ALLOWED: frozenset[TransactionState] = frozenset(
    {_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
)


def is_expiration_allowed(state: TransactionState | int) -> bool:
    """``TransactionState#isExpirationAllowed``: only Empty, CompleteCommit, CompleteAbort."""
    return state in EXPIRATION_ALLOWED


def is_valid_transition(previous: TransactionState | int, new: TransactionState | int) -> bool:
    """``new.validPreviousStates`` contains ``previous`` (unknown ids are never valid)."""
    try:
        return TransactionState(previous) in VALID_PREVIOUS_STATES[TransactionState(new)]
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class TransitionProblem:
    """One broken rule. ``rule`` is a stable short name; ``message`` reads after
    ``transactional id X: ``."""

    rule: str
    severity: str
    message: str


def is_epoch_exhausted(epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``."""
    return epoch >= EPOCH_EXHAUSTED


def supports_epoch_bump(client_transaction_version: int) -> bool:
    """``TransactionVersion#supportsEpochBump``: transactions v2 (client transaction version 2+).

    A v0 ``__transaction_state`` value cannot store the version (it reads back as 0): a cluster
    writes v0 values only while its ``transaction.version`` is 0, so transactions v2 cannot have
    been in use.
    """
    return client_transaction_version >= 2


def _is_two_phase(value: TransactionLogValue) -> bool:
    # KIP-939 (trunk only): a kept prepared transaction moves the client's id/epoch to next_*.
    return value.next_producer_epoch != NO_PRODUCER_EPOCH


def _pid_epoch(value: TransactionLogValue) -> str:
    return f"{value.producer_id}/{value.producer_epoch}"


def _partitions(value: TransactionLogValue) -> frozenset[tuple[str, int]]:
    return frozenset(value.topic_partitions)


def _show(parts: frozenset[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(parts)) or "none"


# ---------------------------------------------------------------------------------------------
# One value on its own


def check_value(value: TransactionLogValue) -> list[TransitionProblem]:
    """What Kafka would refuse to write or to load in a single value, whatever came before."""
    state = value.transaction_state
    if state is None:
        return [TransitionProblem(
            rule="unknown_state", severity=ERROR,
            message=f"unknown transaction state id {value.state}: TransactionState.fromId fails, "
                    "so a coordinator loading this partition stops at this record")]
    out: list[TransitionProblem] = []
    if state in IN_MEMORY_ONLY:
        why = ("an expiring id gets a tombstone" if state is _S.DEAD
               else "a fence is written as PrepareAbort with the bumped epoch")
        out.append(TransitionProblem(
            rule="in_memory_state", severity=ERROR,
            message=f"state {state.kafka_name} is in-memory only and never written to the log "
                    f"({why})"))
    if value.producer_id < 0:
        out.append(TransitionProblem(
            rule="producer_id", severity=ERROR,
            message=f"illegal producer id {value.producer_id} in state {state.kafka_name} "
                    "(TransactionMetadata#prepareTransitionTo refuses negative ids)"))
    if value.producer_epoch < 0 and state is not _S.DEAD:
        out.append(TransitionProblem(
            rule="epoch", severity=ERROR,
            message=f"illegal producer epoch {value.producer_epoch} in state {state.kafka_name} "
                    "(TransactionMetadata#prepareTransitionTo refuses negative epochs)"))
    if state is _S.EMPTY:
        if value.topic_partitions:
            out.append(TransitionProblem(
                rule="partitions", severity=ERROR,
                message=f"state Empty with partitions {_show(_partitions(value))} "
                        "(TransactionLog#valueToBytes refuses to write that)"))
        if value.start_timestamp_ms != -1:
            out.append(TransitionProblem(
                rule="start_timestamp", severity=ERROR,
                message=f"state Empty with transaction start time {value.start_timestamp_ms} "
                        "(InitProducerId resets it to -1; completeTransitionTo checks it)"))
    elif value.partitions is None and state not in IN_MEMORY_ONLY:
        out.append(TransitionProblem(
            rule="partitions", severity=ERROR,
            message=f"state {state.kafka_name} with a null partitions array: Kafka writes one "
                    "for every state but Empty, and TransactionLog#read fails on it"))
    if state in _COMPLETE and value.start_timestamp_ms == -1:
        out.append(TransitionProblem(
            rule="start_timestamp", severity=ERROR,
            message=f"state {state.kafka_name} without a transaction start time "
                    "(completeTransitionTo requires one)"))
    return out


# ---------------------------------------------------------------------------------------------
# Consecutive values of one transactional id


def check_transition(old: TransactionLogValue, new: TransactionLogValue) -> list[TransitionProblem]:
    """Rules broken by ``new`` directly following ``old`` for the same transactional id.

    Values with an unknown state id are not compared (``check_value`` reports them).
    """
    before, after = old.transaction_state, new.transaction_state
    if before is None or after is None:
        return []
    problem = _state_problem(old, new, before, after)
    if problem is not None:
        return [problem]
    if _is_two_phase(old) or _is_two_phase(new):
        return []  # KIP-939 prepared transactions follow other epoch rules (no release has them)
    out: list[TransitionProblem] = []
    if after is _S.EMPTY:
        out.extend(_empty_rules(old, new))
    elif after is _S.ONGOING:
        out.extend(_ongoing_rules(old, new))
    elif after in _PREPARE:
        out.extend(_prepare_rules(old, new, before, after))
    elif after in _COMPLETE:
        out.extend(_complete_rules(old, new))
    if (new.version >= 1 and new.previous_producer_id != NO_PRODUCER_ID
            and new.previous_producer_id != old.producer_id):
        out.append(TransitionProblem(
            rule="previous_producer_id", severity=WARNING,
            message=f"previous producer id {new.previous_producer_id} is not the producer id "
                    f"{old.producer_id} of the value before it (prepareTransitionTo records the "
                    "producer id it transitions from)"))
    return out


def _state_problem(old: TransactionLogValue, new: TransactionLogValue,
                   before: TransactionState, after: TransactionState) -> TransitionProblem | None:
    change = f"state change from {before.kafka_name} to {after.kafka_name}"
    if before in TV2_ONLY_PREVIOUS_STATES.get(after, frozenset()):
        if supports_epoch_bump(new.client_transaction_version):
            return None
        if new.version == 0:
            return TransitionProblem(
                rule="tv2_only", severity=WARNING,
                message=f"{change} is valid only under transactions v2 (an EndTxn abort sent "
                        "when the client is unsure), but this is a v0 value, which a cluster "
                        "writes only at transaction.version 0")
        return TransitionProblem(
            rule="tv2_only", severity=ERROR,
            message=f"illegal {change}: valid only under transactions v2, and this value records "
                    f"client transaction version {new.client_transaction_version}")
    if before in VALID_PREVIOUS_STATES[after]:
        return None
    if before is after and _same_transaction(old, new):
        return TransitionProblem(
            rule="duplicate", severity=WARNING,
            message=f"{after.kafka_name} written twice for {_pid_epoch(new)} (not a valid "
                    "transition: the coordinator re-sent an append whose first attempt had "
                    "reached the log although it reported an error)")
    allowed = ", ".join(sorted(s.kafka_name for s in VALID_PREVIOUS_STATES[after]))
    return TransitionProblem(
        rule="state", severity=ERROR,
        message=f"illegal {change} ({after.kafka_name} may only follow {allowed})")


def _same_transaction(old: TransactionLogValue, new: TransactionLogValue) -> bool:
    return (old.producer_id == new.producer_id and old.producer_epoch == new.producer_epoch
            and _partitions(old) == _partitions(new)
            and old.transaction_timeout_ms == new.transaction_timeout_ms
            and old.start_timestamp_ms == new.start_timestamp_ms)


def _epoch_problem(old: TransactionLogValue, new: TransactionLogValue, expected: str
                   ) -> TransitionProblem:
    if new.producer_epoch < old.producer_epoch and new.producer_id == old.producer_id:
        what = (f"producer epoch went down from {old.producer_epoch} to {new.producer_epoch} "
                f"without a new producer id")
    else:
        what = (f"producer epoch changed from {old.producer_epoch} to {new.producer_epoch}"
                + ("" if new.producer_id == old.producer_id
                   else f" (producer id {old.producer_id} -> {new.producer_id})"))
    change = f"{old.state_name} -> {new.state_name}"
    return TransitionProblem(
        rule="epoch", severity=ERROR,
        message=f"{what} at {change}; {expected} (TransactionMetadata#completeTransitionTo "
                "rejects it)")


def _producer_id_problem(old: TransactionLogValue, new: TransactionLogValue, why: str
                         ) -> TransitionProblem:
    return TransitionProblem(
        rule="producer_id", severity=ERROR,
        message=f"producer id changed from {old.producer_id} to {new.producer_id} at "
                f"{old.state_name} -> {new.state_name}; {why} (TransactionMetadata#"
                "completeTransitionTo rejects it)")


def _timeout_problem(old: TransactionLogValue, new: TransactionLogValue) -> list[TransitionProblem]:
    if old.transaction_timeout_ms == new.transaction_timeout_ms:
        return []
    return [TransitionProblem(
        rule="timeout", severity=ERROR,
        message=f"transaction timeout changed from {old.transaction_timeout_ms} ms to "
                f"{new.transaction_timeout_ms} ms at {old.state_name} -> {new.state_name}; only "
                "InitProducerId sets it (completeTransitionTo rejects it)")]


def _empty_rules(old: TransactionLogValue, new: TransactionLogValue) -> list[TransitionProblem]:
    # InitProducerId: prepareIncrementProducerEpoch (same epoch on a retry, else +1) or
    # prepareProducerIdRotation (epoch 0 under a new producer id); validProducerEpochBump.
    same = new.producer_epoch == old.producer_epoch
    bump = new.producer_epoch == old.producer_epoch + 1
    rotation = new.producer_epoch == 0 and new.producer_id != old.producer_id
    if same or bump or rotation:
        return []
    return [_epoch_problem(old, new, "InitProducerId keeps the epoch (a retry), raises it by "
                                     "one, or restarts at 0 under a new producer id")]


def _ongoing_rules(old: TransactionLogValue, new: TransactionLogValue) -> list[TransitionProblem]:
    # AddPartitionsToTxn / AddOffsetsToTxn: prepareAddPartitions changes neither id nor epoch.
    out: list[TransitionProblem] = []
    if new.producer_id != old.producer_id:
        out.append(_producer_id_problem(old, new, "adding partitions keeps it"))
    elif new.producer_epoch != old.producer_epoch:
        out.append(_epoch_problem(old, new, "adding partitions keeps the epoch"))
    dropped = _partitions(old) - _partitions(new)
    if dropped:
        out.append(TransitionProblem(
            rule="partitions", severity=ERROR,
            message=f"partitions {_show(dropped)} dropped from the ongoing transaction "
                    f"({_pid_epoch(new)}); partitions are only ever added (completeTransitionTo "
                    "rejects it)"))
    out.extend(_timeout_problem(old, new))
    return out


def prepare_epochs(old: TransactionLogValue, new: TransactionLogValue) -> frozenset[int]:
    """The epochs a PrepareCommit/PrepareAbort ``new`` may carry after ``old``.

    v0/v1: the epoch is kept (``prepareAbortOrCommit``), except an abort that follows an epoch
    fence (transaction timeout, or InitProducerId during Ongoing: ``prepareFenceProducerEpoch``,
    +1 unless already at Short.MAX_VALUE). v2: EndTxn bumps the epoch by one (not at
    Short.MAX_VALUE for an abort); after a fence the bump comes on top of the fenced epoch (+2).
    """
    e = old.producer_epoch
    abort = new.transaction_state is _S.PREPARE_ABORT
    fence_possible = abort and old.transaction_state is _S.ONGOING
    fenced = e if e >= SHORT_MAX else e + 1
    if supports_epoch_bump(new.client_transaction_version):
        allowed = {e if (e >= SHORT_MAX and abort) else e + 1}
        if fence_possible:
            allowed.add(fenced if fenced >= SHORT_MAX else fenced + 1)
        return frozenset(allowed)
    allowed = {e}
    if fence_possible:
        allowed.add(fenced)
    return frozenset(allowed)


def _prepare_rules(old: TransactionLogValue, new: TransactionLogValue,
                   before: TransactionState, after: TransactionState) -> list[TransitionProblem]:
    out: list[TransitionProblem] = []
    if new.producer_id != old.producer_id:
        out.append(_producer_id_problem(old, new, "EndTxn keeps it"))
    else:
        allowed = prepare_epochs(old, new)
        if new.producer_epoch not in allowed:
            shown = " or ".join(str(e) for e in sorted(allowed))
            version = ("transactions v2" if supports_epoch_bump(new.client_transaction_version)
                       else "transactions v0/v1")
            out.append(_epoch_problem(
                old, new, f"under {version} {after.kafka_name} after {before.kafka_name} "
                          f"carries epoch {shown}"))
    if _partitions(old) != _partitions(new):
        out.append(TransitionProblem(
            rule="partitions", severity=ERROR,
            message=f"{after.kafka_name} lists partitions {_show(_partitions(new))}, but the "
                    f"transaction had {_show(_partitions(old))} (completeTransitionTo requires "
                    "the same set)"))
    out.extend(_timeout_problem(old, new))
    empty_abort = (after is _S.PREPARE_ABORT and supports_epoch_bump(new.client_transaction_version)
                   and before in EXPIRATION_ALLOWED)
    if new.start_timestamp_ms != old.start_timestamp_ms and not empty_abort:
        out.append(TransitionProblem(
            rule="start_timestamp", severity=ERROR,
            message=f"transaction start time changed from {old.start_timestamp_ms} to "
                    f"{new.start_timestamp_ms} at {before.kafka_name} -> {after.kafka_name} "
                    "(completeTransitionTo rejects it)"))
    return out


def _complete_rules(old: TransactionLogValue, new: TransactionLogValue) -> list[TransitionProblem]:
    # prepareComplete keeps id and epoch, except the v2 rotation after an exhausted epoch: the
    # producer id becomes nextProducerId and the epoch 0 (validProducerEpoch's overflow case).
    if new.producer_id == old.producer_id and new.producer_epoch == old.producer_epoch:
        return _timeout_problem(old, new)
    rotation = (supports_epoch_bump(new.client_transaction_version) and new.producer_epoch == 0
                and new.producer_id != old.producer_id)
    out: list[TransitionProblem] = []
    if not rotation:
        if new.producer_id != old.producer_id:
            out.append(_producer_id_problem(
                old, new, "completing keeps it (only transactions v2 moves to the next producer "
                          "id, with epoch 0, when the epoch is exhausted)"))
        else:
            out.append(_epoch_problem(old, new, "completing keeps the epoch"))
    elif old.next_producer_id not in (NO_PRODUCER_ID, new.producer_id):
        out.append(_producer_id_problem(
            old, new, f"the rotation must move to next producer id {old.next_producer_id}"))
    out.extend(_timeout_problem(old, new))
    return out


# ---------------------------------------------------------------------------------------------
# Tombstones


def check_expiration(old: TransactionLogValue) -> list[TransitionProblem]:
    """A tombstone after ``old``: Kafka expires only ids whose state allows it (``prepareDead``)."""
    state = old.transaction_state
    if state is None or state in EXPIRATION_ALLOWED:
        return []
    allowed = ", ".join(s.kafka_name for s in sorted(EXPIRATION_ALLOWED))
    return [TransitionProblem(
        rule="expiration", severity=ERROR,
        message=f"tombstone (id expired) after {state.kafka_name} for {_pid_epoch(old)}: Kafka "
                f"expires only ids in {allowed} (TransactionState#isExpirationAllowed)")]


def check_recreation(new: TransactionLogValue) -> list[TransitionProblem]:
    """The first value after a tombstone: a new id's InitProducerId writes Empty with epoch 0
    (new metadata at epoch -1, then ``prepareIncrementProducerEpoch``)."""
    state = new.transaction_state
    if state is None:
        return []
    if state is not _S.EMPTY:
        return [TransitionProblem(
            rule="state", severity=ERROR,
            message=f"illegal state change from (expired) to {state.kafka_name}: after a "
                    "tombstone the id must be created again by InitProducerId, which writes "
                    "Empty")]
    if new.producer_epoch != 0:
        return [TransitionProblem(
            rule="epoch", severity=ERROR,
            message=f"producer epoch {new.producer_epoch} after a tombstone: InitProducerId "
                    "for an unknown id starts at epoch 0")]
    return []


def describe(value: TransactionLogValue | None) -> str:
    """``Ongoing 4001/2`` (``tombstone`` for None): a value in a message."""
    if value is None:
        return "tombstone"
    return f"{state_name(value.state)} {_pid_epoch(value)}"
