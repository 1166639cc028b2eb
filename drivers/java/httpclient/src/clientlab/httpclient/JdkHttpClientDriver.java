package clientlab.httpclient;

import clientlab.lab.AsyncDriver;
import clientlab.lab.FileSink;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import clientlab.lab.Tls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.CookieManager;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublisher;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.zip.GZIPInputStream;

/**
 * java.net.http.HttpClient (the JDK's own): one client per job, version forced with
 * Builder.version(); send() one after another, sendAsync() with up to `concurrency` in flight.
 * The JDK has no form, multipart or gzip helpers: bodies are built and gzip is decoded the way
 * its users do it (URLEncoder, a hand-written multipart body, GZIPInputStream).
 */
public class JdkHttpClientDriver extends AsyncDriver {
    private Job job;
    private HttpClient client;
    private Thread selector;

    /**
     * Options: tcp_nodelay=true only (the JDK sets TCP_NODELAY on every connection and offers
     * no way to clear it), expect_100 (HttpRequest.Builder.expectContinue(); nothing else sends it).
     */
    public JdkHttpClientDriver() {
        // accept_encoding "library": java.net.http sends no Accept-Encoding and decodes nothing,
        // as a job without accept_gzip does already
        super("tcp_nodelay", List.of(true), "expect_100", ANY, "accept_encoding", LIBRARY_ENCODING);
    }

    public static void main(String[] args) {
        run(new JdkHttpClientDriver(), args);
    }

    /** The driver's process on `driver`: this class, or a test driver built on it (planted-java). */
    protected static void run(JdkHttpClientDriver driver, String[] args) {
        // Connection: close for jobs without keep-alive: the JDK's documented switch for that
        // restricted header (read once, before the first HttpClient is built)
        System.setProperty("jdk.httpclient.allowRestrictedHeaders", "connection");
        Lab.main(driver, args);
    }

    @Override
    protected void versions(Map<String, String> v) {
        v.put("java.net.http", HttpClient.class.getModule().getDescriptor().rawVersion()
                .orElse(Runtime.version().toString()));
    }

    @Override
    public String refuse(Job job) {
        if (job.redirectsDiffer()) {
            return "java.net.http follows redirects per client (HttpClient.Redirect), and this job's requests differ";
        }
        return null;
    }

