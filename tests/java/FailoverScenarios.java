import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** A cluster losing a node under the client, driven through the broker's HTTP control API (its URL is an argument). */
final class FailoverScenarios {
    private FailoverScenarios() {
    }

    /**
     * The node leading partition 0, coordinating the group and named controller crashes after a first round of
     * produce and consume: admin requests still find a controller, the group's coordinator moves and the group reads
     * and commits while the node is down, and goes on after it returns. The idempotent producer's retries must
     * neither lose nor repeat a record.
     */
    static Map<String, Object> crash(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        int partitions = 3;
        int round = 30;
        String[] args = ctx.arg.split(",", 2);  // group.protocol,control URL
        String protocol = args[0];
        String control = args[1];
        HttpClient http = HttpClient.newHttpClient();
        Map<String, Object> result = new LinkedHashMap<>();
        Set<String> values = new HashSet<>();
        int[] duplicates = {0};
        try (Admin admin = Scenarios.admin(ctx);
             KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.ACKS_CONFIG, "all"));
             KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, Scenarios.props(
                     ConsumerConfig.GROUP_ID_CONFIG, ctx.name, ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol))) {
            Scenarios.createTopics(admin, partitions, topic);
            send(producer, topic, partitions, 0, round);
            consumer.subscribe(List.of(topic));
            readAndCommit(consumer, values, duplicates, round);  // the group (and __consumer_offsets) exists
            // The node that crashes both leads partition 0 and is the one named controller.
            int leader = Scenarios.await(admin.describeCluster().controller()).id();
            post(http, control + "/v1/partitions/" + topic + "/0/leader", "{\"node\": " + leader + "}");
            Scenarios.until("the moved leader of partition 0", () -> { }, () -> leaderIs(admin, topic, leader));
            post(http, control + "/v1/coordinators", "{\"group\": \"" + ctx.name + "\", \"node\": " + leader + "}");
            result.put("coordinator_before", coordinatorOf(admin, ctx.name));
            result.put("stopped", leader);
            post(http, control + "/v1/nodes/" + leader + "/stop", "{\"clean\": false}");
            Scenarios.until("a new leader of partition 0", () -> { }, () -> !leaderIs(admin, topic, leader));
            result.put("new_leader", leaderOf(admin, topic));
            // Admin requests go to the controller the cluster names: it must be a live node.
            result.put("controller_while_stopped", Scenarios.await(admin.describeCluster().controller()).id());
            Scenarios.createTopics(admin, 1, topic + "-while-stopped");
            result.put("created_while_stopped", Scenarios.await(admin.listTopics().names())
                    .contains(topic + "-while-stopped"));
            send(producer, topic, partitions, round, round);
            readAndCommit(consumer, values, duplicates, 2 * round);
            post(http, control + "/v1/nodes/" + leader + "/start", "{}");
            send(producer, topic, partitions, 2 * round, round);
            readAndCommit(consumer, values, duplicates, 3 * round);
            result.put("coordinator_after", coordinatorOf(admin, ctx.name));
            Map<TopicPartition, OffsetAndMetadata> committed = Scenarios.await(
                    admin.listConsumerGroupOffsets(ctx.name).partitionsToOffsetAndMetadata());
            long total = 0;
            for (OffsetAndMetadata offset : committed.values()) total += offset.offset();
            result.put("committed_total", total);
        }
        result.put("distinct", values.size());
        result.put("duplicates", duplicates[0]);
        return result;
    }

    /**
     * The transaction coordinator's node crashes while a transaction is open: the producer finds the new coordinator
     * (loaded from __transaction_state) and commits; a read_committed consumer sees the transaction whole.
     */
    static Map<String, Object> transactionCoordinatorCrash(Driver.Ctx ctx) throws Exception {
        String topic = ctx.name;
        String id = ctx.name + "-txn";
        HttpClient http = HttpClient.newHttpClient();
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx);
             KafkaProducer<String, String> producer = Scenarios.producer(ctx, Scenarios.props(
                     ProducerConfig.TRANSACTIONAL_ID_CONFIG, id))) {
            Scenarios.createTopics(admin, 2, topic);
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, i % 2, "k", "before" + i));
            producer.flush();
            int coordinator = Scenarios.await(admin.describeTransactions(List.of(id)).description(id)).coordinatorId();
            result.put("stopped", coordinator);
            post(http, ctx.arg + "/v1/nodes/" + coordinator + "/stop", "{\"clean\": false}");
            try {
                for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, i % 2, "k", "after" + i));
                producer.commitTransaction();
                result.put("new_coordinator", Scenarios.await(admin.describeTransactions(List.of(id)).description(id))
                        .coordinatorId());
                result.put("state", Scenarios.await(admin.describeTransactions(List.of(id)).description(id))
                        .state().toString());
            } finally {
                post(http, ctx.arg + "/v1/nodes/" + coordinator + "/start", "{}");
            }
        }
        result.put("read_committed", Scenarios.readAll(ctx, topic, 2, 20, "read_committed").size());
        return result;
    }

    private static void send(KafkaProducer<String, String> producer, String topic, int partitions, int from, int count) {
        for (int i = from; i < from + count; i++) producer.send(new ProducerRecord<>(topic, i % partitions, "k", "v" + i));
        producer.flush();
    }

    private static void readAndCommit(KafkaConsumer<String, String> consumer, Set<String> values, int[] duplicates,
                                      int expected) {
        Scenarios.until(expected + " records", () -> {
            consumer.poll(Scenarios.POLL).forEach(record -> {
                if (!values.add(record.value())) duplicates[0]++;
            });
            consumer.commitSync();
        }, () -> values.size() >= expected);
    }

    private static int coordinatorOf(Admin admin, String group) throws Exception {
        return Scenarios.await(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group))
                .coordinator().id();
    }

    private static boolean leaderIs(Admin admin, String topic, int node) {
        try {
            return leaderOf(admin, topic) == node;
        } catch (Exception e) {
            return false;
        }
    }

    private static int leaderOf(Admin admin, String topic) throws Exception {
        TopicDescription described = Scenarios.await(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        return described.partitions().get(0).leader().id();
    }

    private static void post(HttpClient http, String url, String body) throws Exception {
        HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(url))
                .POST(HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json").build(),
                HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200) {
            throw new IllegalStateException(url + " answered " + answer.statusCode() + ": " + answer.body());
        }
    }
}
