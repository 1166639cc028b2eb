package clientlab.lab;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import javax.net.ssl.SSLContext;

/**
 * labdriver for Java: the clientlab driver protocol (docs/driver-protocol.md). A driver's
 * {@code main} calls {@link #main(Driver, String[])}; this class does hello / job / ready / go /
 * done / report / close, refusing jobs with an option the driver does not honour (and those its
 * own refuse hook names), and the calibration loop ({@code bare}: the job's requests on one kept
 * client, timed by the driver's own clock, nothing kept but counts). Capabilities are declared in
 * driver.toml alone and checked by the lab, which never sends a job needing one not claimed.
 */
public final class Lab {
    public static final int PROTOCOL = 1;
    static final ObjectMapper JSON = new ObjectMapper();
    /** The done line as written: the lab times the driver's CPU up to it, so no JSON is built for it. */
    private static final String DONE = "{\"type\":\"done\"}\n";

    private final Driver driver;
    private final Writer out;
    /** a job answered ready, whose client waits for its go */
    private Job ready;
    /** the first bare round's job: its client is built and kept for the next bare rounds */
    private Job bare;

    Lab(Driver driver, Writer out) { // package-private: the transcript test drives the loop
        this.driver = driver;
        this.out = out;
    }

    /** Run {@code driver} on stdin/stdout until end of input, then exit 0. */
    public static void main(Driver driver, String[] args) {
        // protocol lines go to the real stdout; System.out becomes stderr so that a library's
        // println or default logging cannot corrupt the protocol
        Writer proto = new BufferedWriter(new OutputStreamWriter(
                new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8));
        System.setOut(System.err);
        // out of memory in a request's own call fails that request (Driver.once); in a thread
        // of the library's that nobody waits on, it would leave the client limping on: the
        // driver exits, as -XX:+ExitOnOutOfMemoryError would, its words on stderr
        Thread.setDefaultUncaughtExceptionHandler((thread, exc) -> {
            System.err.println("Exception in thread \"" + thread.getName() + "\"");
            exc.printStackTrace();
            if (exc instanceof OutOfMemoryError) {
                System.err.println("Terminating due to " + exc);
                Runtime.getRuntime().halt(3);
            }
        });
        int status = 0;
        try {
            new Lab(driver, proto).run();
        } catch (Throwable t) {
            t.printStackTrace();
            status = 3;
        }
        System.exit(status);
    }

    /** Versions every Java driver reports: the runtime, the VM and the TLS provider. */
    public static Map<String, String> baseVersions() {
        Map<String, String> v = new LinkedHashMap<>();
        v.put("java", System.getProperty("java.runtime.version", Runtime.version().toString()));
        v.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"));
        try {
            v.put("tls", SSLContext.getDefault().getProvider().toString()); // e.g. "SunJSSE version 17"
        } catch (Exception e) {
            v.put("tls", "unknown: " + e);
        }
        return v;
    }

    /**
     * The version of the jar holding {@code cls}, from its manifest (Implementation-Version, else
     * the OSGi Bundle-Version), else from Maven's pom.properties inside it; "unknown" without one.
     */
    public static String versionOf(Class<?> cls) {
        Package p = cls.getPackage();
        if (p != null && p.getImplementationVersion() != null) {
            return p.getImplementationVersion();
        }
        try (JarFile jar = new JarFile(new File(cls.getProtectionDomain().getCodeSource().getLocation().toURI()))) {
            Manifest manifest = jar.getManifest();
            String v = manifest == null ? null : manifest.getMainAttributes().getValue("Bundle-Version");
            if (v != null) {
                return v;
            }
            for (JarEntry e : Collections.list(jar.entries())) {
                if (e.getName().startsWith("META-INF/maven/") && e.getName().endsWith("/pom.properties")) {
                    Properties props = new Properties();
                    try (InputStream in = jar.getInputStream(e)) {
                        props.load(in);
                    }
                    if (props.getProperty("version") != null) {
                        return props.getProperty("version");
                    }
                }
            }
        } catch (Exception e) {
            return "unknown (" + e + ")";
        }
        return "unknown";
    }

