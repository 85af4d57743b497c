import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The scenario table and what the scenarios share: client settings, topic creation, waiting. */
final class Scenarios {
    static final Duration POLL = Duration.ofMillis(100);
    static final long WAIT_S = 30;

    interface Scenario {
        Map<String, Object> run(Driver.Ctx ctx) throws Exception;
    }

    /** Every scenario by the name the driver is given. */
    private static final Map<String, Scenario> TABLE = new HashMap<>();

    static {
        TABLE.put("produce_consume", ClientScenarios::produceConsume);
        TABLE.put("group", ClientScenarios::group);
        TABLE.put("static_membership", ClientScenarios::staticMembership);
        TABLE.put("cooperative_sticky", ClientScenarios::cooperativeSticky);
        TABLE.put("regex_subscription", ClientScenarios::regexSubscription);
        TABLE.put("auto_create", ClientScenarios::autoCreate);
        TABLE.put("acks", ClientScenarios::acks);
        TABLE.put("auto_commit", ClientScenarios::autoCommit);
        TABLE.put("mixed_group", ClientScenarios::mixedGroup);
        TABLE.put("large_message", ClientScenarios::largeMessage);
        TABLE.put("reset_past_end", ClientScenarios::resetPastEnd);
        TABLE.put("rack_fetch", ClientScenarios::rackFetch);
        TABLE.put("failover", FailoverScenarios::crash);
        TABLE.put("transaction_failover", FailoverScenarios::transactionCoordinatorCrash);
        TABLE.put("idempotent", TransactionScenarios::idempotent);
        TABLE.put("transactions", TransactionScenarios::transactions);
        TABLE.put("consume_transform_produce", TransactionScenarios::consumeTransformProduce);
        TABLE.put("admin_transactions", TransactionScenarios::adminTools);
        TABLE.put("pending_offsets", TransactionScenarios::pendingOffsets);
        TABLE.put("fencing", TransactionScenarios::fencing);
        TABLE.put("sasl", SecurityScenarios::sasl);
        TABLE.put("scram_users", SecurityScenarios::scramUsers);
        TABLE.put("admin_cluster", AdminScenarios::cluster);
        TABLE.put("admin_records", AdminScenarios::records);
        TABLE.put("admin_groups", AdminScenarios::groups);
        TABLE.put("admin_invalid_configs", AdminScenarios::invalidConfigs);
        TABLE.put("admin_broker_configs", AdminScenarios::brokerConfigs);
        TABLE.put("admin_partitions", AdminScenarios::partitions);
        TABLE.put("short_tests", BenchmarkScenarios::shortTests);
    }

    static Map<String, Object> run(String name, Driver.Ctx ctx) throws Exception {
        Scenario scenario = TABLE.get(name);
        if (scenario == null) throw new IllegalArgumentException("unknown scenario " + name);
        return scenario.run(ctx);
    }

    static Properties common(Driver.Ctx ctx) {
        Properties props = new Properties();
        props.put("bootstrap.servers", ctx.bootstrap);
        props.put("client.id", ctx.name);
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "30000");
        return props;
    }

    static Admin admin(Driver.Ctx ctx) {
        Properties props = common(ctx);
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        return Admin.create(props);
    }

    static KafkaProducer<String, String> producer(Driver.Ctx ctx, Properties extra) {
        Properties props = common(ctx);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.putAll(extra);
        return new KafkaProducer<>(props);
    }

    static KafkaConsumer<String, String> consumer(Driver.Ctx ctx, Properties extra) {
        Properties props = common(ctx);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (!"consumer".equals(extra.get(ConsumerConfig.GROUP_PROTOCOL_CONFIG))) {
            // A classic member learns of a rebalance by heartbeat (3 s by default); the consumer protocol forbids it.
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        props.putAll(extra);
        return new KafkaConsumer<>(props);
    }

    static Properties props(String... keyValues) {
        Properties props = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) props.put(keyValues[i], keyValues[i + 1]);
        return props;
    }

    static <T> T await(KafkaFuture<T> future) throws Exception {
        return future.get(WAIT_S, TimeUnit.SECONDS);
    }

    /** Creates topics with every node as a replica (up to 3), as a cluster's test topics would be. */
    static void createTopics(Admin admin, int partitions, String... names) throws Exception {
        int nodes = await(admin.describeCluster().nodes()).size();
        List<NewTopic> topics = new ArrayList<>();
        for (String name : names) topics.add(new NewTopic(name, partitions, (short) Math.min(3, nodes)));
        await(admin.createTopics(topics).all());
    }

    static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> out = new ArrayList<>();
        for (int p = 0; p < count; p++) out.add(new TopicPartition(topic, p));
        return out;
    }

    /** Polls (each round runs {@code step}) until {@code done} holds; fails after WAIT_S seconds. */
    static void until(String what, Runnable step, BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_S);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("gave up waiting for " + what);
            step.run();
        }
    }

    /** Every record of {@code topic}'s partitions from the start, read by assignment with the given isolation. */
    static List<ConsumerRecord<String, String>> readAll(Driver.Ctx ctx, String topic, int partitions, int expected,
                                                        String isolation) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        Properties settings = props(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        try (KafkaConsumer<String, String> consumer = consumer(ctx, settings)) {
            List<TopicPartition> all = partitions(topic, partitions);
            consumer.assign(all);
            consumer.seekToBeginning(all);
            until(expected + " records of " + topic, () -> consumer.poll(POLL).forEach(records::add),
                  () -> records.size() >= expected && caughtUp(consumer, all));
        }
        return records;
    }

    private static boolean caughtUp(KafkaConsumer<String, String> consumer, Collection<TopicPartition> all) {
        Map<TopicPartition, Long> ends = consumer.endOffsets(all);
        return all.stream().allMatch(tp -> consumer.position(tp) >= ends.get(tp));
    }

    static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static List<Object> sortedStrings(Collection<?> items) {
        List<String> out = new ArrayList<>();
        for (Object item : items) out.add(String.valueOf(item));
        Collections.sort(out);
        return new ArrayList<>(out);
    }
}
