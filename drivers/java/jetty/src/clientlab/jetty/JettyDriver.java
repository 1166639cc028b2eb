package clientlab.jetty;

import clientlab.lab.AsyncDriver;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import clientlab.lab.Tls;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.client.CompletableResponseListener;
import org.eclipse.jetty.client.FormRequestContent;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.HttpClientTransport;
import org.eclipse.jetty.client.MultiPartRequestContent;
import org.eclipse.jetty.client.PathRequestContent;
import org.eclipse.jetty.client.PathResponseListener;
import org.eclipse.jetty.client.StringRequestContent;
import org.eclipse.jetty.client.transport.HttpClientTransportOverHTTP;
import org.eclipse.jetty.http.HttpCookieStore;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.MultiPart;
import org.eclipse.jetty.http2.client.HTTP2Client;
import org.eclipse.jetty.http2.client.transport.HttpClientTransportOverHTTP2;
import org.eclipse.jetty.io.ClientConnector;
import org.eclipse.jetty.util.Fields;
import org.eclipse.jetty.util.Jetty;
import org.eclipse.jetty.util.ssl.SslContextFactory;

/**
 * Jetty 12 HttpClient: one started client per job; HTTP/1.1 over HttpClientTransportOverHTTP,
 * HTTP/2 over HttpClientTransportOverHTTP2 only (ALPN offers h2 alone; cleartext is prior
 * knowledge). Every request is sent asynchronously: sequential jobs wait for each, parallel
 * ones keep up to `concurrency` in flight. Bodies: CompletableResponseListener (memory),
 * PathResponseListener (file).
 */
public final class JettyDriver extends AsyncDriver {
    private Job job;
    private HttpClient client;

    /**
     * Options: tcp_nodelay (ClientConnector.setTCPNoDelay), max_host_connections
     * (setMaxConnectionsPerDestination), expect_100 (Jetty sends the body after the 100 when the
     * request says Expect: 100-continue, and never says it by itself).
     */
    public JettyDriver() {
        super("tcp_nodelay", ANY, "max_host_connections", ANY, "expect_100", ANY,
                "accept_encoding", LIBRARY_ENCODING);
    }

    public static void main(String[] args) {
        Lab.main(new JettyDriver(), args);
    }

    @Override
    protected void versions(Map<String, String> v) {
        v.put("jetty", Jetty.VERSION);
    }

    @Override
    public void open(Job job) throws Exception {
        this.job = job;
        ClientConnector connector = new ClientConnector();
        if (job.timeout() != null) {
            connector.setConnectTimeout(job.timeout());
        }
        Boolean nodelay = job.flag("tcp_nodelay");
        if (nodelay != null) {
            connector.setTCPNoDelay(nodelay);
        }
        if (job.tlsCa != null) {
            SslContextFactory.Client tls = new SslContextFactory.Client(); // verifies host names
            tls.setTrustStore(Tls.trustStore(job.tlsCa));
            connector.setSslContextFactory(tls);
        }
        HttpClientTransport transport = job.http2()
                ? new HttpClientTransportOverHTTP2(new HTTP2Client(connector))
                : new HttpClientTransportOverHTTP(connector);
        HttpClient c = new HttpClient(transport);
        Integer perHost = job.number("max_host_connections");
        if (perHost != null) {
            c.setMaxConnectionsPerDestination(perHost);
        }
        c.setMaxRequestsQueuedPerDestination(Math.max(c.getMaxRequestsQueuedPerDestination(), job.concurrency));
        c.setHttpCookieStore(job.cookies ? new HttpCookieStore.Default() : new HttpCookieStore.Empty());
        if (!job.acceptGzip && !job.libraryEncoding()) {
            c.getContentDecoderFactories().clear(); // else it asks for gzip and decodes it, as it ships
        }
        c.start(); // threads and buffers; connections open with the first request
        client = c;
    }

    private org.eclipse.jetty.client.Request build(Request req) throws Exception {
        org.eclipse.jetty.client.Request r = client.newRequest(req.uri()).method(req.method);
        if (job.timeout() != null) {
            r.timeout(job.timeout().toMillis(), TimeUnit.MILLISECONDS);
        }
        if (req.followRedirects != null) { // else the client's own setting (follow) stays
            r.followRedirects(req.followRedirects);
        }
        boolean expect = req.hasBody() && Boolean.TRUE.equals(job.flag("expect_100"));
        r.headers(h -> {
            if (!job.keepAlive) {
                h.put(HttpHeader.CONNECTION, "close");
            }
            if (expect) {
                h.put(HttpHeader.EXPECT, "100-continue");
            }
            req.headers.forEach(h::put);
        });
        if (req.multipart()) {
            MultiPartRequestContent m = new MultiPartRequestContent();
            req.form.forEach((k, v) -> m.addPart(
                    new MultiPart.ContentSourcePart(k, null, HttpFields.EMPTY, new StringRequestContent(v))));
            m.close();
            r.body(m);
        } else if (req.form != null) {
            Fields fields = new Fields();
            req.form.forEach(fields::add);
            r.body(new FormRequestContent(fields));
        } else if (req.bodyFile != null) {
            r.body(new PathRequestContent(req.uploadContentType(), req.bodyPath()));
        }
        return r;
    }

    @Override
    public CompletionStage<Response> send(Request req) throws Exception {
        org.eclipse.jetty.client.Request r = build(req);
        if (req.toFile()) {
            return PathResponseListener.write(r, java.nio.file.Path.of(req.sinkPath), true).thenApply(p -> {
                try {
                    return Response.ofFile(p.response().getStatus(), p.response().getVersion(), p.path(), job.verify);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }
        // the whole body in memory (the listener's default cap, 2 MiB, would refuse larger ones)
        return new CompletableResponseListener(r, Integer.MAX_VALUE).send().thenApply(cr ->
                Response.of(cr.getStatus(), cr.getVersion(), cr.getContent(), job.verify));
    }

    @Override
    public Response request(Request req) throws Exception {
        return send(req).toCompletableFuture().get();
    }

    @Override
    public void close() throws Exception {
        if (client != null) {
            client.stop(); // closes every connection
            client = null;
        }
    }
}