    static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            return String.valueOf(value);
        }
    }

    private void send(Map<String, Object> message) throws IOException {
        out.write(JSON.writeValueAsString(message));
        out.write('\n');
        out.flush();
    }

    private void send(String type, String key, Object value) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        if (key != null) {
            m.put(key, value);
        }
        send(m);
    }

    /** Answer System.in's messages until end of input. */
    void run() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode message;
            String kind;
            try {
                message = JSON.readTree(line);
                kind = message.get("type").asText();
            } catch (Exception e) {
                send("error", "message", "not a protocol message: " + line.substring(0, Math.min(200, line.length())));
                continue;
            }
            switch (kind) {
                case "hello":
                    Map<String, Object> hello = new LinkedHashMap<>();
                    hello.put("type", "hello");
                    hello.put("protocol", PROTOCOL);
                    Map<String, String> versions = baseVersions();
                    driver.versions(versions);
                    hello.put("versions", versions);
                    send(hello);
                    break;
                case "job":
                    onJob(message.get("job"));
                    break;
                case "go":
                    onGo();
                    break;
                case "bare":
                    onBare(message.get("job"));
                    break;
                default:
                    send("error", "message", "unknown message type '" + kind + "'");
            }
        }
        dropClient();
    }

    /**
     * Close the client a job that never got its go, or the bare loop, left open: every job
     * starts with a client of its own.
     */
    private void dropClient() {
        if (ready != null || bare != null) {
            ready = null;
            bare = null;
            closeQuietly();
        }
    }

    private void onJob(JsonNode data) throws IOException {
        dropClient();
        Job job = open(data);
        if (job != null) {
            ready = job;
            send("ready", null, null);
        }
    }

    /** A job message's job, or null after answering error. */
    private Job parse(JsonNode data) throws IOException {
        try {
            return Job.parse(data);
        } catch (RuntimeException e) {
            send("error", "message", "bad job: " + e);
            return null;
        }
    }

    /**
     * Parse a job and build its client (the driver's refusals first); null after answering
     * unsupported or error.
     */
    private Job open(JsonNode data) throws IOException {
        Job job = parse(data);
        if (job == null) {
            return null;
        }
        String reason = job.refusal(driver.options());
        if (reason == null && !job.keepAlive && (job.http3() || job.http2() && !driver.http2WithoutKeepAlive())) {
            reason = "this client closes a connection after a request only by Connection: close, "
                    + "which HTTP/" + job.wanted() + " does not have";
        }
        if (reason == null) {
            reason = driver.refuse(job);
        }
        if (reason != null) {
            send("unsupported", "reason", reason);
            return null;
        }
        try {
            driver.begin(job);
        } catch (Exception e) {
            e.printStackTrace();
            closeQuietly();
            send("error", "message", "building the client failed: " + Report.cause(e));
            return null;
        }
        return job;
    }

    private void onGo() throws IOException {
        Job job = ready;
        ready = null;
        if (job == null) {
            send("error", "message", "go without a ready job");
            return;
        }
        Report report = new Report(job);
        List<Request> work = job.work();
        try {
            driver.runAll(job, work, report);
        } catch (Exception | OutOfMemoryError e) { // one the driver's own loop let through
            e.printStackTrace();
            send("error", "message", "the run failed: " + Report.cause(e));
            closeQuietly();
            return;
        }
        out.write(DONE); // before the report: serialising it is not timed
        out.flush();
        report.write(out);
        out.write('\n');
        out.flush();
        closeQuietly(); // no connection survives the job
    }

    /**
     * One round of the calibration loop: the first builds the client from its job as a job
     * message would, later ones reuse it (only the server's port may differ). The requests run
     * through the trial's own loop into a {@link Tally}; wall_s is System.nanoTime() around it.
     */
    private void onBare(JsonNode data) throws IOException {
        Job job;
        if (bare == null) {
            dropClient(); // a job that never got its go
            job = open(data);
            if (job == null) {
                return;
            }
            bare = job;
        } else {
            job = parse(data);
            if (job == null) {
                return;
            }
            String differs = differs(bare, job);
            if (differs != null) {
                send("error", "message", "a bare round must repeat the first one's job: " + differs);
                return;
            }
        }
        Tally tally = new Tally(job);
        List<Request> work = job.work();
        long start;
        long end;
        try {
            start = System.nanoTime();
            driver.runAll(job, work, tally);
            end = System.nanoTime();
        } catch (Exception | OutOfMemoryError e) {
            e.printStackTrace();
            send("error", "message", "the run failed: " + Report.cause(e));
            dropClient(); // the next round starts over on a new client
            return;
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", "bare");
        answer.put("wall_s", (end - start) / 1e9);
        answer.put("requests", tally.responses());
        answer.put("errors", tally.errors());
        if (tally.firstError() != null) {
            answer.put("error", tally.firstError());
        }
        send(answer);
    }

    /**
     * How a later bare round's job differs from the one its client was built for, or null. The
     * client was configured by the first (per-entry settings, worker threads for its
     * concurrency), so only the entries' URLs and files may change.
     */
    private static String differs(Job kept, Job job) {
        if (!kept.scenario.equals(job.scenario)) {
            return "scenario " + job.scenario + ", not " + kept.scenario;
        }
        if (kept.concurrency != job.concurrency) {
            return "concurrency " + job.concurrency + ", not " + kept.concurrency;
        }
        if (kept.requests.size() != job.requests.size()) {
            return job.requests.size() + " request entries, not " + kept.requests.size();
        }
        return null;
    }

    private void closeQuietly() {
        try {
            driver.end();
        } catch (Exception e) {
            e.printStackTrace();
        }
    }
}
