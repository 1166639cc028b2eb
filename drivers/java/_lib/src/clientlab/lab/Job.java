package clientlab.lab;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** A job (docs/driver-protocol.md §3) as typed fields. */
public final class Job {
    /** Options known in protocol version 1 and the JSON kind each value must have. */
    static final Map<String, String> OPTION_KINDS = Map.of(
            "tcp_nodelay", "boolean", "max_host_connections", "integer", "share", "list",
            "expect_100", "boolean", "multi_api", "string", "accept_encoding", "string");

    public final String scenario;
    public final boolean verify;
    /** "1.1", "2" (HTTP/2 over TLS), "h2c" (cleartext, prior knowledge) or "3" (HTTP/3 over QUIC) */
    public final String http;
    /** PEM CA file to trust for https URLs, or null */
    public final String tlsCa;
    public final int concurrency;
    public final boolean keepAlive;
    public final boolean cookies;
    public final boolean acceptGzip;
    /** null: the job names no time limit, and the library keeps its own default */
    public final Double timeoutS;
    /** the non-null options: Boolean, Long, String or List<String> values */
    public final Map<String, Object> options;
    public final List<Request> requests;

    private Job(JsonNode j) {
        scenario = j.path("scenario").asText("");
        verify = j.path("verify").asBoolean(false);
        http = j.path("http").asText("1.1");
        tlsCa = j.hasNonNull("tls_ca") ? j.get("tls_ca").asText() : null;
        concurrency = j.path("concurrency").asInt(1);
        keepAlive = j.path("keep_alive").asBoolean(true);
        cookies = j.path("cookies").asBoolean(false);
        acceptGzip = j.path("accept_gzip").asBoolean(false);
        timeoutS = j.hasNonNull("timeout_s") ? j.get("timeout_s").asDouble() : null;
        if (timeoutS != null && !(timeoutS > 0)) {
            throw new IllegalArgumentException("timeout_s must be positive");
        }
        if (concurrency < 1) {
            throw new IllegalArgumentException("concurrency must be at least 1");
        }
        JsonNode opts = j.get("options");
        if (opts != null && !opts.isNull() && !opts.isObject()) {
            throw new IllegalArgumentException("options must be an object");
        }
        Map<String, Object> o = new TreeMap<>();
        if (opts != null) {
            opts.fields().forEachRemaining(f -> {
                if (!f.getValue().isNull()) {
                    o.put(f.getKey(), plain(f.getValue()));
                }
            });
        }
        options = Collections.unmodifiableMap(o);
        JsonNode reqs = j.get("requests");
        if (reqs == null || !reqs.isArray()) {
            throw new IllegalArgumentException("job must have a requests list");
        }
        List<Request> list = new ArrayList<>();
        for (int r = 0; r < reqs.size(); r++) {
            list.add(Request.parse(r, reqs.get(r)));
        }
        requests = Collections.unmodifiableList(list);
    }

    /** Build from the {@code job} object of a job message. */
    public static Job parse(JsonNode data) {
        if (data == null || !data.isObject()) {
            throw new IllegalArgumentException("job must be an object");
        }
        return new Job(data);
    }

    /** The option's value; null when absent or null (the client's default). */
    public Object option(String name) {
        return options.get(name);
    }

    /**
     * The job leaves Accept-Encoding and decoding to the library as it ships (the option
     * accept_encoding = "library"): the driver sets no Accept-Encoding of its own.
     */
    public boolean libraryEncoding() {
        return "library".equals(options.get("accept_encoding"));
    }

    /** A boolean option (tcp_nodelay, expect_100); null when the client's default is asked. */
    public Boolean flag(String name) {
        return (Boolean) options.get(name);
    }

    /** An integer option (max_host_connections); null when the client's default is asked. */
    public Integer number(String name) {
        Object v = options.get(name);
        return v == null ? null : Math.toIntExact((Long) v);
    }

    /** HTTP/2, over TLS or cleartext. */
    public boolean http2() {
        return http.equals("2") || http.equals("h2c");
    }

    public boolean h2c() {
        return http.equals("h2c");
    }

    /** HTTP/3 over QUIC: the https URLs name the server's UDP port. */
    public boolean http3() {
        return http.equals("3");
    }

    /** The version every response must have ("2", "3"), or null for HTTP/1.1 (1.0 answers count). */
    String wanted() {
        return http2() ? "2" : http3() ? "3" : null;
    }

