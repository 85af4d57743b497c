import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
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
        result.put("wrong_password", loginOutcome(secured, mechanism, args[1], "wrong-password"));
        return result;
    }

    /**
     * The argument is SASL_BOOTSTRAP. The Admin client (on the plaintext listener) makes a SCRAM user with
     * alterUserScramCredentials and describes it; the user logs in on the SASL listener at once, a wrong password
     * does not, and after deleting the SCRAM-SHA-512 credential neither does the right one (SCRAM-SHA-256 still
     * does). Kafka's refusals come back as the Admin client's exceptions.
     */
    static Map<String, Object> scramUsers(Driver.Ctx ctx) throws Exception {
        Driver.Ctx secured = new Driver.Ctx(ctx.arg, ctx.name, ctx.arg);
        String user = ctx.name;
        String missing = user + "-missing";
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = Scenarios.admin(ctx)) {
            Scenarios.createTopics(admin, 1, user);
            Scenarios.await(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "Scram-pw-512"))).all());
            Scenarios.await(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "Scram-pw-256"))).all());
            UserScramCredentialsDescription description =
                    Scenarios.await(admin.describeUserScramCredentials(List.of(user)).description(user));
            List<Object> infos = new ArrayList<>();
            for (ScramCredentialInfo info : description.credentialInfos()) {
                infos.add(info.mechanism().mechanismName() + ":" + info.iterations());
            }
            result.put("described", Scenarios.sortedStrings(infos));
            result.put("listed", Scenarios.await(admin.describeUserScramCredentials().users()).contains(user));
            result.put("too_few_iterations", failure(admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                    missing, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), "pw"))).all()));
            result.put("delete_missing", failure(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(missing, ScramMechanism.SCRAM_SHA_256))).all()));
            result.put("describe_missing", failure(admin.describeUserScramCredentials(List.of(missing)).description(missing)));

            Properties login = login("SCRAM-SHA-512", user, "Scram-pw-512");
            try (KafkaProducer<String, String> producer = Scenarios.producer(secured, login)) {
                for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(user, 0, "k", "v" + i));
                producer.flush();
            }
            result.put("read", TransactionScenarios.values(readAll(secured, user, login)));
            result.put("wrong_password", loginOutcome(secured, "SCRAM-SHA-512", user, "wrong-password"));
            Scenarios.await(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))).all());
        }
        result.put("after_delete", loginOutcome(secured, "SCRAM-SHA-512", user, "Scram-pw-512"));
        result.put("other_mechanism", loginOutcome(secured, "SCRAM-SHA-256", user, "Scram-pw-256"));
        return result;
    }

    /** "accepted", or the class of the exception an Admin client logging in this way meets. */
    private static String loginOutcome(Driver.Ctx ctx, String mechanism, String user, String password) throws Exception {
        try (Admin admin = Admin.create(merge(Scenarios.common(ctx), login(mechanism, user, password)))) {
            Scenarios.await(admin.describeCluster().nodes());
            return "accepted";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getName();
        }
    }

    /** The class of the exception the future fails with ("none" if it does not). */
    private static String failure(KafkaFuture<?> future) throws Exception {
        try {
            Scenarios.await(future);
            return "none";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getName();
        }
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