    @Override
    public void open(Job job) throws Exception {
        this.job = job;
        Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
        // HTTP_2 is a preference: when ALPN does not settle on h2 the JDK speaks HTTP/1.1, and
        // the response's version() says so (checked before the body is used)
        HttpClient.Builder b = HttpClient.newBuilder()
                .version(job.http2() ? HttpClient.Version.HTTP_2 : HttpClient.Version.HTTP_1_1);
        if (job.timeout() != null) {
            b.connectTimeout(job.timeout());
        }
        Boolean follow = job.followRedirects(); // null: the JDK's own setting (NEVER) stays
        if (follow != null) {
            b.followRedirects(follow ? HttpClient.Redirect.NORMAL : HttpClient.Redirect.NEVER);
        }
        if (job.tlsCa != null) {
            b.sslContext(Tls.context(job.tlsCa));
        }
        if (job.cookies) {
            b.cookieHandler(new CookieManager());
        }
        client = b.build();
        // the client's selector thread: on Java 17 it ends, closing the connections, once the
        // client is unreachable (see close)
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (!before.contains(t) && t.getName().contains("SelectorManager")) {
                selector = t;
            }
        }
    }

    private HttpRequest build(Request req) {
        HttpRequest.Builder b = HttpRequest.newBuilder(req.uri());
        if (job.timeout() != null) {
            b.timeout(job.timeout());
        }
        if (!job.keepAlive) {
            b.header("Connection", "close");
        }
        if (job.acceptGzip) {
            b.header("Accept-Encoding", "gzip");
        }
        BodyPublisher body = BodyPublishers.noBody();
        if (req.multipart()) {
            String boundary = "clientlab-" + UUID.randomUUID();
            b.header("Content-Type", "multipart/form-data; boundary=" + boundary);
            body = BodyPublishers.ofByteArray(multipart(req.form, boundary));
        } else if (req.form != null) {
            b.header("Content-Type", "application/x-www-form-urlencoded");
            body = BodyPublishers.ofString(urlencoded(req.form));
        } else if (req.bodyFile != null) {
            b.header("Content-Type", req.uploadContentType());
            try {
                body = BodyPublishers.ofFile(req.bodyPath());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        req.headers.forEach(b::setHeader);
        b.expectContinue(req.hasBody() && Boolean.TRUE.equals(job.flag("expect_100")));
        return b.method(req.method, body).build();
    }

    static String urlencoded(Map<String, String> form) {
        StringJoiner out = new StringJoiner("&");
        form.forEach((k, v) -> out.add(URLEncoder.encode(k, StandardCharsets.UTF_8) + "="
                + URLEncoder.encode(v, StandardCharsets.UTF_8)));
        return out.toString();
    }

    static byte[] multipart(Map<String, String> form, String boundary) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        form.forEach((k, v) -> out.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\""
                + k.replace("\"", "%22") + "\"\r\n\r\n" + v + "\r\n").getBytes(StandardCharsets.UTF_8)));
        out.writeBytes(("--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
        return out.toByteArray();
    }

    private static boolean gzipped(HttpHeaders headers) {
        return headers.firstValue("Content-Encoding").map("gzip"::equalsIgnoreCase).orElse(false);
    }

    private Response inMemory(HttpResponse<byte[]> resp) throws IOException {
        job.checkVersion(resp.version());
        byte[] body = resp.body();
        if (gzipped(resp.headers())) {
            try (InputStream in = new GZIPInputStream(new java.io.ByteArrayInputStream(body))) {
                body = in.readAllBytes();
            }
        }
        return Response.of(resp.statusCode(), resp.version(), body, job.verify);
    }

    private Response toFile(Request req, HttpResponse<InputStream> resp) throws IOException {
        try (InputStream raw = resp.body()) {
            job.checkVersion(resp.version());
            try (InputStream in = gzipped(resp.headers()) ? new GZIPInputStream(raw, FileSink.CHUNK) : raw;
                 FileSink sink = new FileSink(req.sinkPath, job.verify)) {
                return sink.drain(in, resp.statusCode(), resp.version());
            }
        }
    }

    @Override
    public Response request(Request req) throws Exception {
        HttpRequest r = build(req);
        if (req.toFile()) {
            return toFile(req, client.send(r, BodyHandlers.ofInputStream()));
        }
        return inMemory(client.send(r, BodyHandlers.ofByteArray()));
    }

    @Override
    public CompletionStage<Response> send(Request req) {
        HttpRequest r = build(req);
        if (req.toFile()) {
            return client.sendAsync(r, BodyHandlers.ofInputStream()).thenApplyAsync(resp -> {
                try {
                    return toFile(req, resp);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }
        return client.sendAsync(r, BodyHandlers.ofByteArray()).thenApply(resp -> {
            try {
                return inMemory(resp);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    @Override
    public void close() throws Exception {
        Object c = client;
        client = null;
        if (c instanceof AutoCloseable) { // Java 21 and later
            ((AutoCloseable) c).close();
            return;
        }
        // Java 17's HttpClient has no close(). Its selector thread shuts the client down, closing
        // every connection, once the client is unreachable (it looks every 3 s) or when the
        // thread is interrupted. The client is dropped: interrupt the thread and wait for it,
        // here, after the report, so that no connection outlives the job.
        c = null;
        Thread t = selector;
        selector = null;
        if (t != null) {
            t.interrupt();
            t.join(10_000);
            if (t.isAlive()) {
                System.err.println("java-httpclient: the HttpClient's selector thread is still running");
            }
        }
    }
}
