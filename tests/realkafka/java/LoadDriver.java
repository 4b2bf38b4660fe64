import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * Loads copies of log dirs with Kafka's own storage classes, as a broker starting on them would,
 * and reports what the load made of each partition, as one JSON line per request.
 *
 * <p>Per request (one JSON line on stdin: {@code {"log_dir": ..., "now_ms": ...}}) it does what
 * {@code LogManager#loadLogs} / {@code #loadLog} do for one log dir: the clean-shutdown marker
 * ({@code CleanShutdownFileHandler}: present means no recovery), the recovery points and log
 * start offsets from {@code recovery-point-offset-checkpoint} and {@code log-start-offset-checkpoint}
 * ({@code OffsetCheckpointFile}; a file that does not read counts as empty), then
 * {@code UnifiedLog.create} (4.4: Java; 4.0: the Scala {@code kafka.log.UnifiedLog.apply}, both
 * reached by reflection) for every partition directory, which runs {@code LogLoader#load}.
 * The high watermark is then set as {@code Partition#updateHighWatermark} does from
 * {@code replication-offset-checkpoint} and as a leader alone in its ISR moves it (to the log end),
 * and the partition is read from its log start with {@code FetchIsolation.TXN_COMMITTED} until the
 * reads return nothing. Files are listed (name, size, CRC-32) before and after the load.
 *
 * <p>The directories given are changed by the load (recovery truncates, rebuilds indexes, writes
 * and deletes snapshots): give copies only. {@code now_ms} is the clock the load sees
 * (producer expiry on snapshot load).
 */
public final class LoadDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int EXPIRATION_MS = 86_400_000; // producer.id.expiration.ms default

    public static void main(String[] argv) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        System.setOut(new PrintStream(OutputStream0.INSTANCE));
        KafkaScheduler scheduler = new KafkaScheduler(1, true, "load-driver-");
        scheduler.startup();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                JsonNode request = JSON.readTree(line);
                answer = loadLogDir(new File(request.get("log_dir").asText()),
                    request.path("now_ms").asLong(System.currentTimeMillis()), scheduler);
            } catch (Throwable e) {
                answer = JSON.createObjectNode();
                answer.put("error", describe(e));
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
        scheduler.shutdown();
    }

    private static final class OutputStream0 extends java.io.OutputStream {
        static final OutputStream0 INSTANCE = new OutputStream0();

        @Override
        public void write(int b) {
        }
    }

    private static String describe(Throwable e) {
        Throwable t = e instanceof InvocationTargetException && e.getCause() != null ? e.getCause() : e;
        return t.getClass().getName() + ": " + t.getMessage();
    }

    private static Time fixedTime(long nowMs) {
        InvocationHandler handler = (proxy, method, args) -> {
            switch (method.getName()) {
                case "milliseconds":
                case "hiResClockMs":
                    return nowMs;
                case "nanoseconds":
                    return nowMs * 1_000_000L;
                case "sleep":
                    return null;
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                case "toString":
                    return "FixedTime(" + nowMs + ")";
                default:
                    if (method.isDefault()) {
                        return InvocationHandler.invokeDefault(proxy, method, args);
                    }
                    throw new UnsupportedOperationException(method.getName());
            }
        };
        return (Time) Proxy.newProxyInstance(Time.class.getClassLoader(), new Class<?>[] {Time.class}, handler);
    }

    private static Map<TopicPartition, Long> readCheckpoint(File file, LogDirFailureChannel channel) {
        try {
            return new OffsetCheckpointFile(file, channel).read();
        } catch (Throwable e) {
            return new HashMap<>(); // LogManager#loadLogs: an unreadable checkpoint counts as empty
        }
    }

    static ObjectNode loadLogDir(File logDir, long nowMs, KafkaScheduler scheduler) throws Exception {
        ObjectNode answer = JSON.createObjectNode();
        File marker = new File(logDir, ".kafka_cleanshutdown");
        boolean hadCleanShutdown = marker.exists();
        answer.put("had_clean_shutdown", hadCleanShutdown);
        LogDirFailureChannel channel = new LogDirFailureChannel(1);
        // Read before anything is created: OffsetCheckpointFile creates a missing file.
        File recoveryFile = new File(logDir, "recovery-point-offset-checkpoint");
        File startFile = new File(logDir, "log-start-offset-checkpoint");
        File hwFile = new File(logDir, "replication-offset-checkpoint");
        Map<TopicPartition, Long> recoveryPoints = recoveryFile.exists() ? readCheckpoint(recoveryFile, channel) : new HashMap<>();
        Map<TopicPartition, Long> logStarts = startFile.exists() ? readCheckpoint(startFile, channel) : new HashMap<>();
        Map<TopicPartition, Long> highWatermarks = hwFile.exists() ? readCheckpoint(hwFile, channel) : new HashMap<>();
        if (hadCleanShutdown) {
            Files.delete(marker.toPath()); // CleanShutdownFileHandler#delete
        }
        ObjectNode partitions = answer.putObject("partitions");
        File[] children = Optional.ofNullable(logDir.listFiles()).orElse(new File[0]);
        Arrays.sort(children);
        for (File dir : children) {
            if (!dir.isDirectory() || dir.getName().equals("remote-log-index-cache")) {
                continue;
            }
            ObjectNode report = partitions.putObject(dir.getName());
            Map<String, long[]> before = listFiles(dir);
            try {
                loadPartition(dir, nowMs, hadCleanShutdown, recoveryPoints, logStarts, highWatermarks, channel,
                    scheduler, report, before);
            } catch (Throwable e) {
                report.put("error", describe(e));
                putFiles(report, before, listFiles(dir));
            }
        }
        return answer;
    }

    private static Object unifiedLogCreate(File dir, LogConfig config, long logStart, long recoveryPoint,
                                           KafkaScheduler scheduler, Time time, LogDirFailureChannel channel,
                                           boolean hadCleanShutdown) throws Exception {
        BrokerTopicStats stats = new BrokerTopicStats(false);
        ProducerStateManagerConfig psmConfig = new ProducerStateManagerConfig(EXPIRATION_MS, false);
        int maxTxnTimeout = 900_000;
        int expireCheckMs = Integer.MAX_VALUE;
        try {
            Class<?> java = Class.forName("org.apache.kafka.storage.internals.log.UnifiedLog");
            for (Method m : java.getMethods()) {
                if (m.getName().equals("create") && m.getParameterCount() == 16) {
                    return m.invoke(null, dir, config, logStart, recoveryPoint, scheduler, stats, time, maxTxnTimeout,
                        psmConfig, expireCheckMs, channel, hadCleanShutdown, Optional.empty(),
                        new ConcurrentHashMap<String, Integer>(), false, LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
                }
            }
        } catch (ClassNotFoundException e) {
            // Kafka before 4.1: the Scala UnifiedLog
        }
        Class<?> scala = Class.forName("kafka.log.UnifiedLog");
        Object none = Class.forName("scala.Option").getMethod("empty").invoke(null);
        for (Method m : scala.getMethods()) {
            if (m.getName().equals("apply") && m.getParameterCount() == 17
                && java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                return m.invoke(null, dir, config, logStart, recoveryPoint, scheduler, stats, time, maxTxnTimeout,
                    psmConfig, expireCheckMs, channel, hadCleanShutdown, none, true,
                    new ConcurrentHashMap<String, Integer>(), false, LogOffsetsListener.NO_OP_OFFSETS_LISTENER);
            }
        }
        throw new IllegalStateException("no UnifiedLog.create or apply of the expected shape");
    }

    /** A public method ``name`` of ``target``, looked up on a public class or interface it has
     * (a JDK implementation class such as an immutable list is not accessible itself). */
    private static Object call(Object target, String name, Object... args) throws Exception {
        List<Class<?>> types = new ArrayList<>();
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            types.add(c);
            types.addAll(Arrays.asList(c.getInterfaces()));
        }
        for (Class<?> type : types) {
            if (!java.lang.reflect.Modifier.isPublic(type.getModifiers())) {
                continue;
            }
            for (Method m : type.getMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == args.length && accepts(m, args)) {
                    return m.invoke(target, args);
                }
            }
        }
        throw new NoSuchMethodException(target.getClass().getName() + "#" + name);
    }

    private static boolean accepts(Method m, Object[] args) {
        Class<?>[] params = m.getParameterTypes();
        for (int i = 0; i < args.length; i++) {
            Class<?> p = params[i];
            if (p.isPrimitive()) {
                Map<Class<?>, Class<?>> boxes = Map.of(long.class, Long.class, int.class, Integer.class,
                    boolean.class, Boolean.class, short.class, Short.class);
                p = boxes.getOrDefault(p, p);
            }
            if (args[i] != null && !p.isInstance(args[i])) {
                return false;
            }
        }
        return true;
    }

    /** A record accessor (4.4) or a public field (4.0) named ``name``. */
    private static Object prop(Object target, String name) throws Exception {
        try {
            return target.getClass().getMethod(name).invoke(target);
        } catch (NoSuchMethodException e) {
            return target.getClass().getField(name).get(target);
        }
    }

    /** An {@code Optional}, a Scala {@code Option} or an {@code OptionalLong}, as a Long or null. */
    private static Long optionalLong(Object value) throws Exception {
        if (value instanceof Optional<?> o) {
            return o.isPresent() ? toLong(o.get()) : null;
        }
        if (value instanceof OptionalLong o) {
            return o.isPresent() ? o.getAsLong() : null;
        }
        boolean defined = (Boolean) call(value, "isDefined");
        return defined ? toLong(call(value, "get")) : null;
    }

    private static Long toLong(Object value) throws Exception {
        if (value instanceof Number n) {
            return n.longValue();
        }
        return (Long) value.getClass().getField("messageOffset").get(value); // LogOffsetMetadata
    }

    private static List<Object> items(Object iterable) throws Exception {
        List<Object> out = new ArrayList<>();
        if (iterable instanceof Iterable<?> jit) {
            jit.forEach(out::add);
            return out;
        }
        Object it = call(iterable, "iterator");
        if (it instanceof Iterator<?> jit) {
            jit.forEachRemaining(out::add);
            return out;
        }
        while ((Boolean) call(it, "hasNext")) {
            out.add(call(it, "next"));
        }
        return out;
    }

    private static void putOffsets(ObjectNode node, Object log, String prefix) throws Exception {
        node.put(prefix + "high_watermark", (Long) call(log, "highWatermark"));
        Long unstable = optionalLong(call(log, "firstUnstableOffset"));
        if (unstable == null) {
            node.putNull(prefix + "first_unstable_offset");
        } else {
            node.put(prefix + "first_unstable_offset", unstable);
        }
        node.put(prefix + "last_stable_offset", (Long) call(log, "lastStableOffset"));
    }

    private static void loadPartition(File dir, long nowMs, boolean hadCleanShutdown,
                                      Map<TopicPartition, Long> recoveryPoints, Map<TopicPartition, Long> logStarts,
                                      Map<TopicPartition, Long> highWatermarks, LogDirFailureChannel channel,
                                      KafkaScheduler scheduler, ObjectNode report, Map<String, long[]> before)
        throws Exception {
        TopicPartition tp = parseTopicPartition(dir);
        long recoveryPoint = recoveryPoints.getOrDefault(tp, 0L);
        long logStart = logStarts.getOrDefault(tp, 0L);
        report.put("recovery_point_checkpoint", recoveryPoint);
        report.put("log_start_offset_checkpoint", logStart);
        LogConfig config = new LogConfig(new HashMap<>());
        Object log = unifiedLogCreate(dir, config, logStart, recoveryPoint, scheduler, fixedTime(nowMs), channel,
            hadCleanShutdown);
        try {
            Map<String, long[]> after = listFiles(dir);
            report.put("log_start_offset", (Long) call(log, "logStartOffset"));
            report.put("log_end_offset", (Long) call(log, "logEndOffset"));
            report.put("recovery_point", (Long) call(log, "recoveryPoint"));
            putOffsets(report, log, "loaded_");
            ArrayNode segments = report.putArray("segments");
            for (Object item : items(call(log, "logSegments"))) {
                LogSegment segment = (LogSegment) item;
                ObjectNode s = segments.addObject();
                s.put("base_offset", segment.baseOffset());
                s.put("size", segment.size());
                s.put("next_offset", segment.readNextOffset());
                ArrayNode aborted = s.putArray("aborted");
                for (Object txn : (List<?>) segment.txnIndex().allAbortedTxns()) {
                    ArrayNode a = aborted.addArray();
                    a.add((Long) call(txn, "producerId"));
                    a.add((Long) call(txn, "firstOffset"));
                    a.add((Long) call(txn, "lastOffset"));
                    a.add((Long) call(txn, "lastStableOffset"));
                }
            }
            ProducerStateManager psm = (ProducerStateManager) call(log, "producerStateManager");
            ObjectNode producers = report.putObject("producers");
            TreeMap<Long, ProducerStateEntry> sorted = new TreeMap<>(psm.activeProducers());
            for (Map.Entry<Long, ProducerStateEntry> e : sorted.entrySet()) {
                ProducerStateEntry entry = e.getValue();
                ObjectNode p = producers.putObject(Long.toString(e.getKey()));
                p.put("producer_epoch", entry.producerEpoch());
                p.put("coordinator_epoch", entry.coordinatorEpoch());
                ArrayNode batches = p.putArray("batches");
                for (Object meta : entry.batchMetadata()) {
                    ArrayNode b = batches.addArray();
                    b.add(((Number) prop(meta, "lastSeq")).longValue());
                    b.add(((Number) prop(meta, "lastOffset")).longValue());
                    b.add(((Number) prop(meta, "offsetDelta")).longValue());
                    b.add(((Number) prop(meta, "timestamp")).longValue());
                }
                p.put("last_data_offset", entry.lastDataOffset());
                p.put("last_timestamp", entry.lastTimestamp());
                OptionalLong first = entry.currentTxnFirstOffset();
                if (first.isPresent()) {
                    p.put("current_txn_first_offset", first.getAsLong());
                } else {
                    p.putNull("current_txn_first_offset");
                }
            }
            putFiles(report, before, after);
            Long checkpointHw = highWatermarks.get(tp);
            // Partition#updateHighWatermark: the checkpointed value, 0 when there is none
            call(log, "updateHighWatermark", checkpointHw == null ? 0L : checkpointHw);
            putOffsets(report, log, "checkpoint_");
            // a leader alone in its ISR: the high watermark reaches the log end
            call(log, "updateHighWatermark", (Long) call(log, "logEndOffset"));
            putOffsets(report, log, "");
            report.set("fetches", readCommitted(log));
        } finally {
            call(log, "close");
        }
    }

    private static ArrayNode readCommitted(Object log) throws Exception {
        ArrayNode fetches = JSON.createArrayNode();
        long offset = (Long) call(log, "logStartOffset");
        for (int round = 0; round < 100_000; round++) {
            ObjectNode fetch = JSON.createObjectNode();
            fetch.put("fetch_offset", offset);
            FetchDataInfo info;
            try {
                info = (FetchDataInfo) call(log, "read", offset, Integer.MAX_VALUE,
                    FetchIsolation.TXN_COMMITTED, true);
            } catch (InvocationTargetException e) {
                fetch.put("error", describe(e)); // e.g. OffsetOutOfRangeException: the consumer resets
                fetches.add(fetch);
                break;
            }
            ArrayNode batches = fetch.putArray("batches");
            long next = offset;
            for (Object batch : items(call(info.records, "batches"))) {
                ArrayNode b = batches.addArray();
                b.add((Long) call(batch, "baseOffset"));
                b.add((Long) call(batch, "lastOffset"));
                b.add((Long) call(batch, "producerId"));
                b.add((Boolean) call(batch, "isTransactional"));
                boolean control = (Boolean) call(batch, "isControlBatch");
                b.add(control);
                if (control) { // ControlRecordType from the first record's key: 0 ABORT, 1 COMMIT
                    Object record = call(call(batch, "iterator"), "next");
                    java.nio.ByteBuffer key = (java.nio.ByteBuffer) call(record, "key");
                    b.add(key.getShort(key.position() + 2));
                } else {
                    b.add(-1);
                }
                boolean valid = (Boolean) call(batch, "isValid"); // the consumer's check.crcs
                b.add(valid);
                ArrayNode records = b.addArray(); // what compaction left of a data batch
                if (valid && !control) {
                    java.util.Iterator<?> it = (java.util.Iterator<?>) call(batch, "iterator");
                    while (it.hasNext()) {
                        records.add((Long) call(it.next(), "offset"));
                    }
                }
                next = Math.max(next, (Long) call(batch, "lastOffset") + 1);
            }
            ArrayNode aborted = fetch.putArray("aborted");
            if (info.abortedTransactions.isPresent()) {
                for (Object txn : info.abortedTransactions.get()) {
                    ArrayNode a = aborted.addArray();
                    a.add((Long) call(txn, "producerId"));
                    a.add((Long) call(txn, "firstOffset"));
                }
            }
            if (batches.isEmpty()) {
                break;
            }
            fetches.add(fetch);
            offset = next;
        }
        return fetches;
    }

    private static TopicPartition parseTopicPartition(File dir) {
        String name = dir.getName();
        int dot = name.lastIndexOf('.');
        String base = dot > 0 && (name.endsWith("-delete") || name.endsWith("-future") || name.endsWith("-stray"))
            ? name.substring(0, dot) : name;
        int dash = base.lastIndexOf('-');
        return new TopicPartition(base.substring(0, dash), Integer.parseInt(base.substring(dash + 1)));
    }

    private static Map<String, long[]> listFiles(File dir) throws Exception {
        Map<String, long[]> out = new TreeMap<>();
        File[] files = Optional.ofNullable(dir.listFiles()).orElse(new File[0]);
        for (File f : files) {
            if (!f.isFile()) {
                continue;
            }
            byte[] bytes = Files.readAllBytes(f.toPath());
            CRC32 crc = new CRC32();
            crc.update(bytes);
            out.put(f.getName(), new long[] {bytes.length, crc.getValue()});
        }
        return out;
    }

    private static void putFiles(ObjectNode report, Map<String, long[]> before, Map<String, long[]> after) {
        ObjectNode files = report.putObject("files");
        ArrayNode created = files.putArray("created");
        ArrayNode deleted = files.putArray("deleted");
        ArrayNode rewritten = files.putArray("rewritten");
        for (Map.Entry<String, long[]> e : after.entrySet()) {
            long[] was = before.get(e.getKey());
            if (was == null) {
                created.add(e.getKey());
            } else if (!Arrays.equals(was, e.getValue())) {
                rewritten.add(e.getKey());
            }
        }
        for (String name : before.keySet()) {
            if (!after.containsKey(name)) {
                deleted.add(name);
            }
        }
        ObjectNode sizes = files.putObject("after");
        for (Map.Entry<String, long[]> e : after.entrySet()) {
            sizes.put(e.getKey(), e.getValue()[0]);
        }
    }
}
