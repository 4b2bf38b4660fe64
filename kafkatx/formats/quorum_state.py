"""The KRaft ``quorum-state`` file: one JSON line (``FileQuorumStateStore``).

``QuorumStateData`` as ``QuorumStateDataJsonConverter`` writes it (camelCase names, every field
of the version) plus ``data_version`` (0 or 1: ``KRaftVersion#quorumStateVersion``; version 0
has ``clusterId``, ``appliedOffset`` and ``currentVoters``, version 1 ``votedDirectoryId``).
Read like ``FileQuorumStateStore#readStateFromFile``: the first line, an object, a
``data_version`` within 0..1, each field of that version present.
"""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any

from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import ZERO_UUID, uuid_to_bytes
from kafkatx.formats.kafka_messages import Versions
from kafkatx.formats.metadata_schemas import QUORUM_STATE
from kafkatx.lazy_dataclass import dataclass

FILE_NAME = "quorum-state"  # FileQuorumStateStore.DEFAULT_FILE_NAME
DATA_VERSIONS = (0, 1)


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumState:
    """A KRaft ``quorum-state`` file's fields."""

    data_version: int
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: str | None = None
    cluster_id: str | None = None
    applied_offset: int | None = None
    current_voters: tuple[int, ...] | None = None
    path: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"data_version": self.data_version, "leader_id": self.leader_id,
                "leader_epoch": self.leader_epoch, "voted_id": self.voted_id,
                "voted_directory_id": self.voted_directory_id, "cluster_id": self.cluster_id,
                "applied_offset": self.applied_offset,
                "current_voters": None if self.current_voters is None
                else list(self.current_voters)}


def read_quorum_state(data: bytes | str, *, path: str | None = None) -> QuorumState:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    line = text.split("\n", 1)[0].rstrip("\r")

    def bad(message: str, what: str = "quorum-state") -> FormatError:
        return FormatError(message, path=path, position=0, field=what)

    if not line:
        raise bad("file ended prematurely (no first line)")
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise FormatError(f"not JSON: {exc.msg}", path=path, position=exc.pos,
                          field="quorum-state") from None
    if not isinstance(obj, dict):
        raise bad(f"the first line is a JSON {type(obj).__name__}, not an object")
    version = obj.get("data_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad("no integer data_version field", "data_version")
    if version not in DATA_VERSIONS:
        raise bad(f"data_version ({version}) is not within the min (0) and max (1) supported "
                  "version", "data_version")
    values: dict[str, Any] = {}
    for f in QUORUM_STATE.fields:
        name = _camel(f.name)
        present = version in Versions(f.versions)
        if not present:
            continue
        if name not in obj:
            raise bad(f"unable to locate field '{name}', which is mandatory in version "
                      f"{version}", name)
        values[f.key] = obj[name]
    for key in ("leader_id", "leader_epoch", "voted_id", "applied_offset"):
        if key in values and (not isinstance(values[key], int) or isinstance(values[key], bool)):
            raise bad(f"{key} is not an integer: {values[key]!r}", key)
    voters = values.get("current_voters")
    if voters is not None:
        if not isinstance(voters, list) or not all(isinstance(v, dict) and isinstance(
                v.get("voterId"), int) for v in voters):
            raise bad("currentVoters is not a list of {voterId}", "currentVoters")
        voters = tuple(v["voterId"] for v in voters)
    directory = values.get("voted_directory_id")
    if directory is not None:
        try:
            uuid_to_bytes(directory)
        except (FormatError, TypeError):
            raise bad(f"votedDirectoryId {directory!r} is not a Uuid",
                      "votedDirectoryId") from None
    return QuorumState(data_version=version, leader_id=values.get("leader_id", -1),
                       leader_epoch=values.get("leader_epoch", -1),
                       voted_id=values.get("voted_id", -1), voted_directory_id=directory,
                       cluster_id=values.get("cluster_id"),
                       applied_offset=values.get("applied_offset"),
                       current_voters=voters, path=path)


def build_quorum_state(state: QuorumState) -> bytes:
    """The line ``FileQuorumStateStore#writeElectionStateToFile`` writes (no newline)."""
    v = state.data_version
    obj: dict[str, Any] = {}
    if v == 0:
        obj["clusterId"] = state.cluster_id or ""
    obj.update(leaderId=state.leader_id, leaderEpoch=state.leader_epoch, votedId=state.voted_id)
    if v >= 1:
        obj["votedDirectoryId"] = state.voted_directory_id or ZERO_UUID
    if v == 0:
        obj["appliedOffset"] = state.applied_offset or 0
        obj["currentVoters"] = (None if state.current_voters is None
                                else [{"voterId": x} for x in state.current_voters])
    obj["data_version"] = v
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")
