import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * benchmarks/compare.py's test-suite step with the Java client: short tests in a row, each the shape of most Kafka
 * integration tests (a topic of 3 partitions, 10 keyed records produced, read back by a new consumer group that
 * commits), with clients of its own and the client's default settings. The argument is "PROTOCOL:COUNT"; the result
 * gives each test's milliseconds from its start to each mark, as benchmarks/common.py's short_test does.
 */
final class BenchmarkScenarios {
    static final int PARTITIONS = 3;
    static final int RECORDS = 10;
    static final Duration POLL = Duration.ofMillis(100);

    private BenchmarkScenarios() {
    }

    static Map<String, Object> shortTests(Driver.Ctx ctx) throws Exception {
        String[] arg = ctx.arg.split(":");
        String protocol = arg[0];
        int count = Integer.parseInt(arg[1]);
        List<Object> tests = new ArrayList<>();
        for (int i = 0; i < count; i++) tests.add(shortTest(ctx.bootstrap, ctx.name + "-" + i, protocol));
        return Map.of("tests", tests);
    }

    static Map<String, Object> shortTest(String bootstrap, String name, String protocol) throws Exception {
        long start = System.nanoTime();
        Map<String, Object> marks = new LinkedHashMap<>();
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(List.of(new NewTopic(name, PARTITIONS, (short) 1))).all().get();
        }
        mark(marks, "topic created", start);
        Properties producer = new Properties();
        producer.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<String, String> client =
                new KafkaProducer<>(producer, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) client.send(new ProducerRecord<>(name, "key-" + i, "value-" + i));
            client.flush();
        }
        mark(marks, "produced", start);
        Properties consumer = new Properties();
        consumer.put("bootstrap.servers", bootstrap);
        consumer.put("group.id", name);
        consumer.put("group.protocol", protocol);
        consumer.put("auto.offset.reset", "earliest");
        consumer.put("enable.auto.commit", "false");
        try (KafkaConsumer<String, String> client =
                new KafkaConsumer<>(consumer, new StringDeserializer(), new StringDeserializer())) {
            client.subscribe(List.of(name));
            mark(marks, "subscribed", start);
            int read = 0;
            long deadline = System.nanoTime() + Scenarios.WAIT_S * 1_000_000_000L;
            while (read < RECORDS) {
                int got = client.poll(POLL).count();
                if (got > 0 && read == 0) mark(marks, "first record", start);
                read += got;
                if (System.nanoTime() > deadline) throw new IllegalStateException(name + ": " + read + " records");
            }
            mark(marks, "all read", start);
            client.commitSync();
            mark(marks, "committed", start);
        }
        mark(marks, "closed", start);
        return marks;
    }

    private static void mark(Map<String, Object> marks, String what, long start) {
        marks.put(what, (System.nanoTime() - start) / 1e9);
    }
}
