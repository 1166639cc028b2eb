package clientlab.okhttp;

import clientlab.lab.AsyncDriver;
import clientlab.lab.FileSink;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import clientlab.lab.Tls;
import java.io.File;
import java.io.IOException;
import java.net.CookieManager;
import java.net.InetAddress;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.net.SocketFactory;
import javax.net.ssl.X509TrustManager;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.FormBody;
import okhttp3.MediaType;
import okhttp3.MultipartBody;
import okhttp3.OkHttp;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.RequestBody;
import okhttp3.java.net.cookiejar.JavaNetCookieJar;

/**
 * OkHttp 5: one OkHttpClient per job (its ConnectionPool and Dispatcher), following redirects
 * as OkHttp does by default, and, for entries that ask not to, a view of it that does not
 * (newBuilder() shares pool and dispatcher). Sequential jobs use Call.execute(); parallel ones
 * enqueue every call and let the Dispatcher keep `concurrency` running.
 */
public final class OkHttpDriver extends AsyncDriver {
    private static final List<String> BODY_METHODS = List.of("POST", "PUT", "PATCH");

    private Job job;
    /** the job's client, with OkHttp's redirect setting as it ships (follow) */
    private OkHttpClient client;
    /** the same client not following redirects, for entries with follow_redirects false */
    private OkHttpClient direct;

    /**
     * Options: tcp_nodelay (a SocketFactory sets it on every socket), max_host_connections
     * (Dispatcher.maxRequestsPerHost, HTTP/1.1 only), expect_100 (OkHttp waits for the 100 when
     * the request says Expect: 100-continue, and never says it by itself).
     */
    public OkHttpDriver() {
        super("tcp_nodelay", ANY, "max_host_connections", ANY, "expect_100", ANY,
                "accept_encoding", LIBRARY_ENCODING);
    }

    public static void main(String[] args) {
        Lab.main(new OkHttpDriver(), args);
    }

    @Override
    protected void versions(Map<String, String> v) {
        v.put("okhttp", OkHttp.VERSION);
        v.put("okio", Lab.versionOf(okio.Okio.class));
        v.put("kotlin-stdlib", kotlin.KotlinVersion.CURRENT.toString());
    }

    @Override
    public String refuse(Job job) {
        if (job.http2() && job.number("max_host_connections") != null) {
            return "OkHttp's per-host limit (Dispatcher.maxRequestsPerHost) counts requests; over HTTP/2 "
                    + "they share connections, so it is no connection limit";
        }
        return null;
    }

    @Override
    public void open(Job job) throws Exception {
        this.job = job;
        Integer perHost = job.number("max_host_connections");
        Dispatcher dispatcher = new Dispatcher();
        dispatcher.setMaxRequests(job.concurrency);
        // on HTTP/1.1 a request in flight holds its connection: requests per host = connections
        dispatcher.setMaxRequestsPerHost(perHost != null ? perHost : job.concurrency);
        OkHttpClient.Builder b = new OkHttpClient.Builder()
                .dispatcher(dispatcher); // OkHttp's own ConnectionPool (5 idle connections kept)
        if (job.timeout() != null) {
            // the job's limit on the whole call; connect, read and write keep OkHttp's 10 s.
            // Raising them to the call's limit flattered the client: a read's time-out then
            // queued behind the call's in okio's watchdog and never woke that thread, where
            // with OkHttp's defaults every read wakes it (about 5x the context switches and
            // 1.3-1.8x the CPU a 335 KB answer in a plain loop)
            b.callTimeout(job.timeout());
        }
        if (job.h2c()) {
            b.protocols(List.of(Protocol.H2_PRIOR_KNOWLEDGE));
        } else if (!job.http.equals("2")) {
            b.protocols(List.of(Protocol.HTTP_1_1));
        }
        // HTTP/2 over TLS keeps OkHttp's own list (h2, http/1.1): it refuses a list without
        // http/1.1, so ALPN may settle on HTTP/1.1, and read() fails such a response
        if (job.cookies) {
            b.cookieJar(new JavaNetCookieJar(new CookieManager()));
        }
        if (job.tlsCa != null) {
            X509TrustManager trust = Tls.trustManager(job.tlsCa);
            b.sslSocketFactory(Tls.context(trust).getSocketFactory(), trust);
        }
        Boolean nodelay = job.flag("tcp_nodelay");
        if (nodelay != null) {
            b.socketFactory(new NoDelaySocketFactory(nodelay));
        }
        client = b.build();
        direct = null;
        for (Request req : job.requests) {
            if (Boolean.FALSE.equals(req.followRedirects)) {
                direct = client.newBuilder().followRedirects(false).followSslRedirects(false).build();
                break;
            }
        }
    }

