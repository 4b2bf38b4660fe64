"""Kafka's own log load is the judge of ``--after-restart``: generated log dirs, both answers.

Each example is a log dir a broker wrote (:mod:`.logdirs`: transactions committed, aborted and
left open by several producers, idempotent and plain batches, segment rolls) then damaged or
cut as crashes, retention, DeleteRecords and lost files leave them. Kafka's storage classes load
a copy (``java/LoadDriver.java``: ``UnifiedLog.create`` -> ``LogLoader#load``, then reads with
``FetchIsolation.TXN_COMMITTED``) and kafkatx's model of that load
(:mod:`kafkatx.storage.log_load`, what ``--after-restart`` shows) reads the same files; every
field must agree (:mod:`.load_compare`).

CI runs a bounded, derandomised sample on both Kafka versions; ``KAFKATX_HYPOTHESIS_PROFILE=soak``
runs thousands. A mismatch found here is shrunk and kept in ``load_regressions/`` with Kafka's
answer (``test_load_regressions.py`` replays them without Java).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from .load_compare import differences, kafka_view, kafkatx_view
from .logdirs import PARTITION, TOPIC, LogDirSpec, build, specs
from .storage import KafkaLoad

settings.register_profile("load-ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
settings.register_profile("soak", max_examples=2500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
settings.register_profile("load-explore", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
PROFILE = os.environ.get("KAFKATX_HYPOTHESIS_PROFILE", "load-ci")
PARTITION_DIR = f"{TOPIC}-{PARTITION}"


def compare(spec: LogDirSpec, kafka_load: KafkaLoad) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="kafkatx-oracle-") as tmp:
        log_dir = Path(tmp) / "logdir"
        build(spec, log_dir)
        answer = kafka_load.load(log_dir, spec.now_ms)["partitions"][PARTITION_DIR]
        hw = int((log_dir / "replication-offset-checkpoint").read_text().split()[-1])
        return differences(kafka_view(answer),
                           kafkatx_view(log_dir, PARTITION_DIR, spec.now_ms, hw))


@settings(settings.get_profile(PROFILE))
@given(spec=specs())
def test_after_restart_equals_kafkas_load(spec: LogDirSpec, kafka_load: KafkaLoad) -> None:
    diffs = compare(spec, kafka_load)
    assert not diffs, f"{spec.to_json()}\n" + "\n".join(diffs)
