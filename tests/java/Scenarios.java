import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
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

    static Map<String, Object> run(String name, Driver.Ctx ctx) throws Exception {
        Scenario scenario;
        switch (name) {
            case "produce_consume": scenario = ClientScenarios::produceConsume; break;
            case "group": scenario = ClientScenarios::group; break;
            case "static_membership": scenario = ClientScenarios::staticMembership; break;
            case "cooperative_sticky": scenario = ClientScenarios::cooperativeSticky; break;
            case "regex_subscription": scenario = ClientScenarios::regexSubscription; break;
            case "auto_create": scenario = ClientScenarios::autoCreate; break;
            case "acks": scenario = ClientScenarios::acks; break;
            case "auto_commit": scenario = ClientScenarios::autoCommit; break;
            case "mixed_group": scenario = ClientScenarios::mixedGroup; break;
            case "large_message": scenario = ClientScenarios::largeMessage; break;
            case "reset_past_end": scenario = ClientScenarios::resetPastEnd; break;
            case "failover": scenario = FailoverScenarios::crash; break;
            case "transaction_failover": scenario = FailoverScenarios::transactionCoordinatorCrash; break;
            case "idempotent": scenario = TransactionScenarios::idempotent; break;
            case "transactions": scenario = TransactionScenarios::transactions; break;
            case "consume_transform_produce": scenario = TransactionScenarios::consumeTransformProduce; break;
            case "admin_transactions": scenario = TransactionScenarios::adminTools; break;
            case "pending_offsets": scenario = TransactionScenarios::pendingOffsets; break;
            case "fencing": scenario = TransactionScenarios::fencing; break;
            case "sasl": scenario = SecurityScenarios::sasl; break;
            case "admin_cluster": scenario = AdminScenarios::cluster; break;
            case "admin_records": scenario = AdminScenarios::records; break;
            case "admin_groups": scenario = AdminScenarios::groups; break;
            case "admin_invalid_configs": scenario = AdminScenarios::invalidConfigs; break;
            default: throw new IllegalArgumentException("unknown scenario " + name);
        }
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
