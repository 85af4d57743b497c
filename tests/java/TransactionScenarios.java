import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;

/** The idempotent producer and transactions, read back by the client and described by the Admin API. */
final class TransactionScenarios {
    private TransactionScenarios() {
    }

    /** The Java default (enable.idempotence=true, acks=all): describeProducers shows the producer's sequence. */
    static Map<String, Object> idempotent(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, topic);
            ClientScenarios.produce(ctx, topic, 1, 30);
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("producers", producers(admin, new TopicPartition(topic, 0)));
            result.put("values", values(Scenarios.readAll(ctx, topic, 1, 30, "read_uncommitted")));
            return result;
        }
    }

    /**
     * Committed and aborted transactions (batches compressed with the argument's codec): read_committed sees the
     * committed ones only; the Admin API lists and describes the transaction.
     */
    static Map<String, Object> transactions(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        String id = ctx.name + "-txn";
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.TRANSACTIONAL_ID_CONFIG, id, ProducerConfig.COMPRESSION_TYPE_CONFIG, ctx.arg))) {
            Scenarios.createTopics(admin, 1, topic);
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, "k", "committed"));
            producer.flush();
            result.put("ongoing", transaction(admin, id));
            result.put("ongoing_producers", producers(admin, new TopicPartition(topic, 0)));
            result.put("ongoing_latest", latest(admin, new TopicPartition(topic, 0)));
            List<Object> listed = new ArrayList<>();
            for (TransactionListing listing : Scenarios.await(admin.listTransactions().all())) {
                if (listing.transactionalId().equals(id)) listed.add(listing.state().toString());
            }
            result.put("listed", listed);
            producer.commitTransaction();
            result.put("committed", transaction(admin, id));
            result.put("committed_latest", latest(admin, new TopicPartition(topic, 0)));
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, "k", "aborted"));
            producer.flush();
            producer.abortTransaction();
            result.put("aborted", transaction(admin, id));
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, "k", "committed too"));
            producer.commitTransaction();
        }
        result.put("read_committed", values(Scenarios.readAll(ctx, topic, 1, 2, "read_committed")));
        result.put("read_uncommitted", values(Scenarios.readAll(ctx, topic, 1, 3, "read_uncommitted")));
        return result;
    }

    /** Consume, transform, produce: the group's offsets go into the transaction with sendOffsetsToTransaction. */
    static Map<String, Object> consumeTransformProduce(Driver.Ctx ctx) throws Exception {
        String input = ctx.name + "-in";
        String output = ctx.name + "-out";
        String group = ctx.name;
        int count = 10;
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, input, output);
            ClientScenarios.produce(ctx, input, 1, count);
            try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                    ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
                 KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                         ProducerConfig.TRANSACTIONAL_ID_CONFIG, ctx.name + "-txn"))) {
                producer.initTransactions();
                consumer.subscribe(List.of(input));
                int[] done = {0};
                Scenarios.until("every input record transformed", () -> {
                    ConsumerRecords<String, String> records = consumer.poll(Scenarios.POLL);
                    if (records.isEmpty()) return;
                    producer.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> record : records) {
                        producer.send(new ProducerRecord<>(output, 0, record.key(), record.value().toUpperCase()));
                        offsets.put(new TopicPartition(record.topic(), record.partition()),
                                new OffsetAndMetadata(record.offset() + 1));
                        done[0]++;
                    }
                    producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                    producer.commitTransaction();
                }, () -> done[0] >= count);
            }
            Map<TopicPartition, OffsetAndMetadata> committed = Scenarios.await(admin.listConsumerGroupOffsets(group,
                    new ListConsumerGroupOffsetsOptions().requireStable(true)).partitionsToOffsetAndMetadata());
            result.put("committed", committed.get(new TopicPartition(input, 0)).offset());
        }
        result.put("output", values(Scenarios.readAll(ctx, output, 1, count, "read_committed")));
        return result;
    }

    /**
     * KIP-447: offsets sent to an open transaction are pending. A fetch requiring stable offsets (KafkaConsumer's
     * committed() always does) is answered UNSTABLE_OFFSET_COMMIT, which the consumer retries until its timeout; a
     * fetch that does not gets the last committed offset; after the commit both get the transaction's.
     */
    static Map<String, Object> pendingOffsets(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        String group = ctx.name;
        TopicPartition partition = new TopicPartition(topic, 0);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.TRANSACTIONAL_ID_CONFIG, ctx.name + "-txn"))) {
            Scenarios.createTopics(admin, 1, topic);
            Scenarios.await(admin.alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(1))).all());
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(topic, 0, "k", "v"));
            producer.sendOffsetsToTransaction(Map.of(partition, new OffsetAndMetadata(5)),
                    new ConsumerGroupMetadata(group));
            result.put("consumer_while_open", committed(ctx, group, partition));
            result.put("admin_while_open", adminOffset(admin, group, partition, false));
            result.put("stable_admin_while_open", adminOffset(admin, group, partition, true));
            producer.commitTransaction();
            result.put("consumer_after_commit", committed(ctx, group, partition));
            result.put("stable_admin_after_commit", adminOffset(admin, group, partition, true));
        }
        return result;
    }

    /** The group's committed offset as KafkaConsumer.committed asks for it: always requiring stable offsets. */
    private static Object committed(Driver.Ctx ctx, String group, TopicPartition partition) {
        try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                ConsumerConfig.GROUP_ID_CONFIG, group))) {
            OffsetAndMetadata offset = consumer.committed(Set.of(partition), Duration.ofSeconds(2)).get(partition);
            return offset == null ? null : offset.offset();
        } catch (TimeoutException e) {
            return e.getClass().getName();
        }
    }

    /** The group's committed offset from the Admin API, which leaves out a partition answered with an error. */
    private static Object adminOffset(Admin admin, String group, TopicPartition partition, boolean stable)
            throws Exception {
        OffsetAndMetadata offset = Scenarios.await(admin.listConsumerGroupOffsets(group,
                new ListConsumerGroupOffsetsOptions().requireStable(stable)).partitionsToOffsetAndMetadata()).get(partition);
        return offset == null ? null : offset.offset();
    }

    /** A second producer with the same transactional.id fences the first, whose commit then fails. */
    static Map<String, Object> fencing(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        String id = ctx.name + "-txn";
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, topic);
        }
        KafkaProducer<String, String> first = Scenarios.producer(ctx, Scenarios.props(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, id));
        try (KafkaProducer<String, String> second = Scenarios.producer(ctx, Scenarios.props(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, id))) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, "k", "zombie"));
            first.flush();
            second.initTransactions();
            try {
                first.commitTransaction();
                result.put("first_commit", "committed");
            } catch (Exception e) {
                result.put("first_commit", e.getClass().getName());
            } finally {
                first.close();
            }
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, "k", "winner"));
            second.commitTransaction();
        }
        result.put("read_committed", values(Scenarios.readAll(ctx, topic, 1, 1, "read_committed")));
        return result;
    }

    /**
     * The Admin API's transaction tools: abortTransaction ends a hanging transaction with markers (as
     * kafka-transactions.sh abort does) and fenceProducers bumps an id's epoch (as Kafka Connect's exactly-once
     * source does), so its producer's commit fails.
     */
    static Map<String, Object> adminTools(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        TopicPartition partition = new TopicPartition(topic, 0);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaProducer<String, String> hanging = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.TRANSACTIONAL_ID_CONFIG, ctx.name + "-hanging"));
             KafkaProducer<String, String> fenced = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.TRANSACTIONAL_ID_CONFIG, ctx.name + "-fenced"))) {
            Scenarios.createTopics(admin, 1, topic);
            hanging.initTransactions();
            hanging.beginTransaction();
            hanging.send(new ProducerRecord<>(topic, 0, "k", "hanging"));
            hanging.flush();
            ProducerState state = Scenarios.await(admin.describeProducers(List.of(partition)).all()).get(partition)
                    .activeProducers().get(0);
            Scenarios.await(admin.abortTransaction(new AbortTransactionSpec(partition, state.producerId(),
                    (short) state.producerEpoch(), state.coordinatorEpoch().orElse(-1))).all());
            result.put("after_abort", latest(admin, partition));
            result.put("producers_after_abort", producers(admin, partition));

            fenced.initTransactions();
            fenced.beginTransaction();
            fenced.send(new ProducerRecord<>(topic, 0, "k", "fenced"));
            fenced.flush();
            long before = Scenarios.await(admin.describeTransactions(List.of(ctx.name + "-fenced"))
                    .description(ctx.name + "-fenced")).producerEpoch();
            Scenarios.await(admin.fenceProducers(List.of(ctx.name + "-fenced")).all());
            TransactionDescription after = Scenarios.await(admin.describeTransactions(List.of(ctx.name + "-fenced"))
                    .description(ctx.name + "-fenced"));
            result.put("epoch_bumped", after.producerEpoch() > before);
            result.put("state_after_fence", after.state().toString());
            try {
                fenced.commitTransaction();
                result.put("fenced_commit", "committed");
            } catch (Exception e) {
                result.put("fenced_commit", e.getClass().getName());
            }
        }
        result.put("read_committed", values(Scenarios.readAll(ctx, topic, 1, 0, "read_committed")));
        return result;
    }

    static List<Object> producers(Admin admin, TopicPartition partition) throws Exception {
        List<Object> out = new ArrayList<>();
        for (ProducerState state : Scenarios.await(admin.describeProducers(List.of(partition)).all())
                .get(partition).activeProducers()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("producer_id", state.producerId());
            row.put("epoch", state.producerEpoch());
            row.put("last_sequence", state.lastSequence());
            row.put("txn_start_offset", state.currentTransactionStartOffset().isPresent()
                    ? state.currentTransactionStartOffset().getAsLong() : null);
            out.add(row);
        }
        return out;
    }

    /** The latest offset as read_uncommitted sees it (the high watermark) and as read_committed does (the LSO). */
    static Map<String, Object> latest(Admin admin, TopicPartition partition) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (IsolationLevel level : List.of(IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED)) {
            out.put(level.toString(), Scenarios.await(admin.listOffsets(Map.of(partition, OffsetSpec.latest()),
                    new ListOffsetsOptions(level)).partitionResult(partition)).offset());
        }
        return out;
    }

    static Map<String, Object> transaction(Admin admin, String id) throws Exception {
        TransactionDescription described = Scenarios.await(admin.describeTransactions(List.of(id)).description(id));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("state", described.state().toString());
        out.put("producer_id", described.producerId());
        out.put("epoch", described.producerEpoch());
        out.put("timeout_ms", described.transactionTimeoutMs());
        out.put("partitions", Scenarios.sortedStrings(described.topicPartitions()));
        return out;
    }

    static List<Object> values(List<ConsumerRecord<String, String>> records) {
        List<Object> out = new ArrayList<>();
        for (ConsumerRecord<String, String> record : records) out.add(record.value());
        return out;
    }
}
