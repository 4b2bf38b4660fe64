from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import (
    CHECKPOINT_FILE_NAMES,
    ZERO_UUID,
    CheckpointEntry,
    EpochEntry,
    build_leader_epoch_checkpoint,
    build_meta_properties,
    build_offset_checkpoint,
    build_partition_metadata,
    java_date_string,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    uuid_from_bytes,
    uuid_to_bytes,
)
from tests.formats.roundtrip import assert_roundtrip

TOPIC_ID = "UXyU9i5ARn6W00ON2taeWA"  # a Uuid string used in Kafka's UuidTest

topics = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                 min_size=1, max_size=60)
checkpoint_entries = st.lists(st.builds(CheckpointEntry, topic=topics,
                                        partition=st.integers(0, 10_000),
                                        offset=st.integers(0, 2**50)), max_size=30)
epoch_entries = st.lists(st.builds(EpochEntry, epoch=st.integers(0, 2**31 - 1),
                                   start_offset=st.integers(0, 2**50)), max_size=30)
uuid_strings = st.binary(min_size=16, max_size=16).map(uuid_from_bytes)


def test_checkpoint_file_names() -> None:
    assert set(CHECKPOINT_FILE_NAMES) == {
        "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}


# ---- offset checkpoints -----------------------------------------------------------------------


def test_offset_checkpoint_text_matches_builder() -> None:
    expected = b"0\n2\n__consumer_offsets 17 4242\nmy-topic 0 9000000000\n"
    entries = [CheckpointEntry(topic="__consumer_offsets", partition=17, offset=4242),
               CheckpointEntry(topic="my-topic", partition=0, offset=9_000_000_000)]
    assert build_offset_checkpoint(entries) == expected
    cp = read_offset_checkpoint(expected)
    assert cp.version == 0 and cp.declared_count == 2 and cp.problems == ()
    assert list(cp.entries) == entries
    assert [e.line_number for e in cp.entries] == [3, 4]
    assert cp.as_map() == {("__consumer_offsets", 17): 4242, ("my-topic", 0): 9_000_000_000}
    assert read_offset_checkpoint(expected.decode()) == cp


@settings(max_examples=100)
@given(checkpoint_entries)
def test_offset_checkpoint_roundtrip(entries: list[CheckpointEntry]) -> None:
    assert_roundtrip(tuple(entries), build_offset_checkpoint,
                     lambda b: read_offset_checkpoint(b).entries)
    assert read_offset_checkpoint(build_offset_checkpoint(entries)).problems == ()


def test_empty_and_version_only_files_have_no_entries() -> None:
    for text in ("", "0\n", "0"):
        cp = read_offset_checkpoint(text)
        assert cp.entries == () and cp.problems == () and cp.declared_count is None


def test_wrong_version_is_reported() -> None:
    cp = read_offset_checkpoint("1\n1\nt 0 5\n", path="rp")
    assert cp.version == 1 and len(cp.entries) == 1
    assert [(p.position, p.field, p.path) for p in cp.problems] == [(0, "version", "rp")]
    assert "line 1" in cp.problems[0].message


def test_count_mismatch_is_reported() -> None:
    cp = read_offset_checkpoint("0\n3\nt 0 5\nt 1 6\n")
    assert len(cp.entries) == 2
    assert [(p.position, p.field) for p in cp.problems] == [(2, "count")]


def test_malformed_lines_are_reported_with_position() -> None:
    text = "0\n4\nt 0 5\nt x 6\n t 2 7\nt 3\n"
    cp = read_offset_checkpoint(text)
    assert [e.partition for e in cp.entries] == [0]
    lines = text.split("\n")
    starts = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    assert [p.position for p in cp.problems] == [starts[3], starts[4], starts[5]]
    assert ["line 4" in cp.problems[0].message, "line 5" in cp.problems[1].message] == [True] * 2


def test_java_whitespace_split_rules() -> None:
    # Kafka splits on \s+: trailing whitespace is dropped, tabs and runs separate fields.
    cp = read_offset_checkpoint("0\n2\nt\t0   5  \nu 1 6\n")
    assert [(e.topic, e.partition, e.offset) for e in cp.entries] == [("t", 0, 5), ("u", 1, 6)]
    assert cp.problems == ()


def test_crlf_and_cr_line_endings() -> None:
    cp = read_offset_checkpoint(b"0\r\n2\r\nt 0 5\rt 1 6")
    assert [e.offset for e in cp.entries] == [5, 6] and cp.problems == ()


def test_out_of_range_numbers_and_bad_utf8() -> None:
    cp = read_offset_checkpoint(b"0\n3\nt 2147483648 5\nt 0 9223372036854775808\n\xff 0 1\n")
    assert cp.entries == ()
    assert len(cp.problems) == 3
    assert (cp.problems[2].field, cp.problems[2].position) == ("entry", 43)
    assert "UTF-8" in cp.problems[2].message


def test_positions_are_byte_offsets_for_text_input() -> None:
    cp = read_offset_checkpoint("0\n2\nthé 0 1\nbad\n")
    assert cp.entries[0].topic == "thé"
    assert cp.problems[0].position == len("0\n2\nthé 0 1\n".encode())


def test_builder_rejects_whitespace_topics() -> None:
    with pytest.raises(ValueError):
        build_offset_checkpoint([CheckpointEntry(topic="a b", partition=0, offset=0)])


# ---- leader-epoch-checkpoint ------------------------------------------------------------------


def test_leader_epoch_text_matches_builder() -> None:
    expected = b"0\n3\n0 0\n4 1500\n7 98765\n"
    entries = [EpochEntry(epoch=0, start_offset=0), EpochEntry(epoch=4, start_offset=1500),
               EpochEntry(epoch=7, start_offset=98765)]
    assert build_leader_epoch_checkpoint(entries) == expected
    cp = read_leader_epoch_checkpoint(expected)
    assert list(cp.entries) == entries and cp.problems == ()
    assert cp.to_dict()["entries"][1] == {  # type: ignore[index]
        "epoch": 4, "start_offset": 1500, "line_number": 4}


@settings(max_examples=100)
@given(epoch_entries)
def test_leader_epoch_roundtrip(entries: list[EpochEntry]) -> None:
    assert_roundtrip(tuple(entries), build_leader_epoch_checkpoint,
                     lambda b: read_leader_epoch_checkpoint(b).entries)


def test_leader_epoch_malformed() -> None:
    cp = read_leader_epoch_checkpoint("0\n2\n1 2 3\n1 20\n")
    assert [e.start_offset for e in cp.entries] == [20]
    assert [p.position for p in cp.problems] == [4]


# ---- Uuid -------------------------------------------------------------------------------------


def test_uuid_string_form() -> None:
    assert uuid_from_bytes(bytes(16)) == ZERO_UUID
    # Uuid(0L, 1L) = METADATA_TOPIC_ID: most significant long first, big-endian.
    assert uuid_from_bytes(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    raw = uuid_to_bytes(TOPIC_ID)
    assert len(raw) == 16 and uuid_from_bytes(raw) == TOPIC_ID
    assert uuid_to_bytes(TOPIC_ID + "==") == raw  # Java's decoder accepts padding


@given(st.binary(min_size=16, max_size=16))
def test_uuid_roundtrip(raw: bytes) -> None:
    text = uuid_from_bytes(raw)
    assert len(text) == 22 and "=" not in text
    assert text == base64.urlsafe_b64encode(raw).decode()[:22]
    assert uuid_to_bytes(text) == raw


@pytest.mark.parametrize("text", [
    "", "AAAA", "A" * 21, "A" * 23, "A" * 24, TOPIC_ID + "=", "UXyU9i5ARn6W00ON2tae+A",
    "UXyU9i5ARn6W00ON2tae/A", " " + TOPIC_ID[1:], "A" * 43,
])
def test_uuid_invalid(text: str) -> None:
    with pytest.raises(FormatError):
        uuid_to_bytes(text)


def test_uuid_from_wrong_length_bytes() -> None:
    with pytest.raises(ValueError):
        uuid_from_bytes(bytes(15))


# ---- partition.metadata -----------------------------------------------------------------------


def test_partition_metadata_text_matches_builder() -> None:
    expected = f"version: 0\ntopic_id: {TOPIC_ID}".encode()
    assert build_partition_metadata(TOPIC_ID) == expected
    pm = read_partition_metadata(expected)
    assert pm.version == 0 and pm.topic_id == TOPIC_ID and pm.problems == ()
    assert pm.topic_id_bytes == uuid_to_bytes(TOPIC_ID)


def test_partition_metadata_builder_rejects_bad_ids() -> None:
    with pytest.raises(ValueError):
        build_partition_metadata("not-a-uuid")


@given(uuid_strings.filter(lambda u: u != ZERO_UUID))
def test_partition_metadata_roundtrip(topic_id: str) -> None:
    assert_roundtrip(topic_id, build_partition_metadata,
                     lambda b: read_partition_metadata(b).topic_id)


def test_partition_metadata_accepts_newer_version_and_trailing_lines() -> None:
    pm = read_partition_metadata(f"version: 3\ntopic_id:\t{TOPIC_ID}\nextra\n")
    assert pm.version == 3 and pm.topic_id == TOPIC_ID and pm.problems == ()


@pytest.mark.parametrize(("text", "field", "position"), [
    ("version:0\ntopic_id: " + TOPIC_ID, "version", 0),
    ("version: -1\ntopic_id: " + TOPIC_ID, "version", 0),
    ("version: x\ntopic_id: " + TOPIC_ID, "version", 0),
    ("version: 0\ntopic: " + TOPIC_ID, "topic_id", 11),
    ("version: 0\ntopic_id: " + ZERO_UUID, "topic_id", 11),
    ("version: 0\ntopic_id: nope", "topic_id", 11),
    ("version: 0\n", "topic_id", 11),
    ("", "version", 0),
])
def test_partition_metadata_problems(text: str, field: str, position: int) -> None:
    pm = read_partition_metadata(text, path="partition.metadata")
    assert [(p.field, p.position) for p in pm.problems][:1] == [(field, position)]
    assert all(p.path == "partition.metadata" for p in pm.problems)


# ---- meta.properties --------------------------------------------------------------------------

WHEN = datetime(2023, 11, 9, 17, 40, 36, tzinfo=UTC)


def test_java_date_string() -> None:
    assert java_date_string(WHEN) == "Thu Nov 09 17:40:36 UTC 2023"
    assert java_date_string(WHEN.astimezone(timezone(timedelta(hours=2)))) == \
        "Thu Nov 09 17:40:36 UTC 2023"


def test_meta_properties_text_matches_builder() -> None:
    props = {"version": "1", "node.id": "3", "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk",
             "directory.id": TOPIC_ID}
    expected = (b"#\n#Thu Nov 09 17:40:36 UTC 2023\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
                b"directory.id=" + TOPIC_ID.encode() + b"\nnode.id=3\nversion=1\n")
    assert build_meta_properties(props, written_at=WHEN) == expected
    mp = read_meta_properties(expected)
    assert mp.properties == props and mp.problems == ()
    assert (mp.version, mp.node_id, mp.cluster_id, mp.directory_id) == (
        1, 3, "MkU3OEVBNTcwNTJENDM2Qk", TOPIC_ID)
    assert mp.comments == ("", "Thu Nov 09 17:40:36 UTC 2023")


@settings(max_examples=100)
@given(st.dictionaries(
    st.text("abcdefghijklmnopqrstuvwxyz._ =:#!\\", min_size=1, max_size=20),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-_ =:#!\\\t", max_size=30),
    max_size=8))
def test_meta_properties_roundtrip_with_escapes(props: dict[str, str]) -> None:
    assert_roundtrip(props, lambda p: build_meta_properties(p, written_at=WHEN),
                     lambda b: read_meta_properties(b).properties)


def test_meta_properties_zookeeper_v0() -> None:
    mp = read_meta_properties("#\n#Mon Jan 01 00:00:00 UTC 2018\nversion=0\nbroker.id=2\n")
    assert (mp.version, mp.node_id, mp.cluster_id) == (0, 2, None) and mp.problems == ()
    # No version at all means version 0; broker.id is optional there.
    mp = read_meta_properties("cluster.id=abc\n")
    assert (mp.version, mp.node_id, mp.cluster_id) == (0, None, "abc") and mp.problems == ()


def test_meta_properties_java_syntax() -> None:
    text = ("! bang comment\n   # indented comment\n\n"
            "  version : 1\n"
            "node.id 7\n"
            "cluster.id=ab\\\n     cd\n"
            "weird\\ key=\\u0041\\tz\n"
            "empty\n")
    mp = read_meta_properties(text)
    assert mp.problems == ()
    assert mp.properties == {"version": "1", "node.id": "7", "cluster.id": "abcd",
                             "weird key": "A\tz", "empty": ""}
    assert mp.comments == (" bang comment", " indented comment")


def test_meta_properties_problems() -> None:
    mp = read_meta_properties("version=1\ncluster.id=x\n", path="meta.properties")
    assert [(p.field, p.position) for p in mp.problems] == [("node.id", None)]
    mp = read_meta_properties("version=1\nnode.id=1\n")
    assert [p.field for p in mp.problems] == ["cluster.id"]
    mp = read_meta_properties("version=2\nnode.id=1\n")  # V2: cluster.id optional
    assert mp.problems == ()
    mp = read_meta_properties("version=9\n")
    assert [p.field for p in mp.problems] == ["version"] and mp.version is None
    mp = read_meta_properties("version= 1 \nnode.id=x\ncluster.id=c\n")
    assert mp.version == 1  # MetaPropertiesVersion trims; node.id is parsed untrimmed
    assert [(p.field, p.position) for p in mp.problems] == [("node.id", 12)]
    assert "line 2" in mp.problems[0].message
    mp = read_meta_properties("version=0\ndirectory.id=bad\nx=\\u12\n")
    assert sorted(p.field or "" for p in mp.problems) == ["directory.id", "line"]
    assert mp.directory_id is None


@settings(max_examples=150)
@given(st.binary(max_size=200))
def test_text_readers_never_raise_on_garbage(data: bytes) -> None:
    for reader in (read_offset_checkpoint, read_leader_epoch_checkpoint, read_partition_metadata,
                   read_meta_properties):
        result = reader(data)
        assert all(isinstance(p, FormatError) for p in result.problems)
        result.to_dict()


@settings(max_examples=100)
@given(st.text(alphabet="0123456789 \t\n\r-+xé", max_size=80))
def test_checkpoint_reader_never_raises_on_near_valid_text(text: str) -> None:
    for reader in (read_offset_checkpoint, read_leader_epoch_checkpoint):
        result = reader("0\n" + text)
        assert all(isinstance(p, FormatError) for p in result.problems)
