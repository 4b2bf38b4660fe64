"""The ``quorum-state`` file as ``FileQuorumStateStore`` writes and reads it."""

from __future__ import annotations

import json

import pytest

from kafkatx.errors import FormatError
from kafkatx.formats.quorum_state import QuorumState, build_quorum_state, read_quorum_state


def test_version_0_as_kraft_version_0_writes_it() -> None:
    """QuorumStateDataJsonConverter at data_version 0: clusterId, appliedOffset, currentVoters."""
    state = QuorumState(data_version=0, leader_id=1, leader_epoch=5, voted_id=-1, cluster_id="",
                        applied_offset=0, current_voters=(1, 2, 3))
    raw = build_quorum_state(state)
    assert json.loads(raw) == {"clusterId": "", "leaderId": 1, "leaderEpoch": 5, "votedId": -1,
                               "appliedOffset": 0, "currentVoters": [{"voterId": 1},
                                                                     {"voterId": 2},
                                                                     {"voterId": 3}],
                               "data_version": 0}
    assert read_quorum_state(raw) == state


def test_version_1_has_the_voted_directory_id() -> None:
    """data_version 1 (KRaftVersion 1): votedDirectoryId, no voters or applied offset."""
    raw = b'{"leaderId":-1,"leaderEpoch":3,"votedId":2,"votedDirectoryId":' \
          b'"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}\n'
    state = read_quorum_state(raw)
    assert (state.leader_id, state.leader_epoch, state.voted_id) == (-1, 3, 2)
    assert state.current_voters is None and state.applied_offset is None
    assert build_quorum_state(state) + b"\n" == raw


@pytest.mark.parametrize("text,message", [
    ("", "prematurely"),
    ("[1]", "not an object"),
    ('{"leaderId":1}', "data_version"),
    ('{"data_version":2}', "not within"),
    ('{"leaderEpoch":1,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
     '"data_version":1}', "leaderId"),
    ("{nope", "not JSON"),
])
def test_bad_files_are_one_line_errors(text: str, message: str) -> None:
    """FileQuorumStateStore#readStateFromFile refuses these (and the generated JSON converter
    requires every field of the version)."""
    with pytest.raises(FormatError, match=message):
        read_quorum_state(text, path="quorum-state")
