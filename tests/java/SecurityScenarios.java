import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** The Java client's own SASL implementation against the broker's SASL_PLAINTEXT listener. */
final class SecurityScenarios {
    private SecurityScenarios() {
    }

    /**
     * The argument is MECHANISM,USER,PASSWORD,SASL_BOOTSTRAP: records go through the SASL listener with the right
     * password, and the Admin client with a wrong one fails to authenticate.
     */
    static Map<String, Object> sasl(Driver.Ctx ctx) throws Exception {
        String[] args = ctx.arg.split(",", 4);
        String mechanism = args[0];
        Driver.Ctx secured = new Driver.Ctx(args[3], ctx.name, ctx.arg);
        String topic = ctx.name;
        Map<String, Object> result = new LinkedHashMap<>();
        Properties login = login(mechanism, args[1], args[2]);
        try (Admin admin = Admin.create(merge(Scenarios.common(secured), login))) {
            Scenarios.createTopics(admin, 1, topic);
        }
        try (KafkaProducer<String, String> producer = Scenarios.producer(secured, login)) {
            for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(topic, 0, "k", "v" + i));
            producer.flush();
        }
        result.put("read", TransactionScenarios.values(readAll(secured, topic, login)));
        try (Admin wrong = Admin.create(merge(Scenarios.common(secured), login(mechanism, args[1], "wrong-password")))) {
            Scenarios.await(wrong.describeCluster().nodes());
            result.put("wrong_password", "accepted");
        } catch (ExecutionException e) {
            result.put("wrong_password", e.getCause().getClass().getName());
        }
        return result;
    }

    private static List<ConsumerRecord<String, String>> readAll(Driver.Ctx ctx, String topic, Properties login) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = Scenarios.consumer(ctx, login)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            Scenarios.until("5 records", () -> consumer.poll(Scenarios.POLL).forEach(records::add),
                    () -> records.size() >= 5);
        }
        return records;
    }

    private static Properties login(String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        return Scenarios.props("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", mechanism,
                "sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
    }

    private static Properties merge(Properties base, Properties extra) {
        base.putAll(extra);
        return base;
    }
}
