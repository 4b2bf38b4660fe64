"""Kafka's own answers: its command-line tools and its Java client, run from the tests.

``KafkaTools`` runs ``kafka-transactions.sh``, ``kafka-consumer-groups.sh`` and
``kafka-dump-log.sh`` (their main classes) in one long-lived JVM (``java/ToolServer.java``).
``JavaClient`` drives Kafka's Java producer and consumer (``java/ClientDriver.java``) step by
step, in a process a test may SIGKILL.
"""

from __future__ import annotations

import base64
import contextlib
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import dist
from .node import close_pipes, end_line_driver, java_command

TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TOOL_TIMEOUT_S = 120.0


def dump_log_class(version: str) -> str:
    """DumpLogSegments moved from the Scala broker jar to kafka-tools in Kafka 4.2."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return ("org.apache.kafka.tools.DumpLogSegments" if (major, minor) >= (4, 2)
            else "kafka.tools.DumpLogSegments")


@dataclass(frozen=True)
class ToolResult:
    status: int
    stdout: str
    stderr: str

    def check(self) -> ToolResult:
        if self.status != 0:
            raise AssertionError(f"Kafka tool exited {self.status}:\n{self.stdout}\n{self.stderr}")
        return self


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of a table Kafka's tools print (a header line, then whitespace-separated rows)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    rows = []
    for line in lines[1:]:
        cells = line.split()
        if len(cells) == len(header) - 1:  # an empty last column (e.g. no TopicPartitions)
            cells.append("")
        if len(cells) != len(header):
            continue
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


class KafkaTools:
    """One JVM of Kafka ``version`` that runs its tools' main classes on request."""

    def __init__(self, version: str) -> None:
        self.version = version
        drivers = dist.driver_classes(version)
        self._proc = subprocess.Popen(
            java_command(version, "ToolServer", log_level="warn", extra_classpath=[drivers]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._lock = threading.Lock()

    def run(self, main_class: str, *args: str) -> ToolResult:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        assert all("\t" not in a and "\n" not in a for a in args)
        with self._lock:
            self._proc.stdin.write(("\t".join([main_class, *args]) + "\n").encode())
            self._proc.stdin.flush()
            header = self._proc.stdout.readline()
            if not header:
                raise RuntimeError(f"Kafka's tool JVM ({self.version}) died")
            status, out_len, err_len = (int(x) for x in header.split())
            out = self._read(out_len)
            err = self._read(err_len)
        return ToolResult(status, out.decode(errors="replace"), err.decode(errors="replace"))

    def _read(self, size: int) -> bytes:
        assert self._proc.stdout is not None
        data = b""
        while len(data) < size:
            chunk = self._proc.stdout.read(size - len(data))
            if not chunk:
                raise RuntimeError("Kafka's tool JVM closed its output")
            data += chunk
        return data

    def close(self) -> None:
        end_line_driver(self._proc)

    # kafka-transactions.sh
    def transactions(self, bootstrap: str, *args: str) -> ToolResult:
        return self.run(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, *args)

    def describe_producers(self, bootstrap: str, topic: str, partition: int,
                           broker_id: int | None = None) -> list[dict[str, str]]:
        """Rows: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
        CurrentTransactionStartOffset (``None`` when no transaction is open). From the
        partition's leader, or with ``broker_id`` from that broker's replica (a follower's
        too)."""
        args = ["describe-producers", "--topic", topic, "--partition", str(partition)]
        if broker_id is not None:
            args += ["--broker-id", str(broker_id)]
        return parse_table(self.transactions(bootstrap, *args).check().stdout)

    def find_hanging(self, bootstrap: str, broker_id: int,
                     max_transaction_timeout_ms: int | None = None) -> list[dict[str, str]]:
        """Rows: Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset
        LastTimestamp Duration(min)."""
        args = ["find-hanging", "--broker-id", str(broker_id)]
        if max_transaction_timeout_ms is not None:
            # the tool takes minutes
            args += ["--max-transaction-timeout", str(max(1, max_transaction_timeout_ms // 60000))]
        result = self.transactions(bootstrap, *args).check()
        return parse_table(result.stdout)

    def describe_transaction(self, bootstrap: str, transactional_id: str) -> dict[str, str]:
        """CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
        TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions
        (comma-separated; empty when the transaction has none, as after CompleteCommit)."""
        result = self.transactions(bootstrap, "describe", "--transactional-id",
                                   transactional_id).check()
        lines = [line for line in result.stdout.replace(", ", ",").splitlines() if line.strip()]
        if len(lines) < 2:
            return {}
        header, cells = lines[0].split(), lines[1].split()
        if len(cells) == len(header) - 1:  # no partitions: the last column is empty
            cells.append("")
        return dict(zip(header, cells, strict=True))

    # kafka-features.sh
    def finalized_features(self, bootstrap: str) -> dict[str, str]:
        """``describe``: each feature's FinalizedVersionLevel (metadata.version as its release,
        e.g. ``4.0-IV3``; the others as a level; ``0`` when not finalized)."""
        result = self.run(FEATURE_COMMAND, "--bootstrap-server", bootstrap, "describe").check()
        out = {}
        for line in result.stdout.splitlines():  # tab-separated (4.0) or padded (4.4) fields
            fields = dict(re.findall(r"(\w+):\s+(\S+)", line))
            if "Feature" in fields and "FinalizedVersionLevel" in fields:
                out[fields["Feature"]] = fields["FinalizedVersionLevel"]
        return out

    # kafka-consumer-groups.sh
    def describe_group_state(self, bootstrap: str, group: str) -> dict[str, str]:
        """``--describe --state``: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS."""
        result = self.run(CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                          "--group", group, "--state")
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        if len(lines) < 2:
            return {}
        # the coordinator column is "host:port  (id)": two words under one header
        cells = lines[1].split()
        strategy = "" if cells[-3].endswith(")") else cells[-3]  # empty for an empty group
        return {"GROUP": cells[0], "ASSIGNMENT-STRATEGY": strategy, "STATE": cells[-2],
                "#MEMBERS": cells[-1]}

    def describe_group(self, bootstrap: str, group: str) -> list[dict[str, str]]:
        """Rows: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
        CLIENT-ID."""
        result = self.run(CONSUMER_GROUP_COMMAND, "--bootstrap-server", bootstrap, "--describe",
                          "--group", group)
        return [row for row in parse_table(result.stdout) if row.get("GROUP") == group]

    # kafka-dump-log.sh
    def dump_log(self, files: list[Path], *flags: str) -> ToolResult:
        return self.run(dump_log_class(self.version), "--files", ",".join(map(str, files)),
                        *flags)


class JavaClientError(RuntimeError):
    def __init__(self, exception: str, message: str) -> None:
        super().__init__(f"{exception}: {message}")
        self.exception = exception
        self.message = message


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _decode(field: str) -> bytes | None:
    return None if field == "\0" else base64.b64decode(field)


class JavaClient:
    """Kafka's Java producer or consumer of ``version``, one command at a time."""

    def __init__(self, version: str, log_path: Path) -> None:
        self.version = version
        drivers = dist.driver_classes(version)
        with open(log_path, "ab") as log:
            self._proc = subprocess.Popen(
                java_command(version, "ClientDriver", log_level="warn", extra_classpath=[drivers]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)

    def call(self, *fields: Any) -> list[str]:
        """Send one command; the ``rec`` lines before its answer, then the answer's words."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(("\t".join(map(str, fields)) + "\n").encode())
        self._proc.stdin.flush()
        lines = []
        while True:
            line = self._proc.stdout.readline().decode().rstrip("\n")
            if not line:
                raise RuntimeError(f"Kafka's Java client died during {fields[0]}")
            if line.startswith("rec\t"):
                lines.append(line)
                continue
            word, _, rest = line.partition(" ")
            if word == "err":
                exception, _, message = rest.partition(" ")
                raise JavaClientError(exception, message)
            return [*lines, rest]

    def producer(self, **props: Any) -> None:
        self.call("producer", *(f"{k.replace('_', '.')}={v}" for k, v in props.items()))

    def consumer(self, **props: Any) -> None:
        self.call("consumer", *(f"{k.replace('_', '.')}={v}" for k, v in props.items()))

    def send(self, topic: str, partition: int, key: str | None, value: str | None,
             timestamp_ms: int | None = None,
             headers: dict[str, str] | None = None) -> None:
        """An asynchronous send; ``timestamp_ms``: the record's CreateTime (default: now)."""
        fields: list[Any] = [topic, partition, "\0" if key is None else key,
                             "\0" if value is None else value]
        if timestamp_ms is not None or headers:
            fields.append("-" if timestamp_ms is None else timestamp_ms)
        fields += [f"{k}={v}" for k, v in (headers or {}).items()]
        self.call("send", *fields)

    def flush(self) -> list[int]:
        """Waits for every send since the last flush; their offsets."""
        return [int(x) for x in self.call("flush")[-1].split()]

    def poll(self, millis: int) -> list[ConsumedRecord]:
        records = []
        for line in self.call("poll", millis)[:-1]:
            _, topic, partition, offset, key, value = line.split("\t")
            records.append(ConsumedRecord(topic, int(partition), int(offset), _decode(key),
                                          _decode(value)))
        return records

    def end_offset(self, topic: str, partition: int) -> int:
        return int(self.call("end-offsets", topic, partition)[-1])

    def position(self, topic: str, partition: int) -> int:
        return int(self.call("position", topic, partition)[-1])

    def kill(self) -> None:
        """SIGKILL: the client dies with whatever it had in flight."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)
        close_pipes(self._proc)

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(RuntimeError, BrokenPipeError):
                self.call("close")
        end_line_driver(self._proc, 20)

    def __getattr__(self, name: str) -> Any:
        """``init()``, ``begin()``, ``commit()``, ``abort()``, ``assign(...)``, ..."""
        if name.startswith("_"):
            raise AttributeError(name)
        command = name.replace("_", "-")
        return lambda *args: self.call(command, *args)[-1]

