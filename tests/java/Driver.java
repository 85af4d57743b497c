import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs scenarios of the real Apache Kafka Java client against a broker, in parallel threads of one JVM (a JVM
 * start costs more than most scenarios), and prints one JSON line per scenario for the Python test to check:
 * {"scenario": ..., "ok": true, "result": {...}} or {"scenario": ..., "ok": false, "error": "stack trace"}, with the
 * scenario's "elapsed_ms".
 *
 * Usage: java Driver BOOTSTRAP PREFIX SCENARIO[:ARG] ...  (PREFIX makes topic, group and transactional ids unique)
 */
public final class Driver {
    static final long SCENARIO_TIMEOUT_S = 60;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        ExecutorService pool = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(runnable);
            thread.setDaemon(true);
            return thread;
        });
        Map<String, Future<Map<String, Object>>> running = new LinkedHashMap<>();
        Map<String, Long> elapsed = new ConcurrentHashMap<>();
        for (int i = 2; i < args.length; i++) {
            String spec = args[i];
            String[] parts = spec.split(":", 2);
            String arg = parts.length > 1 ? parts[1] : "";
            Ctx ctx = new Ctx(bootstrap, prefix + "-" + spec.replaceAll("[^A-Za-z0-9._-]", "-"), arg);
            running.put(spec, pool.submit(() -> {
                long start = System.nanoTime();
                try {
                    return Scenarios.run(parts[0], ctx);
                } finally {
                    elapsed.put(spec, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                }
            }));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SCENARIO_TIMEOUT_S);
        for (Map.Entry<String, Future<Map<String, Object>>> entry : running.entrySet()) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("scenario", entry.getKey());
            try {
                long left = Math.max(0, deadline - System.nanoTime());
                line.put("result", entry.getValue().get(left, TimeUnit.NANOSECONDS));
                line.put("ok", true);
            } catch (TimeoutException e) {
                line.put("ok", false);
                line.put("error", "timed out after " + SCENARIO_TIMEOUT_S + " s");
            } catch (ExecutionException e) {
                line.put("ok", false);
                line.put("error", stackTrace(e.getCause()));
            }
            line.put("elapsed_ms", elapsed.get(entry.getKey()));
            System.out.println(Json.write(line));
            System.out.flush();
        }
        System.exit(0);  // daemon threads of a timed-out scenario must not keep the JVM
    }

    static String stackTrace(Throwable error) {
        StringWriter out = new StringWriter();
        error.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    /** What one scenario gets: the bootstrap, a unique name for its topics and groups, its argument. */
    static final class Ctx {
        final String bootstrap;
        final String name;
        final String arg;

        Ctx(String bootstrap, String name, String arg) {
            this.bootstrap = bootstrap;
            this.name = name;
            this.arg = arg;
        }
    }

    /** Just enough JSON writing for maps, lists, strings, numbers, booleans and null. */
    static final class Json {
        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            append(out, value);
            return out.toString();
        }

        private static void append(StringBuilder out, Object value) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof Map) {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                    if (!first) out.append(',');
                    first = false;
                    appendString(out, String.valueOf(entry.getKey()));
                    out.append(':');
                    append(out, entry.getValue());
                }
                out.append('}');
            } else if (value instanceof Iterable) {
                out.append('[');
                boolean first = true;
                for (Object item : (Iterable<?>) value) {
                    if (!first) out.append(',');
                    first = false;
                    append(out, item);
                }
                out.append(']');
            } else if (value instanceof Number || value instanceof Boolean) {
                out.append(value);
            } else {
                appendString(out, value.toString());
            }
        }

        private static void appendString(StringBuilder out, String text) {
            out.append('"');
            for (char c : text.toCharArray()) {
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        }
    }

    static List<Object> list(Object... items) {
        List<Object> out = new ArrayList<>();
        for (Object item : items) out.add(item);
        return out;
    }
}