    private Call call(Request req) {
        okhttp3.Request.Builder b = new okhttp3.Request.Builder().url(req.url);
        if (!job.acceptGzip && !job.libraryEncoding()) {
            // OkHttp asks for gzip (and decodes it) unless the request names an encoding, as it
            // does where the job leaves it to the library
            b.header("Accept-Encoding", "identity");
        }
        if (!job.keepAlive) {
            b.header("Connection", "close");
        }
        if (req.hasBody() && Boolean.TRUE.equals(job.flag("expect_100"))) {
            b.header("Expect", "100-continue");
        }
        req.headers.forEach(b::header);
        RequestBody body = null;
        if (req.multipart()) {
            MultipartBody.Builder m = new MultipartBody.Builder().setType(MultipartBody.FORM);
            req.form.forEach(m::addFormDataPart);
            body = m.build();
        } else if (req.form != null) {
            FormBody.Builder f = new FormBody.Builder();
            req.form.forEach(f::add);
            body = f.build();
        } else if (req.bodyFile != null) {
            body = RequestBody.create(new File(req.bodyFile), MediaType.get(req.uploadContentType()));
        } else if (BODY_METHODS.contains(req.method)) {
            body = RequestBody.create(new byte[0]);
        }
        b.method(req.method, body);
        return (Boolean.FALSE.equals(req.followRedirects) ? direct : client).newCall(b.build());
    }

    private Response read(Request req, okhttp3.Response resp) throws IOException {
        try (resp) {
            job.checkVersion(resp.protocol()); // before the body: an HTTP/1.1 answer is no HTTP/2 work
            if (req.toFile()) {
                try (FileSink sink = new FileSink(req.sinkPath, job.verify)) {
                    return sink.drain(resp.body().byteStream(), resp.code(), resp.protocol());
                }
            }
            return Response.of(resp.code(), resp.protocol(), resp.body().bytes(), job.verify);
        }
    }

    @Override
    public Response request(Request req) throws Exception {
        return read(req, call(req).execute());
    }

    @Override
    public CompletionStage<Response> send(Request req) {
        CompletableFuture<Response> done = new CompletableFuture<>();
        call(req).enqueue(new Callback() {
            @Override
            public void onFailure(Call call, IOException e) {
                done.completeExceptionally(e);
            }

            @Override
            public void onResponse(Call call, okhttp3.Response resp) {
                try {
                    done.complete(read(req, resp));
                } catch (Exception e) {
                    done.completeExceptionally(e);
                }
            }
        });
        return done;
    }

    @Override
    protected int inFlight(Job job) {
        return Integer.MAX_VALUE; // every call is enqueued: the Dispatcher keeps `concurrency` running
    }

    @Override
    public void close() {
        if (client != null) {
            client.dispatcher().cancelAll();
            client.dispatcher().executorService().shutdown();
            client.connectionPool().evictAll();
        }
        client = direct = null;
    }

    /** Sockets with TCP_NODELAY set as the job asks (OkHttp has no setting of its own). */
    private static final class NoDelaySocketFactory extends SocketFactory {
        private final SocketFactory base = SocketFactory.getDefault();
        private final boolean on;

        NoDelaySocketFactory(boolean on) {
            this.on = on;
        }

        private Socket set(Socket s) throws IOException {
            s.setTcpNoDelay(on);
            return s;
        }

        // OkHttp asks for unconnected sockets; the other four complete the SocketFactory
        @Override public Socket createSocket() throws IOException {
            return set(base.createSocket());
        }

        @Override public Socket createSocket(String host, int port) throws IOException {
            return set(base.createSocket(host, port));
        }

        @Override public Socket createSocket(String host, int port, InetAddress local, int lport) throws IOException {
            return set(base.createSocket(host, port, local, lport));
        }

        @Override public Socket createSocket(InetAddress host, int port) throws IOException {
            return set(base.createSocket(host, port));
        }

        @Override public Socket createSocket(InetAddress host, int port, InetAddress local, int lport) throws IOException {
            return set(base.createSocket(host, port, local, lport));
        }
    }
}
