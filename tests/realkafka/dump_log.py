"""Kafka's ``kafka-dump-log.sh`` output (``DumpLogSegments``), parsed into plain values.

``DumpLogSegments`` prints one ``Dumping <file>`` section per file: for a segment a batch line
(``baseOffset: 0 lastOffset: 1 ... isvalid: true``) followed, with ``--deep-iteration``, by one
``| offset: ...`` line per record (``key: ... payload: ...`` with ``--print-data-log`` or a
decoder; the control record's ``endTxnMarker: COMMIT coordinatorEpoch: 0`` or KRaft control
JSON); for an index ``offset: N position: P``; for a time index ``timestamp: T offset: O``; for a
transaction index ``version: 0 producerId: ...``; for a producer snapshot ``producerId: ...``.
The parser reads exactly those lines (Kafka 4.0's Scala tool and 4.2+'s Java one print the
same) and nothing else, so a change in Kafka's format fails loudly rather than comparing nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_PAIR = re.compile(r"(\w+): (\S+)")
_RECORD_HEAD = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?P<ts_type>\w+): (?P<timestamp>-?\d+) "
    r"keySize: (?P<key_size>-?\d+) valueSize: (?P<value_size>-?\d+)"
    r"(?: sequence: (?P<sequence>-?\d+) headerKeys: \[(?P<headers>[^\]]*)\])?"
    r"(?: isValid: (?P<is_valid>\w+) crc: (?P<crc>\d+))?")
_KRAFT_CONTROL = ("LeaderChange:", "SnapshotHeader", "SnapshotFooter", "KRaftVersion",
                  "KRaftVoters")


@dataclass
class DumpedRecord:
    offset: int
    timestamp_type: str
    timestamp: int
    key_size: int
    value_size: int
    sequence: int | None
    header_keys: list[str] | None
    marker: str | None = None  # COMMIT / ABORT
    coordinator_epoch: int | None = None
    # (LeaderChange / SnapshotHeader / ..., its JSON), or (LEADER_CHANGE / ..., None) from Kafka
    # 4.0's tool, which names the control type without decoding it
    kraft_control: tuple[str, Any] | None = None
    key: str | None = None  # as printed (a decoder's JSON text, or the StringDecoder's text)
    payload: str | None = None


@dataclass
class DumpedBatch:
    fields: dict[str, str]
    records: list[DumpedRecord] = field(default_factory=list)

    def int(self, name: str) -> int:
        return int(self.fields[name])


@dataclass
class DumpedFile:
    path: str
    batches: list[DumpedBatch] = field(default_factory=list)
    lines: list[dict[str, str]] = field(default_factory=list)  # index / snapshot / txnindex
    notes: list[str] = field(default_factory=list)  # "... is empty.", "passed sanity check", ...
    trailing_invalid_bytes: int = 0


def parse_dump(stdout: str) -> dict[str, DumpedFile]:
    """Every ``Dumping`` section of ``stdout``, by the path Kafka printed."""
    files: dict[str, DumpedFile] = {}
    current: DumpedFile | None = None
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            current = files.setdefault(line[len("Dumping "):], DumpedFile(line[len("Dumping "):]))
            continue
        if current is None or not line.strip():
            continue
        if line.startswith("| offset: "):
            current.batches[-1].records.append(_record(line))
        elif line.startswith(("baseOffset: ", "offset: ")) and " position: " in line and (
                " magic: " in line):
            current.batches.append(DumpedBatch(dict(_PAIR.findall(line))))
        elif line.startswith(("Log starting offset:", "Snapshot end offset:",
                              "KRaft bootstrap snapshot")):
            continue
        elif line.startswith("Found ") and "invalid bytes at the end of" in line:
            current.trailing_invalid_bytes = int(line.split()[1])
        elif line.startswith(("offset: ", "timestamp: ", "version: ", "producerId: ")):
            current.lines.append(dict(_PAIR.findall(line)))
        elif line.endswith((" is empty.", " passed sanity check.")):
            current.notes.append(line)
        else:
            raise ValueError(f"a line kafka-dump-log.sh prints that this parser does not know: "
                             f"{line!r}")
    return files


def _record(line: str) -> DumpedRecord:
    m = _RECORD_HEAD.match(line)
    if m is None:
        raise ValueError(f"not a record line: {line!r}")
    headers = m["headers"]
    rec = DumpedRecord(
        offset=int(m["offset"]), timestamp_type=m["ts_type"], timestamp=int(m["timestamp"]),
        key_size=int(m["key_size"]), value_size=int(m["value_size"]),
        sequence=None if m["sequence"] is None else int(m["sequence"]),
        header_keys=None if headers is None else ([] if headers == "" else headers.split(",")))
    rest = line[m.end():]
    if rest.startswith(" endTxnMarker: "):
        pairs = dict(_PAIR.findall(rest))
        rec.marker, rec.coordinator_epoch = pairs["endTxnMarker"], int(pairs["coordinatorEpoch"])
        return rec
    if rest.startswith(" controlType: "):  # Kafka 4.0's tool names other control types only
        rec.kraft_control = (rest[len(" controlType: "):].partition("(")[0], None)
        return rec
    for name in _KRAFT_CONTROL:
        if rest.startswith(" " + name + " "):
            rec.kraft_control = (name.rstrip(":"), json.loads(rest[len(name) + 2:]))
            return rec
    if rest.startswith(" key: "):
        rest = rest[len(" key: "):]
        if rest.startswith("{"):
            _, end = json.JSONDecoder().raw_decode(rest)
        else:
            end = rest.find(" payload: ")
            end = len(rest) if end < 0 else end
        rec.key, rest = rest[:end], rest[end:]
    if rest.startswith(" payload: "):
        rec.payload = rest[len(" payload: "):]
    elif rest:
        raise ValueError(f"unexpected record tail {rest!r} in {line!r}")
    return rec


def optional_long(text: str) -> int | None:
    """``OptionalLong.empty`` -> None, ``OptionalLong[5]`` -> 5 (and a bare number)."""
    if text == "OptionalLong.empty":
        return None
    if text.startswith("OptionalLong["):
        return int(text[len("OptionalLong["):-1])
    return int(text)


def decoded_json(text: str | None) -> Any:
    """A coordinator decoder's key or payload: JSON, or ``<DELETE>`` (a tombstone) as None."""
    if text is None or text == "<DELETE>":
        return None
    return json.loads(text)