    /** The job's time limit, or null when it names none (the library's own default stays). */
    public Duration timeout() {
        return timeoutS == null ? null : Duration.ofMillis(Math.round(timeoutS * 1000));
    }

    /** Every request to do, in order, repeats expanded. */
    public List<Request> work() {
        List<Request> out = new ArrayList<>();
        for (Request req : requests) {
            for (int i = 0; i < req.repeat; i++) {
                out.add(req);
            }
        }
        return out;
    }

    /** How many requests the job makes. */
    public int total() {
        long n = 0;
        for (Request req : requests) {
            n += req.repeat;
        }
        return (int) Math.min(n, Integer.MAX_VALUE);
    }

    /**
     * The redirect setting the job's entries name: true or false when every entry that names one
     * agrees, null when none names one (the library's own setting stays). See
     * {@link #redirectsDiffer} for entries that disagree.
     */
    public Boolean followRedirects() {
        for (Request r : requests) {
            if (r.followRedirects != null) {
                return r.followRedirects;
            }
        }
        return null;
    }

    /** Whether some entries follow redirects and others do not (a per-client setting cannot). */
    public boolean redirectsDiffer() {
        Set<Boolean> seen = new TreeSet<>();
        requests.forEach(r -> {
            if (r.followRedirects != null) {
                seen.add(r.followRedirects);
            }
        });
        return seen.size() > 1;
    }

    /**
     * Fail a response the client got in another HTTP version than the job's: a client that lets
     * ALPN settle on HTTP/1.1 for an HTTP/2 job (or answers an HTTP/3 job over TCP) has not done
     * the job's work. Call it as soon as the response's head is there, before the body is read.
     */
    public void checkVersion(Object version) throws IOException {
        String wrong = Report.versionMismatch(wanted(), Response.label(String.valueOf(version)));
        if (wrong != null) {
            throw new IOException(wrong);
        }
    }

    /**
     * Why this job cannot be done exactly (an unknown value, an option the driver does not
     * honour), or null. {@code honoured} maps each option the driver honours to the values it
     * honours exactly, or to null for every valid value. Capabilities are the lab's to check: it
     * sends no job needing one the manifest does not claim.
     */
    String refusal(Map<String, List<?>> honoured) {
        if (!http.equals("1.1") && !http.equals("2") && !http.equals("h2c") && !http3()) {
            return "http '" + http + "' is not known";
        }
        for (Request r : requests) {
            String why = r.unknownValue();
            if (why != null) {
                return why;
            }
        }
        for (Map.Entry<String, Object> e : options.entrySet()) {
            String name = e.getKey();
            Object value = e.getValue();
            if (!honoured.containsKey(name)) {
                return "option " + name + " is not supported";
            }
            String kind = OPTION_KINDS.get(name);
            if (kind != null && !kind.equals(kindOf(value))) {
                return "option " + name + " must be a " + kind + ", got " + Lab.json(value);
            }
            if (name.equals("max_host_connections") && (Long) value < 1) {
                return "option max_host_connections must be a positive integer";
            }
            List<?> allowed = honoured.get(name);
            if (allowed != null && !allowed.contains(value)) {
                List<String> shown = new ArrayList<>();
                allowed.forEach(a -> shown.add(Lab.json(a)));
                return "option " + name + "=" + Lab.json(value) + " cannot be honoured (only "
                        + String.join(", ", shown) + ")";
            }
        }
        return null;
    }

    private static Object plain(JsonNode v) {
        if (v.isBoolean()) {
            return v.asBoolean();
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            return v.asLong();
        }
        if (v.isNumber()) {
            return v.numberValue();
        }
        if (v.isTextual()) {
            return v.asText();
        }
        if (v.isArray()) {
            List<Object> out = new ArrayList<>();
            v.forEach(item -> out.add(plain(item)));
            return out;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        v.fields().forEachRemaining(f -> out.put(f.getKey(), plain(f.getValue())));
        return out;
    }

    private static String kindOf(Object value) {
        if (value instanceof Boolean) {
            return "boolean";
        }
        if (value instanceof Long) {
            return "integer";
        }
        if (value instanceof String) {
            return "string";
        }
        if (value instanceof Number) {
            return "number";
        }
        return value instanceof List ? "list" : "object";
    }
}
