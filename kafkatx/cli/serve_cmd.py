"""``kafkatx serve``: run the embedded Kafka-protocol broker on a log dir until SIGTERM/Ctrl-C."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

import click
from rich.console import Console

from kafkatx.broker.composition import build_cluster, run_broker, run_cluster
from kafkatx.broker.config.broker_config import (
    DEFAULT_CLEANER_BACKOFF_MS,
    DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
    DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
    DEFAULT_INTERNAL_SEGMENT_BYTES,
    DEFAULT_RETENTION_CHECK_INTERVAL_MS,
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_MS,
    DEFAULT_TRANSACTION_ABORT_INTERVAL_MS,
    DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
    DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS,
    BrokerConfig,
)
from kafkatx.broker.control import start_control
from kafkatx.broker.faults import RULE_HELP, FaultRule, FaultRuleError, Faults, parse_rule
from kafkatx.broker.kraft.metadata_log import DEFAULT_SNAPSHOT_BYTES
from kafkatx.broker.logdir.capture_copy import copy_capture
from kafkatx.broker.protocol.handlers import load_handlers
from kafkatx.broker.protocol.lifecycle import stop_request
from kafkatx.broker.protocol.server import Broker
from kafkatx.broker.replication.cluster import Cluster, broker_command, broker_dir
from kafkatx.errors import KafkatxError


def _parse_faults(ctx: click.Context, param: click.Parameter,
                  values: tuple[str, ...]) -> tuple[FaultRule, ...]:
    try:
        served = load_handlers()
        return tuple(parse_rule(v, served) for v in values)
    except FaultRuleError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _global_verbose() -> bool:
    """``kafkatx serve --verbose``: the CLI takes ``--verbose`` anywhere on the line as the
    global option, so serve's own flag arrives there."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and (root.obj or {}).get("verbose", 0))


@click.command("serve", epilog=(
    "\b\nExamples:\n"
    "  kafkatx serve --log-dir /tmp/kafkatx-data --port 9092\n"
    "  kafkatx serve --log-dir /tmp/kafkatx-3 --brokers 3"))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback unless you mean it).")
