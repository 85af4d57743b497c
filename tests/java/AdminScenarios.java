import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

/** The Admin API as Spring's KafkaAdmin and Kafka Streams use it. */
final class AdminScenarios {
    private AdminScenarios() {
    }

    /** describeCluster, createTopics, describeTopics by name and by id, describeConfigs, incrementalAlterConfigs. */
    static Map<String, Object> cluster(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            DescribeClusterResult cluster = admin.describeCluster();
            Collection<Node> nodes = Scenarios.await(cluster.nodes());
            List<Object> nodeIds = new ArrayList<>();
            for (Node node : nodes) nodeIds.add(node.id());
            result.put("nodes", nodeIds);
            Node controller = Scenarios.await(cluster.controller());
            result.put("controller", controller == null ? null : controller.id());
            result.put("cluster_id", Scenarios.await(cluster.clusterId()));

            short factor = (short) Math.min(3, nodes.size());
            NewTopic declared = new NewTopic(topic, 3, factor).configs(Map.of("retention.ms", "123456"));
            Scenarios.await(admin.createTopics(List.of(declared)).all());
            TopicDescription byName = Scenarios.await(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            result.put("by_name", describe(byName));
            Uuid id = byName.topicId();
            TopicDescription byId = Scenarios.await(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                    .allTopicIds()).get(id);
            result.put("by_id", describe(byId));
            result.put("unknown_id", failure(admin.describeTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid())))
                    .allTopicIds()));

            ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            List<ConfigResource> resources = new ArrayList<>(List.of(topicResource));
            for (Node node : nodes) resources.add(new ConfigResource(ConfigResource.Type.BROKER, node.idString()));
            Map<ConfigResource, Config> configs = Scenarios.await(admin.describeConfigs(resources).all());
            result.put("topic_retention", entry(configs.get(topicResource).get("retention.ms")));
            Map<String, Object> brokers = new LinkedHashMap<>();
            for (Node node : nodes) {
                Config config = configs.get(new ConfigResource(ConfigResource.Type.BROKER, node.idString()));
                brokers.put(node.idString(), entry(config.get("num.partitions")));
            }
            result.put("broker_num_partitions", brokers);

            Scenarios.await(admin.incrementalAlterConfigs(Map.of(topicResource, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "654321"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SET))))
                    .all());
            Config altered = Scenarios.await(admin.describeConfigs(List.of(topicResource)).all()).get(topicResource);
            result.put("altered_retention", entry(altered.get("retention.ms")));
            result.put("altered_cleanup", entry(altered.get("cleanup.policy")));

            // Kafka Streams and Spring's TopicBuilder leave partitions and replication factor to the broker.
            Scenarios.await(admin.createTopics(List.of(new NewTopic(topic + "-defaults", Optional.empty(),
                    Optional.empty()))).all());
            TopicDescription defaults = Scenarios.await(admin.describeTopics(List.of(topic + "-defaults"))
                    .allTopicNames()).get(topic + "-defaults");
            result.put("defaults", List.of(defaults.partitions().size(), defaults.partitions().get(0).replicas().size()));
            result.put("exists", failure(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all()));
            Scenarios.await(admin.createTopics(List.of(new NewTopic(topic + "-validated", 2, (short) 1)),
                    new CreateTopicsOptions().validateOnly(true)).all());
            result.put("validated_created", Scenarios.await(admin.listTopics().names()).contains(topic + "-validated"));

            Scenarios.await(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
            result.put("grown", Scenarios.await(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic)
                    .partitions().size());
            result.put("missing_name", failure(admin.describeTopics(List.of(topic + "-missing")).allTopicNames()));
            Scenarios.await(admin.deleteTopics(List.of(topic)).all());
            result.put("after_delete", failure(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                    .allTopicIds()));
            result.put("listed_after_delete", Scenarios.await(admin.listTopics().names()).contains(topic));
        }
        return result;
    }

    /** Partition administration: createPartitions with assignments, alterPartitionReassignments and
     * listPartitionReassignments, electLeaders, describeLogDirs and alterReplicaLogDirs. */
    static Map<String, Object> partitions(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        TopicPartition first = new TopicPartition(topic, 0);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            List<Integer> nodes = new ArrayList<>();
            for (Node node : Scenarios.await(admin.describeCluster().nodes())) nodes.add(node.id());
            nodes.sort(null);
            List<Integer> forward = nodes.subList(0, Math.min(3, nodes.size()));
            List<Integer> backward = new ArrayList<>(forward);
            java.util.Collections.reverse(backward);
            Scenarios.await(admin.createTopics(List.of(new NewTopic(topic, Map.of(0, forward)))).all());
            Scenarios.await(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2, List.of(backward)))).all());
            result.put("grown", describe(described(admin, topic)).get("partitions"));
            result.put("duplicate", failure(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3,
                    List.of(List.of(forward.get(0), forward.get(0)))))).all()));

            Scenarios.await(admin.alterPartitionReassignments(Map.of(first,
                    Optional.of(new NewPartitionReassignment(backward)))).all());
            result.put("reassigned", ((List<?>) describe(described(admin, topic)).get("partitions")).get(0));
            result.put("ongoing", Scenarios.await(admin.listPartitionReassignments().reassignments()).size());
            result.put("cancel_none", failure(admin.alterPartitionReassignments(Map.of(first, Optional.empty())).all()));
            result.put("elected", failure(admin.electLeaders(ElectionType.PREFERRED, Set.of(first)).all()));
            result.put("elected_again", failure(admin.electLeaders(ElectionType.PREFERRED, Set.of(first)).all()));
            result.put("after_election", ((List<?>) describe(described(admin, topic)).get("partitions")).get(0));

            try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, new Properties())) {
                for (int i = 0; i < 20; i++) producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
            }
            Map<String, Object> sizes = new LinkedHashMap<>();
            String path = null;
            Map<Integer, Map<String, LogDirDescription>> dirs = Scenarios.await(admin.describeLogDirs(nodes).allDescriptions());
            for (Map.Entry<Integer, Map<String, LogDirDescription>> node : dirs.entrySet()) {
                for (Map.Entry<String, LogDirDescription> dir : node.getValue().entrySet()) {
                    path = dir.getKey();
                    var replica = dir.getValue().replicaInfos().get(first);
                    if (replica != null) sizes.put(node.getKey().toString(), replica.size());
                }
            }
            result.put("log_dir", path);
            result.put("sizes", sizes);
            result.put("moved_in_place", failure(admin.alterReplicaLogDirs(Map.of(
                    new TopicPartitionReplica(topic, 0, forward.get(0)), path)).all()));
            result.put("moved_away", failure(admin.alterReplicaLogDirs(Map.of(
                    new TopicPartitionReplica(topic, 0, forward.get(0)), path + "-elsewhere")).all()));
        }
        return result;
    }

    private static TopicDescription described(Admin admin, String topic) throws Exception {
        return Scenarios.await(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
    }

    /** listOffsets (earliest, latest, max timestamp) before and after deleteRecords, and describeProducers. */
    static Map<String, Object> records(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        TopicPartition partition = new TopicPartition(topic, 0);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, topic);
            long base = System.currentTimeMillis() - 60_000;
            try (KafkaProducer<String, String> producer = Scenarios.producer(ctx, new Properties())) {
                for (int i = 0; i < 10; i++) {  // the newest timestamp is record 6's
                    producer.send(new ProducerRecord<>(topic, 0, base + (i == 6 ? 1000 : i), "k" + i, "v" + i));
                }
            }
            try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, new Properties())) {
                Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(Map.of(partition, base + 5));
                result.put("for_time", found.get(partition).offset());
                result.put("for_late_time", consumer.offsetsForTimes(Map.of(partition, base + 5000)).get(partition));
            }
            result.put("before", offsets(admin, partition));
            result.put("low_watermark", Scenarios.await(admin.deleteRecords(Map.of(partition,
                    RecordsToDelete.beforeOffset(4))).lowWatermarks().get(partition)).lowWatermark());
            result.put("after", offsets(admin, partition));
            result.put("producers", TransactionScenarios.producers(admin, partition));
        }
        return result;
    }

    /** The consumer group APIs on a group that committed and left: list, describe, offsets, alter, delete. */
    static Map<String, Object> groups(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        String group = ctx.name;
        List<TopicPartition> partitions = Scenarios.partitions(topic, 2);
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 2, topic);
            ClientScenarios.produce(ctx, topic, 2, 10);
            try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                    ConsumerConfig.GROUP_ID_CONFIG, group))) {
                consumer.subscribe(List.of(topic));
                int[] read = {0};
                Scenarios.until("every record", () -> read[0] += consumer.poll(Scenarios.POLL).count(),
                        () -> read[0] >= 10);
                Map<TopicPartition, OffsetAndMetadata> positions = new LinkedHashMap<>();
                for (TopicPartition partition : partitions) {
                    String note = "note-" + partition.partition();
                    positions.put(partition, new OffsetAndMetadata(consumer.position(partition), note));
                }
                consumer.commitSync(positions);
            }
            List<Object> listed = new ArrayList<>();
            for (ConsumerGroupListing listing : Scenarios.await(admin.listConsumerGroups().all())) {
                if (listing.groupId().equals(group)) {
                    listed.add(Map.of("state", String.valueOf(listing.state().orElse(null)),
                            "type", String.valueOf(listing.type().orElse(null))));
                }
            }
            result.put("listed", listed);
            result.put("described", ClientScenarios.describe(Scenarios.await(
                    admin.describeConsumerGroups(List.of(group)).describedGroups().get(group))));
            result.put("offsets", groupOffsets(admin, group));
            Scenarios.await(admin.alterConsumerGroupOffsets(group, Map.of(partitions.get(0), new OffsetAndMetadata(1)))
                    .all());
            result.put("altered", groupOffsets(admin, group));
            Scenarios.await(admin.deleteConsumerGroupOffsets(group, Set.of(partitions.get(1))).all());
            result.put("deleted", groupOffsets(admin, group));
            Scenarios.await(admin.deleteConsumerGroups(List.of(group)).all());
            boolean stillListed = false;
            for (ConsumerGroupListing listing : Scenarios.await(admin.listConsumerGroups().all())) {
                stillListed |= listing.groupId().equals(group);
            }
            result.put("listed_after_delete", stillListed);
        }
        return result;
    }

    /** createTopics with a bad number, a bad choice and an unknown name: each refused, none created. */
    static Map<String, Object> invalidConfigs(Driver.Ctx ctx) throws Exception {
        Map<String, Map<String, String>> configs = new LinkedHashMap<>();
        configs.put(ctx.name + "-number", Map.of("retention.ms", "soon"));
        configs.put(ctx.name + "-choice", Map.of("cleanup.policy", "sometimes"));
        configs.put(ctx.name + "-unknown", Map.of("no.such.setting", "1"));
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            List<NewTopic> topics = new ArrayList<>();
            for (Map.Entry<String, Map<String, String>> entry : configs.entrySet()) {
                topics.add(new NewTopic(entry.getKey(), 1, (short) 1).configs(entry.getValue()));
            }
            Map<String, KafkaFuture<Void>> created = admin.createTopics(topics).values();
            for (String name : configs.keySet()) {
                result.put(name.substring(ctx.name.length() + 1), failure(created.get(name)));
            }
            Set<String> listed = Scenarios.await(admin.listTopics().names());
            result.put("created", configs.keySet().stream().filter(listed::contains).count());
        }
        return result;
    }

    /**
     * Dynamic broker configs: a value for each node (sent to that node) and one for the cluster default (""), their
     * sources, a read-only setting refused, and the values deleted again (settings no other scenario reads).
     */
    static Map<String, Object> brokerConfigs(Driver.Ctx ctx) throws Exception {
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Collection<Node> nodes = Scenarios.await(admin.describeCluster().nodes());
            ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
            Map<ConfigResource, Collection<AlterConfigOp>> changes = new LinkedHashMap<>();
            changes.put(cluster, List.of(new AlterConfigOp(new ConfigEntry("log.cleaner.threads", "2"), AlterConfigOp.OpType.SET)));
            for (Node node : nodes) {
                changes.put(new ConfigResource(ConfigResource.Type.BROKER, node.idString()), List.of(new AlterConfigOp(
                        new ConfigEntry("log.cleaner.io.max.bytes.per.second", node.idString() + "000000.0"),
                        AlterConfigOp.OpType.SET)));
            }
            Scenarios.await(admin.incrementalAlterConfigs(changes).all());
            List<ConfigResource> described = new ArrayList<>(changes.keySet());
            Map<ConfigResource, Config> configs = Scenarios.await(admin.describeConfigs(described).all());
            result.put("default", entry(configs.get(cluster).get("log.cleaner.threads")));
            Map<String, Object> perNode = new LinkedHashMap<>();
            for (Node node : nodes) {
                Config config = configs.get(new ConfigResource(ConfigResource.Type.BROKER, node.idString()));
                perNode.put(node.idString(), List.of(entry(config.get("log.cleaner.io.max.bytes.per.second")),
                        entry(config.get("log.cleaner.threads")), config.get("log.dirs").isReadOnly()));
            }
            result.put("nodes", perNode);
            Node first = nodes.iterator().next();
            ConfigResource firstNode = new ConfigResource(ConfigResource.Type.BROKER, first.idString());
            result.put("read_only", failure(admin.incrementalAlterConfigs(Map.of(firstNode, List.of(new AlterConfigOp(
                    new ConfigEntry("log.dirs", "/elsewhere"), AlterConfigOp.OpType.SET)))).all()));
            result.put("per_broker_at_default", failure(admin.incrementalAlterConfigs(Map.of(cluster, List.of(
                    new AlterConfigOp(new ConfigEntry("listeners", "PLAINTEXT://127.0.0.1:0"), AlterConfigOp.OpType.SET))))
                    .all()));
            Map<ConfigResource, Collection<AlterConfigOp>> deletions = new LinkedHashMap<>();
            deletions.put(cluster, List.of(new AlterConfigOp(new ConfigEntry("log.cleaner.threads", null), AlterConfigOp.OpType.DELETE)));
            for (Node node : nodes) {
                deletions.put(new ConfigResource(ConfigResource.Type.BROKER, node.idString()), List.of(new AlterConfigOp(
                        new ConfigEntry("log.cleaner.io.max.bytes.per.second", null), AlterConfigOp.OpType.DELETE)));
            }
            Scenarios.await(admin.incrementalAlterConfigs(deletions).all());
            Config after = Scenarios.await(admin.describeConfigs(List.of(firstNode)).all()).get(firstNode);
            result.put("after_delete", entry(after.get("log.cleaner.threads")));
        }
        return result;
    }

    private static Map<String, Object> groupOffsets(Admin admin, String group) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<TopicPartition, OffsetAndMetadata> offsets = Scenarios.await(
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        for (Object key : Scenarios.sortedStrings(offsets.keySet())) {
            for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
                if (entry.getKey().toString().equals(key)) {
                    out.put((String) key, entry.getValue().offset() + "/" + entry.getValue().metadata());
                }
            }
        }
        return out;
    }

    private static Map<String, Object> offsets(Admin admin, TopicPartition partition) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, OffsetSpec> specs = Map.of("earliest", OffsetSpec.earliest(), "latest", OffsetSpec.latest(),
                "max_timestamp", OffsetSpec.maxTimestamp());
        for (String name : List.of("earliest", "latest", "max_timestamp")) {
            ListOffsetsResult.ListOffsetsResultInfo info = Scenarios.await(
                    admin.listOffsets(Map.of(partition, specs.get(name))).partitionResult(partition));
            out.put(name, info.offset());
        }
        return out;
    }

    private static Map<String, Object> describe(TopicDescription topic) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", topic.name());
        out.put("id", topic.topicId().toString());
        List<Object> partitions = new ArrayList<>();
        for (TopicPartitionInfo info : topic.partitions()) {
            List<Object> replicas = new ArrayList<>();
            for (Node node : info.replicas()) replicas.add(node.id());
            partitions.add(Map.of("partition", info.partition(), "leader", info.leader() == null ? -1 : info.leader().id(),
                    "replicas", replicas, "isr", info.isr().size()));
        }
        out.put("partitions", partitions);
        return out;
    }

    private static Map<String, Object> entry(ConfigEntry entry) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (entry == null) return out;
        out.put("value", entry.value());
        out.put("source", entry.source().toString());
        return out;
    }

    private static String failure(KafkaFuture<?> future) throws Exception {
        try {
            Scenarios.await(future);
            return "none";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getName();
        }
    }
}
