"""What a partition directory says about its identity and history, for the metadata-log joins.

Its ``partition.metadata`` topic id (``PartitionMetadataFile``), its ``leader-epoch-checkpoint``
entries (``LeaderEpochFileCache``), the runs of batches by ``partitionLeaderEpoch`` (the epoch of
the leader that appended them: ``UnifiedLog#append`` stamps it) and the first batch of each
producer id, and each COMMIT marker with the epoch of the data it closes, from one columnar scan
of batch headers per segment. The facts' types are :mod:`kafkatx.analysis.partition_facts`'s.
"""

from __future__ import annotations

import numpy as np

from kafkatx.analysis.partition_facts import CommitSeen, EpochRun, PartitionFacts, ProducerSeen
from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.batch_layout import CONTROL_FLAG, TRANSACTIONAL_FLAG
from kafkatx.formats.checkpoints import (
    read_leader_epoch_checkpoint,
    read_partition_metadata,
)
from kafkatx.formats.record_batch import ControlType
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.files import open_bytes, read_text


def gather_partition_facts(pdir: PartitionDir) -> PartitionFacts:
    facts = PartitionFacts(topic=pdir.topic, partition=pdir.partition, path=str(pdir.path))
    try:
        if pdir.partition_metadata is not None:
            pm = read_partition_metadata(read_text(pdir.partition_metadata),
                                         path=str(pdir.partition_metadata))
            facts.topic_id, facts.topic_id_path = pm.topic_id, str(pdir.partition_metadata)
        if pdir.leader_epoch_checkpoint is not None:
            le = read_leader_epoch_checkpoint(read_text(pdir.leader_epoch_checkpoint),
                                              path=str(pdir.leader_epoch_checkpoint))
            facts.epoch_checkpoint = tuple(le.entries)
            facts.epoch_checkpoint_path = str(pdir.leader_epoch_checkpoint)
    except (FormatError, KafkatxError) as exc:
        facts.problems.append(str(exc))
    for seg in pdir.segments:
        if seg.log is None:
            continue
        try:
            with open_bytes(seg.log) as data:
                _scan(facts, scan_segment(data, path=str(seg.log)), str(seg.log))
        except KafkatxError as exc:
            facts.problems.append(str(exc))
    return facts


def _scan(facts: PartitionFacts, scan, path: str) -> None:
    h = scan.headers
    if not len(h):
        return
    v2 = np.flatnonzero(h.magic == 2)
    if not len(v2):
        return
    epochs = h.partition_leader_epoch[v2]
    starts = np.flatnonzero(np.concatenate(([True], epochs[1:] != epochs[:-1])))
    ends = np.concatenate((starts[1:], [len(v2)])) - 1
    base, last, pos = h.base_offset[v2], h.last_offset[v2], h.position[v2]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        run = EpochRun(int(epochs[s]), int(base[s]), int(last[e]), path, int(pos[s]))
        previous = facts.epoch_runs[-1] if facts.epoch_runs else None
        if previous is not None and previous.leader_epoch == run.leader_epoch:
            run = EpochRun(run.leader_epoch, previous.first_offset, run.last_offset,
                           previous.path, previous.position)
            facts.epoch_runs[-1] = run
        else:
            facts.epoch_runs.append(run)
    _commits(facts, scan, v2, path)
    pids = h.producer_id[v2]
    unique, first = np.unique(pids, return_index=True)
    for pid, i in zip(unique.tolist(), first.tolist(), strict=True):
        if pid >= 0 and pid not in facts.producers:
            facts.producers[pid] = ProducerSeen(pid, int(base[i]), path, int(pos[i]))


def _commits(facts: PartitionFacts, scan, v2: np.ndarray, path: str) -> None:
    """COMMIT markers with the epoch of the data they close (the producer's last transactional
    data batch before them in this partition; none seen: not recorded)."""
    h = scan.headers
    txn = v2[(h.attributes[v2] & TRANSACTIONAL_FLAG) != 0]
    for i in txn.tolist():
        pid, epoch = int(h.producer_id[i]), int(h.producer_epoch[i])
        if not h.attributes[i] & CONTROL_FLAG:
            facts.data_epochs[pid] = epoch
            continue
        data_epoch = facts.data_epochs.pop(pid, None)
        if int(scan.control_type[i]) == ControlType.COMMIT and data_epoch is not None:
            facts.commits.append(CommitSeen(pid, data_epoch, epoch, int(h.base_offset[i]),
                                            int(h.max_timestamp[i]), path, int(h.position[i])))
