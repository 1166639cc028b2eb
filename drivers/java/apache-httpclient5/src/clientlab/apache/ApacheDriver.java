package clientlab.apache;

import clientlab.lab.Driver;
import clientlab.lab.FileSink;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import clientlab.lab.Tls;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.cookie.BasicCookieStore;
import org.apache.hc.client5.http.entity.UrlEncodedFormEntity;
import org.apache.hc.client5.http.entity.mime.MultipartEntityBuilder;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.ssl.ClientTlsStrategyBuilder;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.NameValuePair;
import org.apache.hc.core5.http.io.SocketConfig;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.FileEntity;
import org.apache.hc.core5.http.message.BasicNameValuePair;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.Timeout;
import org.apache.hc.core5.util.VersionInfo;

/**
 * Apache HttpClient 5, classic (blocking) API: one CloseableHttpClient per job over a
 * PoolingHttpClientConnectionManager; execute() with a response handler, one request after
 * another, or from `concurrency` threads sharing the client for parallel jobs. HTTP/1.1 only.
 */
public final class ApacheDriver extends Driver {
    /** The pool's own per-route default (PoolingHttpClientConnectionManager). */
    private static final int DEFAULT_PER_ROUTE = 5;
    private static final int DEFAULT_TOTAL = 25;

    private Job job;
    private CloseableHttpClient client;
    private final Map<Integer, RequestConfig> configs = new HashMap<>();

    /** Options: SocketConfig.tcpNoDelay, the pool's max per route, RequestConfig.expectContinueEnabled. */
    public ApacheDriver() {
        super("tcp_nodelay", ANY, "max_host_connections", ANY, "expect_100", ANY,
                "accept_encoding", LIBRARY_ENCODING);
    }

    public static void main(String[] args) {
        Lab.main(new ApacheDriver(), args);
    }

    @Override
    protected void versions(Map<String, String> v) {
        ClassLoader cl = HttpClients.class.getClassLoader();
        v.put("httpclient5", VersionInfo.loadVersionInfo("org.apache.hc.client5", cl).getRelease());
        v.put("httpcore5", VersionInfo.loadVersionInfo("org.apache.hc.core5", cl).getRelease());
    }

    @Override
    public void open(Job job) throws Exception {
        this.job = job;
        // the job's time limit, when it names one, on every wait; else HttpClient's own
        Timeout timeout = job.timeout() == null ? null : Timeout.ofMilliseconds(job.timeout().toMillis());
        SocketConfig.Builder socket = SocketConfig.custom();
        ConnectionConfig.Builder connection = ConnectionConfig.custom();
        if (timeout != null) {
            socket.setSoTimeout(timeout);
            connection.setConnectTimeout(timeout).setSocketTimeout(timeout);
        }
        Boolean nodelay = job.flag("tcp_nodelay");
        if (nodelay != null) {
            socket.setTcpNoDelay(nodelay);
        }
        // the pool's limit: the option when given, else its default raised to the job's threads
        Integer perHost = job.number("max_host_connections");
        int perRoute = perHost != null ? perHost : Math.max(DEFAULT_PER_ROUTE, job.concurrency);
        PoolingHttpClientConnectionManagerBuilder pool = PoolingHttpClientConnectionManagerBuilder.create()
                .setDefaultSocketConfig(socket.build())
                .setDefaultConnectionConfig(connection.build())
                .setMaxConnPerRoute(perRoute)
                .setMaxConnTotal(Math.max(DEFAULT_TOTAL, perRoute));
        if (job.tlsCa != null) {
            pool.setTlsSocketStrategy(ClientTlsStrategyBuilder.create()
                    .setSslContext(Tls.context(job.tlsCa)).buildClassic());
        }
        HttpClientBuilder b = HttpClients.custom().setConnectionManager(pool.build());
        if (job.cookies) {
            b.setDefaultCookieStore(new BasicCookieStore());
        } else {
            b.disableCookieManagement();
        }
        if (!job.acceptGzip && !job.libraryEncoding()) {
            b.disableContentCompression(); // else it asks for its codings and decodes them, as it ships
        }
        client = b.build();
        configs.clear();
        for (Request req : job.requests) {
            RequestConfig.Builder config = RequestConfig.custom()
                    .setExpectContinueEnabled(req.hasBody() && Boolean.TRUE.equals(job.flag("expect_100")));
            if (timeout != null) {
                config.setConnectionRequestTimeout(timeout).setResponseTimeout(timeout);
            }
            if (req.followRedirects != null) { // else RequestConfig's own setting (follow) stays
                config.setRedirectsEnabled(req.followRedirects);
            }
            configs.put(req.r, config.build());
        }
    }

    @Override
    public Response request(Request req) throws Exception {
        HttpUriRequestBase r = new HttpUriRequestBase(req.method, req.uri());
        r.setConfig(configs.get(req.r));
        if (!job.keepAlive) {
            r.setHeader("Connection", "close");
        }
        req.headers.forEach(r::setHeader);
        if (req.multipart()) {
            MultipartEntityBuilder m = MultipartEntityBuilder.create();
            req.form.forEach(m::addTextBody);
            r.setEntity(m.build());
        } else if (req.form != null) {
            List<NameValuePair> fields = new ArrayList<>();
            req.form.forEach((k, v) -> fields.add(new BasicNameValuePair(k, v)));
            r.setEntity(new UrlEncodedFormEntity(fields, StandardCharsets.UTF_8));
        } else if (req.bodyFile != null) {
            r.setEntity(new FileEntity(new File(req.bodyFile), ContentType.parse(req.uploadContentType())));
        }
        return client.execute(r, resp -> {
            HttpEntity entity = resp.getEntity();
            String http = String.valueOf(resp.getVersion());
            if (req.toFile()) {
                try (FileSink sink = new FileSink(req.sinkPath, job.verify);
                     InputStream in = entity == null ? InputStream.nullInputStream() : entity.getContent()) {
                    return sink.drain(in, resp.getCode(), http);
                }
            }
            byte[] body = entity == null ? new byte[0] : EntityUtils.toByteArray(entity);
            return Response.of(resp.getCode(), http, body, job.verify);
        });
    }

    @Override
    public void close() {
        if (client != null) {
            client.close(CloseMode.GRACEFUL); // and its connection manager
            client = null;
        }
    }
}
