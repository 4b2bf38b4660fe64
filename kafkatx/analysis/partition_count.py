"""How many partitions ``__transaction_state`` has, told from the evidence when not given.

Kafka places a transactional id in partition ``Utils.abs(id.hashCode) %
transaction.state.log.num.partitions`` (``TransactionStateManager#partitionFor``); the count is a
broker setting (default 50, ``TransactionLogConfig.TRANSACTIONS_TOPIC_PARTITIONS_DEFAULT``) fixed
when the topic is created. A KRaft node's metadata log (``__cluster_metadata-0``) records it:
the ``PartitionRecord``s of the topic, else a ``transaction.state.log.num.partitions`` broker
ConfigRecord (:mod:`kafkatx.analysis.metadata_settings`); that count is taken when the evidence
has one. Otherwise, what a log dir shows:

- the ``__transaction_state-N`` directories: a broker creates one for every replica it hosts,
  empty or not, so the highest N + 1 is a lower bound, and a broker (or a folder of brokers)
  hosting every replica shows exactly 0..N-1;
- where each transactional id's records are: every id sits in ``partitionFor(id, count)`` of the
  true count.

The count chosen is the one that places the most ids where they are, among counts no lower than
the lower bound; ties go to the count of a complete 0..N-1 set of directories, then to Kafka's
default of 50, then to the smallest. ``source`` says in words which it was.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.coordinator_partition import (
    DEFAULT_NUM_PARTITIONS,
    java_string_hashcode,
    java_utils_abs,
)

GIVEN = "given"  # --transaction-state-partitions
METADATA = "metadata"  # the topic's partitions in a KRaft metadata log
DEFAULT = "default"  # nothing in the evidence contradicts Kafka's default
DIRECTORIES = "directories"  # every partition directory 0..N-1 is present
PLACEMENT = "placement"  # the count that puts the transactional ids where they are
SEARCH_LIMIT = 1000  # counts tried above the lower bound
_SAMPLE = 4000  # ids used for the placement vote (deterministic: the first ones)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionCount:
    """The partition count used for ``partitionFor`` and how it was chosen (``source``: GIVEN,
    METADATA, DIRECTORIES, PLACEMENT or DEFAULT).

    ``fits``/``ids`` count the (transactional id, partition) pairs it places right;
    ``alternatives`` are other counts that fit as many (empty when the choice is unambiguous).
    """

    count: int
    source: str
    fits: int = 0
    ids: int = 0
    alternatives: tuple[int, ...] = ()

    @property
    def describe(self) -> str:
        """One phrase for notes: ``50 (Kafka's default; ...)``."""
        n = self.count
        if self.source == GIVEN:
            why = "given with --transaction-state-partitions"
        elif self.source == METADATA:
            why = "from the KRaft metadata log"
        elif self.source == DIRECTORIES:
            why = f"every partition directory 0..{n - 1} is present"
        elif self.source == PLACEMENT:
            why = (f"the count that places {self.fits} of {self.ids} transactional ids where "
                   "they are")
        else:
            why = "Kafka's default; nothing in the evidence contradicts it"
        text = f"{n} ({why}"
        if self.alternatives:
            shown = ", ".join(str(c) for c in self.alternatives[:5])
            more = ", ..." if len(self.alternatives) > 5 else ""
            text += (f"; {shown}{more} fit the evidence as well: give "
                     "--transaction-state-partitions when you know the count")
        return text + ")"

    def to_dict(self) -> dict[str, object]:
        return {"num_partitions": self.count, "source": self.source, "ids_placed": self.fits,
                "ids": self.ids, "alternatives": list(self.alternatives)}


def detect_partition_count(present: Iterable[int], placements: Iterable[tuple[str, int]],
                           *, given: int | None = None, metadata: int | None = None
                           ) -> PartitionCount:
    """The partition count for ``partitionFor``: ``given`` when there is one, else the count of
    a KRaft metadata log (``metadata``), else the count the directories ``present`` and the ids'
    ``placements`` (transactional id, partition found in) agree with best (see the module
    docstring)."""
    pairs = list(dict.fromkeys(placements))
    for count, source in ((given, GIVEN), (metadata, METADATA)):
        if count is None:
            continue
        if count < 1:
            raise ValueError(f"the partition count must be >= 1, not {count}")
        fits = sum(java_utils_abs(java_string_hashcode(t)) % count == p for t, p in pairs)
        return PartitionCount(count=count, source=source, fits=fits, ids=len(pairs))
    dirs = set(present)
    lower = max(dirs | {p for _, p in pairs}, default=-1) + 1
    complete = lower if lower > 1 and dirs == set(range(lower)) else None
    if not pairs:
        if complete is not None:
            return PartitionCount(count=complete, source=DIRECTORIES)
        count = max(DEFAULT_NUM_PARTITIONS, lower)
        return PartitionCount(count=count, source=DEFAULT if count == DEFAULT_NUM_PARTITIONS
                              else DIRECTORIES)
    sample = pairs[:_SAMPLE]
    hashes = np.array([java_utils_abs(java_string_hashcode(t)) for t, _ in sample], np.int64)
    where = np.array([p for _, p in sample], np.int64)
    counts = np.arange(max(lower, 1), max(lower, 1) + SEARCH_LIMIT, dtype=np.int64)
    scores = np.zeros(len(counts), np.int64)
    for i in range(0, len(sample), 256):  # bounded memory: 256 ids x SEARCH_LIMIT counts
        h, w = hashes[i:i + 256, None], where[i:i + 256, None]
        scores += (h % counts[None, :] == w).sum(axis=0)
    best = int(scores.max())
    tied = [int(c) for c in counts[scores == best]]
    if complete is not None and complete in tied:
        count, source = complete, DIRECTORIES
    elif DEFAULT_NUM_PARTITIONS in tied:
        count, source = DEFAULT_NUM_PARTITIONS, DEFAULT
    else:
        count, source = tied[0], PLACEMENT
    fits = sum(java_utils_abs(java_string_hashcode(t)) % count == p for t, p in pairs)
    alternatives = tuple(c for c in tied if c != count) if source == PLACEMENT else ()
    return PartitionCount(count=count, source=source, fits=fits, ids=len(pairs),
                          alternatives=alternatives)

