import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's own Java client (producer and consumer), driven line by line from the tests, so that
 * transactions v2 are exercised by the client that speaks them and a test can SIGKILL the client
 * at any step.
 *
 * <p>Each command is one stdin line of tab-separated fields; each answer is one stdout line,
 * {@code ok [...]} or {@code err <exception class> <message>}, preceded for {@code poll} by one
 * {@code rec} line per record. Keys and values are sent as UTF-8 text and come back in base64
 * (NUL stands for a null key or value both ways).
 *
 * <pre>
 * producer  k=v...                       a KafkaProducer with these properties
 * init | begin | commit | abort | flush | close
 * send      topic partition key value [timestamp [hkey=hvalue...]]
 *                                        an asynchronous send (partition -1: the partitioner's;
 *                                        timestamp: the record's CreateTime in epoch ms, - for
 *                                        now; then the record's headers)
 * offsets   group topic partition offset sendOffsetsToTransaction
 * consumer  k=v...                       a KafkaConsumer with these properties
 * assign    topic partition [topic partition...]
 * subscribe topic...
 * seek      topic partition offset
 * poll      millis                       rec topic partition offset key value, then ok n
 * end-offsets topic partition            ok offset (the LSO under read_committed)
 * position  topic partition              ok offset (the consumer's next fetch offset)
 * commit-sync                            commitSync of the consumer's positions
 * </pre>
 */
public final class ClientDriver {
    private static KafkaProducer<byte[], byte[]> producer;
    private static KafkaConsumer<byte[], byte[]> consumer;
    private static final List<Future<RecordMetadata>> pending = new ArrayList<>();

    private static Properties props(String[] fields, int from) {
        Properties props = new Properties();
        for (int i = from; i < fields.length; i++) {
            int eq = fields[i].indexOf('=');
            props.put(fields[i].substring(0, eq), fields[i].substring(eq + 1));
        }
        return props;
    }

    private static byte[] bytes(String text) {
        return text.equals("\u0000") ? null : text.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] data) {
        return data == null ? "\u0000" : Base64.getEncoder().encodeToString(data);
    }

    private static String run(String[] f, PrintStream out) throws Exception {
        switch (f[0]) {
            case "producer":
                Properties p = props(f, 1);
                p.put("key.serializer", ByteArraySerializer.class.getName());
                p.put("value.serializer", ByteArraySerializer.class.getName());
                producer = new KafkaProducer<>(p);
                return "ok";
            case "init":
                producer.initTransactions();
                return "ok";
            case "begin":
                producer.beginTransaction();
                return "ok";
            case "send":
                int partition = Integer.parseInt(f[2]);
                Long timestamp = f.length > 5 && !f[5].equals("-") ? Long.valueOf(f[5]) : null;
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(f[1],
                    partition < 0 ? null : partition, timestamp, bytes(f[3]), bytes(f[4]));
                for (int i = 6; i < f.length; i++) {
                    int eq = f[i].indexOf('=');
                    record.headers().add(f[i].substring(0, eq), bytes(f[i].substring(eq + 1)));
                }
                pending.add(producer.send(record));
                return "ok";
            case "flush":
                producer.flush();
                StringBuilder offsets = new StringBuilder("ok");
                for (Future<RecordMetadata> future : pending) {
                    offsets.append(' ').append(future.get().offset());
                }
                pending.clear();
                return offsets.toString();
            case "commit":
                producer.commitTransaction();
                pending.clear();
                return "ok";
            case "abort":
                producer.abortTransaction();
                pending.clear();
                return "ok";
            case "offsets":
                Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                commit.put(new TopicPartition(f[2], Integer.parseInt(f[3])),
                    new OffsetAndMetadata(Long.parseLong(f[4])));
                producer.sendOffsetsToTransaction(commit, new ConsumerGroupMetadata(f[1]));
                return "ok";
            case "close":
                if (producer != null) {
                    producer.close(Duration.ofSeconds(10));
                    producer = null;
                }
                if (consumer != null) {
                    consumer.close(Duration.ofSeconds(10));
                    consumer = null;
                }
                return "ok";
            case "consumer":
                Properties c = props(f, 1);
                c.put("key.deserializer", ByteArrayDeserializer.class.getName());
                c.put("value.deserializer", ByteArrayDeserializer.class.getName());
                consumer = new KafkaConsumer<>(c);
                return "ok";
            case "assign":
                List<TopicPartition> parts = new ArrayList<>();
                for (int i = 1; i + 1 < f.length; i += 2) {
                    parts.add(new TopicPartition(f[i], Integer.parseInt(f[i + 1])));
                }
                consumer.assign(parts);
                return "ok";
            case "subscribe":
                List<String> topics = new ArrayList<>();
                for (int i = 1; i < f.length; i++) {
                    topics.add(f[i]);
                }
                consumer.subscribe(topics);
                return "ok";
            case "seek":
                consumer.seek(new TopicPartition(f[1], Integer.parseInt(f[2])), Long.parseLong(f[3]));
                return "ok";
            case "poll":
                int n = 0;
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(Long.parseLong(f[1])))) {
                    out.println("rec\t" + r.topic() + "\t" + r.partition() + "\t" + r.offset() + "\t"
                        + text(r.key()) + "\t" + text(r.value()));
                    n++;
                }
                return "ok " + n;
            case "end-offsets":
                TopicPartition tp = new TopicPartition(f[1], Integer.parseInt(f[2]));
                return "ok " + consumer.endOffsets(List.of(tp)).get(tp);
            case "position":
                return "ok " + consumer.position(new TopicPartition(f[1], Integer.parseInt(f[2])));
            case "commit-sync":
                consumer.commitSync();
                return "ok";
            default:
                return "err IllegalArgumentException unknown command " + f[0];
        }
    }

    public static void main(String[] argv) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String answer;
            try {
                answer = run(line.split("\t", -1), out);
            } catch (Exception e) {
                Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException
                    ? e.getCause() : e;
                answer = "err " + cause.getClass().getName() + " "
                    + String.valueOf(cause.getMessage()).replace('\n', ' ');
            }
            out.println(answer);
        }
    }
}
