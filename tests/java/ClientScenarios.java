import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/** Producing, consuming and consumer groups, as the Python client tests do them. */
final class ClientScenarios {
    private ClientScenarios() {
    }

    /** Records with keys and headers through one codec (the argument), read back by assignment. */
    static Map<String, Object> produceConsume(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int count = 40;
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 2, topic);
        }
        try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, ctx.arg, ProducerConfig.LINGER_MS_CONFIG, "20"))) {
            for (int i = 0; i < count; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, i % 2, "k" + i,
                        "value " + i + " " + "x".repeat(100));
                record.headers().add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                record.headers().add("codec", ctx.arg.getBytes(StandardCharsets.UTF_8));
                producer.send(record);
            }
            producer.flush();
        }
        List<Object> received = new ArrayList<>();
        for (ConsumerRecord<String, String> record : Scenarios.readAll(ctx, topic, 2, count, "read_uncommitted")) {
            Map<String, Object> headers = new LinkedHashMap<>();
            for (Header header : record.headers()) headers.put(header.key(), Scenarios.text(header.value()));
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("partition", record.partition());
            row.put("offset", record.offset());
            row.put("key", record.key());
            row.put("value", record.value());
            row.put("headers", headers);
            received.add(row);
        }
        return Map.of("records", received);
    }

    /** Two members of one group (the argument is group.protocol) share a topic's partitions and commit. */
    static Map<String, Object> group(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int partitions = 4;
        int count = 40;
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, partitions, topic);
            produce(ctx, topic, partitions, count);
            Properties settings = Scenarios.props(ConsumerConfig.GROUP_ID_CONFIG, ctx.name,
                    ConsumerConfig.GROUP_PROTOCOL_CONFIG, ctx.arg);
            Set<String> values = new HashSet<>();
            Map<String, Object> result = new LinkedHashMap<>();
            try (KafkaConsumer<String, String> first = Scenarios.consumer(ctx, settings);
                 KafkaConsumer<String, String> second = Scenarios.consumer(ctx, settings)) {
                first.subscribe(List.of(topic));
                second.subscribe(List.of(topic));
                Scenarios.until("both members assigned and every record read", () -> {
                    pollAndCommit(first, values);
                    pollAndCommit(second, values);
                }, () -> values.size() == count && !first.assignment().isEmpty() && !second.assignment().isEmpty()
                        && first.assignment().size() + second.assignment().size() == partitions);
                result.put("assignments", List.of(Scenarios.sortedStrings(first.assignment()),
                        Scenarios.sortedStrings(second.assignment())));
                ConsumerGroupDescription described = Scenarios.await(
                        admin.describeConsumerGroups(List.of(ctx.name)).describedGroups().get(ctx.name));
                result.put("described", describe(described));
                Map<TopicPartition, OffsetAndMetadata> committed = first.committed(new HashSet<>(
                        Scenarios.partitions(topic, partitions)));
                long total = 0;
                for (OffsetAndMetadata offset : committed.values()) total += offset == null ? 0 : offset.offset();
                result.put("committed_total", total);
            }
            result.put("values", values.size());
            ConsumerGroupDescription after = Scenarios.await(
                    admin.describeConsumerGroups(List.of(ctx.name)).describedGroups().get(ctx.name));
            result.put("state_after_close", after.state().toString());
            return result;
        }
    }

    /** A static member (group.instance.id) leaves by closing and comes back to the same assignment. */
    static Map<String, Object> staticMembership(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int partitions = 2;
        Properties settings = Scenarios.props(ConsumerConfig.GROUP_ID_CONFIG, ctx.name,
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, ctx.arg,
                ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-1",
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, partitions, topic);
            for (String round : List.of("first", "second")) {
                try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, settings)) {
                    consumer.subscribe(List.of(topic));
                    Scenarios.until("an assignment", () -> consumer.poll(Scenarios.POLL),
                            () -> !consumer.assignment().isEmpty());
                    Map<String, Object> seen = new LinkedHashMap<>();
                    seen.put("assignment", Scenarios.sortedStrings(consumer.assignment()));
                    seen.put("generation", consumer.groupMetadata().generationId());
                    seen.put("instance", consumer.groupMetadata().groupInstanceId().orElse(null));
                    seen.put("described", describe(Scenarios.await(
                            admin.describeConsumerGroups(List.of(ctx.name)).describedGroups().get(ctx.name))));
                    result.put(round, seen);
                }
                result.put("after_" + round, describe(Scenarios.await(
                        admin.describeConsumerGroups(List.of(ctx.name)).describedGroups().get(ctx.name))));
            }
        }
        return result;
    }

    /** With the cooperative-sticky assignor a second member takes partitions without the first losing the others. */
    static Map<String, Object> cooperativeSticky(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int partitions = 4;
        Properties settings = Scenarios.props(ConsumerConfig.GROUP_ID_CONFIG, ctx.name,
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        List<Object> events = new ArrayList<>();
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, partitions, topic);
            try (KafkaConsumer<String, String> first = Scenarios.consumer(ctx, settings);
                 KafkaConsumer<String, String> second = Scenarios.consumer(ctx, settings)) {
                first.subscribe(List.of(topic), recorder(events));
                Scenarios.until("the first member's assignment", () -> first.poll(Scenarios.POLL),
                        () -> first.assignment().size() == partitions);
                second.subscribe(List.of(topic));
                Scenarios.until("a balanced group", () -> {
                    first.poll(Scenarios.POLL);
                    second.poll(Scenarios.POLL);
                }, () -> first.assignment().size() == 2 && second.assignment().size() == 2);
                result.put("first_events", new ArrayList<>(events));  // not the revocation of close()
                result.put("assignments", List.of(Scenarios.sortedStrings(first.assignment()),
                        Scenarios.sortedStrings(second.assignment())));
                result.put("described", describe(Scenarios.await(
                        admin.describeConsumerGroups(List.of(ctx.name)).describedGroups().get(ctx.name))));
            }
        }
        return result;
    }

    /** A 1 MiB record goes through a topic whose max.message.bytes allows it, and is refused by the default. */
    static Map<String, Object> largeMessage(Driver.Ctx ctx) throws Exception {
        String roomy = ctx.name;
        String strict = ctx.name + "-default";
        int mib = 1 << 20;
        String big = new Random(1).ints(mib, 'a', 'z' + 1)
                .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append).toString();
        try (Admin admin = Scenarios.admin(ctx)) {
            int nodes = Scenarios.await(admin.describeCluster().nodes()).size();
            short factor = (short) Math.min(3, nodes);
            Scenarios.await(admin.createTopics(List.of(
                    new NewTopic(roomy, 1, factor).configs(Map.of("max.message.bytes", Integer.toString(2 * mib))),
                    new NewTopic(strict, 1, factor))).all());
        }
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(4 * mib),
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000"))) {
            for (String value : List.of("before", big, "after")) producer.send(new ProducerRecord<>(roomy, 0, "k", value));
            producer.flush();
            try {
                producer.send(new ProducerRecord<>(strict, 0, "k", big)).get();
                result.put("default_limit", "accepted");
            } catch (ExecutionException e) {
                result.put("default_limit", e.getCause().getClass().getName());
            }
        }
        List<Object> sizes = new ArrayList<>();
        for (ConsumerRecord<String, String> record : Scenarios.readAll(ctx, roomy, 1, 3, "read_uncommitted")) {
            sizes.add(record.value().equals(big) ? "big" : record.value());
        }
        result.put("read", sizes);
        return result;
    }

    /** A consumer placed past the log end gets OFFSET_OUT_OF_RANGE and auto.offset.reset=earliest reads it all. */
    static Map<String, Object> resetPastEnd(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, topic);
        }
        produce(ctx, topic, 1, 10);
        List<Object> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, new Properties())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seek(partition, 1000);
            Scenarios.until("every record after the reset", () -> consumer.poll(Scenarios.POLL)
                    .forEach(record -> values.add(record.value())), () -> values.size() >= 10);
        }
        return Map.of("values", values);
    }

    /**
     * Fetch from follower (KIP-392): a consumer whose client.rack is the rack of the highest node reads every record
     * once; the Python test checks in the transcript that the node in that rack served its fetches.
     */
    static Map<String, Object> rackFetch(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int count = 30;
        Map<String, Object> racks = new TreeMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            for (Node node : Scenarios.await(admin.describeCluster().nodes())) {
                racks.put(Integer.toString(node.id()), node.rack());
            }
            Scenarios.createTopics(admin, 3, topic);
        }
        String rack = (String) racks.get(Collections.max(racks.keySet(), Comparator.comparingInt(Integer::parseInt)));
        produce(ctx, topic, 3, count);
        List<String> values = new ArrayList<>();
        Properties settings = Scenarios.props(ConsumerConfig.CLIENT_RACK_CONFIG, rack);
        try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, settings)) {
            List<TopicPartition> all = Scenarios.partitions(topic, 3);
            consumer.assign(all);
            consumer.seekToBeginning(all);
            Scenarios.until(count + " records of " + topic, () -> consumer.poll(Scenarios.POLL)
                    .forEach(record -> values.add(record.value())), () -> values.size() >= count);
            consumer.poll(Scenarios.POLL).forEach(record -> values.add(record.value()));  // nothing more: read once
        }
        Collections.sort(values);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("racks", racks);
        result.put("client_rack", rack);
        result.put("values", values);
        return result;
    }

    /** KIP-848's online migration: a consumer-protocol member joins a classic group, shares it, and leaves again. */
    static Map<String, Object> mixedGroup(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int partitions = 4;
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaConsumer<String, String> classic = Scenarios.consumer(ctx, Scenarios.props(
                     ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                     ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName()))) {
            Scenarios.createTopics(admin, partitions, topic);
            classic.subscribe(List.of(topic));
            Scenarios.until("the classic member's assignment", () -> classic.poll(Scenarios.POLL),
                    () -> classic.assignment().size() == partitions);
            result.put("before", describe(describeGroup(admin, ctx.name)));
            try (KafkaConsumer<String, String> modern = Scenarios.consumer(ctx, Scenarios.props(
                    ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"))) {
                modern.subscribe(List.of(topic));
                Scenarios.until("the two members to split the partitions", () -> {
                    classic.poll(Scenarios.POLL);
                    modern.poll(Scenarios.POLL);
                }, () -> !classic.assignment().isEmpty() && !modern.assignment().isEmpty()
                        && classic.assignment().size() + modern.assignment().size() == partitions);
                result.put("assignments", List.of(Scenarios.sortedStrings(classic.assignment()),
                        Scenarios.sortedStrings(modern.assignment())));
                result.put("shared", describe(describeGroup(admin, ctx.name)));
            }
            Scenarios.until("the classic member to own every partition again", () -> classic.poll(Scenarios.POLL),
                    () -> classic.assignment().size() == partitions);
            result.put("after", describe(describeGroup(admin, ctx.name)));
        }
        return result;
    }

    /** A pattern subscription (the argument is group.protocol) picks up a matching topic created after it. */
    static Map<String, Object> regexSubscription(Driver.Ctx ctx) throws Exception {
        String early = ctx.name + "-early";
        String late = ctx.name + "-late";
        Set<String> values = new HashSet<>();
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                     ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.GROUP_PROTOCOL_CONFIG, ctx.arg,
                     ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500"))) {
            Scenarios.createTopics(admin, 1, early);
            produce(ctx, early, 1, 3);
            consumer.subscribe(Pattern.compile(Pattern.quote(ctx.name) + "-.*"));
            Scenarios.until("the early topic's records", () -> consumer.poll(Scenarios.POLL)
                    .forEach(record -> values.add(record.topic() + "/" + record.value())), () -> values.size() >= 3);
            Scenarios.createTopics(admin, 1, late);
            produce(ctx, late, 1, 3);
            Scenarios.until("the late topic's records", () -> consumer.poll(Scenarios.POLL)
                    .forEach(record -> values.add(record.topic() + "/" + record.value())), () -> values.size() >= 6);
            result.put("assignment", Scenarios.sortedStrings(consumer.assignment()));
        }
        result.put("values", Scenarios.sortedStrings(values));
        return result;
    }

    /**
     * A producer's Metadata request creates a missing topic (auto.create.topics.enable), with num.partitions; a
     * consumer with allow.auto.create.topics=false asks without creating.
     */
    static Map<String, Object> autoCreate(Driver.Ctx ctx) throws Exception {
        String produced = ctx.name + "-produced";
        String consumed = ctx.name + "-consumed";
        Map<String, Object> result = new LinkedHashMap<>();
        produce(ctx, produced, 1, 1);
        try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false"))) {
            consumer.subscribe(List.of(consumed));
            for (int i = 0; i < 5; i++) consumer.poll(Scenarios.POLL);
        }
        try (Admin admin = Scenarios.admin(ctx)) {
            Set<String> names = Scenarios.await(admin.listTopics().names());
            result.put("produced_created", names.contains(produced));
            result.put("consumed_created", names.contains(consumed));
            result.put("partitions", Scenarios.await(admin.describeTopics(List.of(produced)).allTopicNames())
                    .get(produced).partitions().size());
        }
        return result;
    }

    /** Records sent with the argument's acks (0: no answer at all, 1: the leader's) without idempotence all land. */
    static Map<String, Object> acks(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, topic);
        }
        List<Object> offsets = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                ProducerConfig.ACKS_CONFIG, ctx.arg, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false"))) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 20; i++) sent.add(producer.send(new ProducerRecord<>(topic, 0, "k", "v" + i)));
            producer.flush();
            for (Future<RecordMetadata> future : sent) {
                offsets.add(future.get().offset());  // -1 with acks=0: the client never hears
            }
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("offsets", offsets);
        List<Object> values = new ArrayList<>();
        for (ConsumerRecord<String, String> record : Scenarios.readAll(ctx, topic, 1, 20, "read_uncommitted")) {
            values.add(record.value());
        }
        result.put("values", values);
        return result;
    }

    /** The plain Java consumer defaults: auto commit (here every 200 ms), and a last commit on close. */
    static Map<String, Object> autoCommit(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 2, topic);
            produce(ctx, topic, 2, 10);
            int[] read = {0};
            try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                    ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.GROUP_PROTOCOL_CONFIG, ctx.arg,
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true",
                    ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, "200"))) {
                consumer.subscribe(List.of(topic));
                Scenarios.until("every record", () -> read[0] += consumer.poll(Scenarios.POLL).count(),
                        () -> read[0] >= 10);
            }
            long total = 0;
            for (OffsetAndMetadata offset : Scenarios.await(admin.listConsumerGroupOffsets(ctx.name)
                    .partitionsToOffsetAndMetadata()).values()) {
                total += offset.offset();
            }
            result.put("read", read[0]);
            result.put("committed_total", total);
        }
        return result;
    }

    private static ConsumerGroupDescription describeGroup(Admin admin, String group) throws Exception {
        return Scenarios.await(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
    }

    static void produce(Driver.Ctx ctx, String topic, int partitions, int count) {
        try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, new Properties())) {
            for (int i = 0; i < count; i++) producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            producer.flush();
        }
    }

    private static void pollAndCommit(KafkaConsumer<String, String> consumer, Set<String> values) {
        int before = values.size();
        consumer.poll(Scenarios.POLL).forEach(record -> values.add(record.value()));
        if (values.size() != before) consumer.commitSync();
    }

    private static ConsumerRebalanceListener recorder(List<Object> events) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                if (!partitions.isEmpty()) events.add(Map.of("revoked", Scenarios.sortedStrings(partitions)));
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                if (!partitions.isEmpty()) events.add(Map.of("assigned", Scenarios.sortedStrings(partitions)));
            }
        };
    }

    static Map<String, Object> describe(ConsumerGroupDescription group) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("state", group.state().toString());
        out.put("type", group.type().toString());
        out.put("assignor", group.partitionAssignor());
        out.put("coordinator", group.coordinator() == null ? null : group.coordinator().id());
        List<Object> members = new ArrayList<>();
        for (MemberDescription member : group.members()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("instance", member.groupInstanceId().orElse(null));
            row.put("partitions", Scenarios.sortedStrings(member.assignment().topicPartitions()));
            members.add(row);
        }
        out.put("members", members);
        return out;
    }
}