@click.option("--port", default=9092, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on; 0 picks a free one (printed at start).")
@click.option("--log-dir", default="./kafkatx-data", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="The Kafka log dir to write (created if missing, loaded if present).")
@click.option("--control-port", type=click.IntRange(0, 65535), default=None,
              help="Also listen on this loopback port (0: a free one, printed as `control on "
                   "HOST:PORT` after `listening on`) for fault commands at run time: `add RULE`, "
                   "`remove RULE`, `clear`, `list` (what kafkatx.testing uses).")
@click.option("--from", "from_dir", default=None, metavar="CAPTURE",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Serve a copy of a captured broker log dir: it is copied (reflinked where "
                   "the file system can) into --log-dir, which must be new or empty, and "
                   "loaded as Kafka would load it; the capture's bytes and mtimes never "
                   "change. The capture's node.id is used unless --node-id is given.")
@click.option("--partitions", "num_partitions", default=1, show_default=True,
              type=click.IntRange(1), help="Partitions of auto-created topics (num.partitions).")
@click.option("--auto-create/--no-auto-create", default=True, show_default=True,
              help="Create unknown topics asked for in Metadata (auto.create.topics.enable).")
@click.option("--segment-bytes", default=DEFAULT_SEGMENT_BYTES, show_default=True,
              type=click.IntRange(14), help="Roll segments at this size (log.segment.bytes).")
@click.option("--segment-ms", default=DEFAULT_SEGMENT_MS, show_default=True,
              type=click.IntRange(1),
              help="Roll a segment once its batches' timestamps span this long (log.roll.ms; "
                   "per topic: segment.ms).")
@click.option("--log-retention-check-interval-ms",
              default=DEFAULT_RETENTION_CHECK_INTERVAL_MS, show_default=True,
              type=click.IntRange(1),
              help="How often segments past retention.ms / retention.bytes (or below the log "
                   "start offset) are deleted (log.retention.check.interval.ms).")
@click.option("--log-cleaner-backoff-ms", default=DEFAULT_CLEANER_BACKOFF_MS, show_default=True,
              type=click.IntRange(1),
              help="How long the log cleaner sleeps when no compacted log needs cleaning "
                   "(log.cleaner.backoff.ms).")
@click.option("--offsets-topic-segment-bytes", default=DEFAULT_INTERNAL_SEGMENT_BYTES,
              show_default=True, type=click.IntRange(1),
              help="segment.bytes of __consumer_offsets (offsets.topic.segment.bytes).")
@click.option("--transaction-state-segment-bytes", default=DEFAULT_INTERNAL_SEGMENT_BYTES,
              show_default=True, type=click.IntRange(1),
              help="segment.bytes of __transaction_state "
                   "(transaction.state.log.segment.bytes).")
@click.option("--node-id", default=1, show_default=True, type=click.IntRange(0),
              help="This broker's node id (node.id in meta.properties).")
@click.option("--transaction-max-timeout-ms", default=DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
              show_default=True, type=click.IntRange(1),
              help="Largest transaction timeout a producer may ask for "
                   "(transaction.max.timeout.ms).")
@click.option("--transaction-abort-interval-ms", default=DEFAULT_TRANSACTION_ABORT_INTERVAL_MS,
              show_default=True, type=click.IntRange(1),
              help="How often transactions past their timeout are aborted "
                   "(transaction.abort.timed.out.transaction.cleanup.interval.ms).")
@click.option("--transactional-id-expiration-ms",
              default=DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS, show_default=True,
              type=click.IntRange(1),
              help="Idle time after which a transactional id is forgotten "
                   "(transactional.id.expiration.ms).")
@click.option("--group-initial-rebalance-delay-ms",
              default=DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS, show_default=True,
              type=click.IntRange(0),
              help="How long a new group waits for more members before its first rebalance "
                   "(group.initial.rebalance.delay.ms).")
@click.option("--group-min-session-timeout-ms",
              default=DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS, show_default=True,
              type=click.IntRange(0),
              help="Shortest session timeout a group member may ask for "
                   "(group.min.session.timeout.ms).")
@click.option("--metadata-snapshot-bytes", default=DEFAULT_SNAPSHOT_BYTES, show_default=True,
              type=click.IntRange(1),
              help="Write a KRaft snapshot of the metadata log (__cluster_metadata-0) once this "
                   "many bytes of metadata records were appended since the last one "
                   "(metadata.log.max.record.bytes.between.snapshots); one is also written at "
                   "every clean shutdown.")
@click.option("--transaction-version", default=0, type=click.IntRange(0, 2),
              help="The cluster's finalized transaction.version feature (default: the level "
                   "the log dir's metadata log has finalized, a capture's with --from; 0 for a "
                   "new log dir): 0 as Kafka 3.0; 1 adds "
                   "flexible __transaction_state values and KIP-890 part 1 produce "
                   "verification; 2 offers transactions v2 (KIP-890: an epoch bump per "
                   "transaction, partitions added by Produce v12 / TxnOffsetCommit v5) to "
                   "clients that negotiate it.")
@click.option("--fault", "faults", multiple=True, metavar="RULE", callback=_parse_faults,
              help="Inject a fault (repeatable), to reproduce a broken transaction: "
                   + RULE_HELP + ".")
@click.option("--brokers", "num_brokers", default=1, show_default=True, type=click.IntRange(1),
              help="Run N brokers in this process (node ids --node-id .. --node-id+N-1, ports "
                   "--port .. --port+N-1 or all free with --port 0, log dirs "
                   "LOG_DIR/broker-<id>), replicating as Kafka does; see docs/serve.md.")
@click.option("--default-replication-factor", type=click.IntRange(1), default=None,
              help="Replicas of auto-created topics and of CreateTopics without one with "
                   "--brokers N (default.replication.factor; default: min(N, 3)).")
@click.option("--replica-lag-time-max-ms", default=30_000, show_default=True,
              type=click.IntRange(1),
              help="A follower not caught up for this long leaves the ISR "
                   "(replica.lag.time.max.ms; --brokers N).")
@click.option("--connections-max-idle-ms", default=600_000, show_default=True,
              type=click.IntRange(1),
              help="Close a connection that sent nothing for this long, also one stalled in "
                   "the middle of a request (connections.max.idle.ms).")
@click.option("--queued-max-request-bytes", default=104_857_600, show_default=True,
              type=click.IntRange(1),
              help="Request bytes read or handled at once over all connections "
                   "(queued.max.request.bytes; Kafka's default is unbounded): a connection "
                   "waits before reading a request that does not fit.")
@click.option("--verbose", is_flag=True,
              help="Log every request, and how long each start-up phase took, on stderr.")
def serve_command(host: str, port: int, log_dir: Path, num_partitions: int, auto_create: bool,
                  segment_bytes: int, segment_ms: int, log_retention_check_interval_ms: int,
                  log_cleaner_backoff_ms: int, offsets_topic_segment_bytes: int,
                  transaction_state_segment_bytes: int, node_id: int,
                  transaction_max_timeout_ms: int,
                  transaction_abort_interval_ms: int, transactional_id_expiration_ms: int,
                  group_initial_rebalance_delay_ms: int, group_min_session_timeout_ms: int,
                  transaction_version: int, faults: tuple[FaultRule, ...],
                  metadata_snapshot_bytes: int,
                  verbose: bool, from_dir: Path | None = None,
                  control_port: int | None = None, num_brokers: int = 1,
                  default_replication_factor: int | None = None,
                  replica_lag_time_max_ms: int = 30_000,
                  connections_max_idle_ms: int = 600_000,
                  queued_max_request_bytes: int = 104_857_600) -> None:
    """Run a single-node Kafka-protocol broker that writes a real Kafka log dir.

    Real clients (librdkafka, kafka-python, aiokafka, ...) produce, fetch, run transactions and
    consumer groups against it; the log dir it leaves is what a Kafka broker would write
    (including the coordinators' __transaction_state and __consumer_offsets partitions), ready
    for `kafkatx inspect`. Prints
    `listening on HOST:PORT` on stdout once it accepts connections. SIGTERM or Ctrl-C shut it
    down cleanly at any moment (also while the log dir loads): producer snapshots, indexes and
    checkpoints are written, exit status 0; a second signal, or a clean stop not done within
    20 s, exits at once with 128 + the signal number.
    A crash-after fault exits with status 3 instead.
    """
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if num_brokers > 1 and from_dir is not None:
        raise click.UsageError("--from serves one broker's capture; it cannot be used with "
                               "--brokers")
    if default_replication_factor is not None and default_replication_factor > num_brokers:
        raise click.UsageError(f"--default-replication-factor {default_replication_factor} "
                               f"needs at least that many brokers (--brokers {num_brokers})")
    if from_dir is not None:
        node_id = _copy_capture(from_dir, log_dir, node_id, console)
    if click.get_current_context().get_parameter_source("transaction_version") is \
            click.core.ParameterSource.DEFAULT:
        # --brokers N: the controller's metadata log is in the first broker's log dir.
        transaction_version = _finalized_transaction_version(
            log_dir if num_brokers == 1 else broker_dir(log_dir, node_id))
    config = BrokerConfig(host=host, port=port, log_dir=log_dir, num_partitions=num_partitions,
                          auto_create_topics=auto_create, segment_bytes=segment_bytes,
                          segment_ms=segment_ms,
                          retention_check_interval_ms=log_retention_check_interval_ms,
                          cleaner_backoff_ms=log_cleaner_backoff_ms,
                          offsets_topic_segment_bytes=offsets_topic_segment_bytes,
                          transaction_state_segment_bytes=transaction_state_segment_bytes,
                          node_id=node_id, verbose=verbose or _global_verbose(),
                          transaction_max_timeout_ms=transaction_max_timeout_ms,
                          transaction_abort_interval_ms=transaction_abort_interval_ms,
                          transactional_id_expiration_ms=transactional_id_expiration_ms,
                          group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
                          group_min_session_timeout_ms=group_min_session_timeout_ms,
                          transaction_version=transaction_version, faults=faults,
                          metadata_snapshot_bytes=metadata_snapshot_bytes,
                          replica_lag_time_max_ms=replica_lag_time_max_ms,
                          connections_max_idle_ms=connections_max_idle_ms,
                          queued_max_request_bytes=queued_max_request_bytes)
    if num_brokers > 1:
        _serve_cluster(config, num_brokers, default_replication_factor or min(num_brokers, 3),
                       console, control_port)
        return

    tasks: list[asyncio.Future[asyncio.Server]] = []  # keeps the control server referenced

    def listening(broker: Broker) -> None:
        broker.log(f"kafkatx serve: node {node_id}, log dir {log_dir}, cluster "
                   f"{broker.logs.cluster_id}")
        for rule in faults:
            broker.warn(f"fault injected: {rule}")
        sys.stdout.write(f"listening on {broker.advertised_host}:{broker.port}\n")
        sys.stdout.flush()
        if control_port is not None:
            tasks.append(asyncio.ensure_future(_control(broker, host, control_port)))

    try:
        asyncio.run(run_broker(config, console=console, on_listening=listening,
                               stop=stop_request()))
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc}") from None


def _finalized_transaction_version(log_dir: Path) -> int:
    """The finalized ``transaction.version`` of the log dir's metadata log (0 without one):
    features live in the metadata log (``FeatureControlManager``), so a restart, or a capture
    served with ``--from``, keeps the level the cluster had."""
    from kafkatx.analysis.cluster_view import build_cluster_view
    from kafkatx.formats.internal_topics import METADATA_TOPIC
    from kafkatx.storage.metadata_log import open_metadata_dir

    path = log_dir / f"{METADATA_TOPIC}-0"
    if not path.is_dir():
        return 0
    image = build_cluster_view(open_metadata_dir(path)).image
    return image.features.get("transaction.version", 0)


def _serve_cluster(config: BrokerConfig, num_brokers: int, replication_factor: int,
                   console: Console, control_port: int | None) -> None:
    """``--brokers N``: the brokers and their controller in this process."""
    configs = {}
    for i in range(num_brokers):
        node_id = config.node_id + i
        configs[node_id] = dataclasses.replace(
            config, node_id=node_id, port=config.port + i if config.port else 0,
            log_dir=broker_dir(Path(config.log_dir), node_id))
    cluster = build_cluster(configs, console=console,
                            default_replication_factor=replication_factor)
    tasks: list[asyncio.Future[asyncio.Server]] = []

    def listening(cluster: Cluster) -> None:
        first = next(iter(cluster.brokers.values()))
        first.log(f"kafkatx serve: {num_brokers} brokers (node ids {min(configs)}.."
                  f"{max(configs)}), log dirs {config.log_dir}/broker-<id>, cluster "
                  f"{cluster.cluster_id}, default replication factor {replication_factor}")
        for rule in config.faults:
            first.warn(f"fault injected: {rule}")
        sys.stdout.write("listening on " + ",".join(
            f"{b.advertised_host}:{b.port}" for _, b in sorted(cluster.brokers.items())) + "\n")
        sys.stdout.flush()
        if control_port is not None:
            tasks.append(asyncio.ensure_future(_cluster_control(cluster, config.host,
                                                                control_port)))

    try:
        asyncio.run(run_cluster(cluster, stop_request(), listening))
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {config.host}:{config.port}: {exc}") \
            from None


async def _cluster_control(cluster: Cluster, host: str, port: int) -> asyncio.Server:
    state = {"faults": Faults(tuple(next(iter(cluster.configs.values())).faults))}

    def put(faults: Faults) -> None:
        state["faults"] = faults
        for broker in cluster.brokers.values():
            for rule in set(faults.rules) - set(broker.faults.rules):
                broker.warn(f"fault injected: {rule}")
            broker.faults = faults

    def follow_new_brokers() -> None:
        for broker in cluster.brokers.values():
            broker.faults = state["faults"]

    cluster.on_change.append(follow_new_brokers)
    server = await start_control(host, port, lambda: state["faults"], put,
                                 lambda line: broker_command(cluster, line))
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"control on {host}:{bound}\n")
    sys.stdout.flush()
    return server


def _copy_capture(capture: Path, log_dir: Path, node_id: int, console: Console) -> int:
    """Copy the capture into the log dir; the node id serve runs as."""
    try:
        copied = copy_capture(capture, log_dir)
    except KafkatxError as exc:
        raise click.UsageError(str(exc)) from None
    ctx = click.get_current_context()
    if copied.node_id is not None and \
            ctx.get_parameter_source("node_id") is click.core.ParameterSource.DEFAULT:
        node_id = copied.node_id
    how = f", {copied.reflinked} reflinked" if copied.reflinked else ""
    console.print(f"kafkatx serve: copied {copied.files} file(s), {copied.bytes} bytes{how}, "
                  f"from {capture} into {log_dir}; the capture itself is never written",
                  markup=False)
    return node_id


async def _control(broker: Broker, host: str, port: int) -> asyncio.Server:
    def put(faults: Faults) -> None:
        for rule in set(faults.rules) - set(broker.faults.rules):
            broker.warn(f"fault injected: {rule}")
        broker.faults = faults

    server = await start_control(host, port, lambda: broker.faults, put)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"control on {host}:{bound}\n")
    sys.stdout.flush()
    return server  # kept referenced by its task until the loop ends
