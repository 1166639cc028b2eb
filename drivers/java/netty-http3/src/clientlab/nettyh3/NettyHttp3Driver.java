package clientlab.nettyh3;

import clientlab.lab.AsyncDriver;
import clientlab.lab.FileSink;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import clientlab.lab.Tls;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpContentDecompressor;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.multipart.DefaultHttpDataFactory;
import io.netty.handler.codec.http.multipart.HttpDataFactory;
import io.netty.handler.codec.http.multipart.HttpPostRequestEncoder;
import io.netty.handler.codec.http3.Http3;
import io.netty.handler.codec.http3.Http3ClientConnectionHandler;
import io.netty.handler.codec.http3.Http3FrameToHttpObjectCodec;
import io.netty.handler.codec.http3.Http3RequestStreamInitializer;
import io.netty.handler.codec.quic.QuicChannel;
import io.netty.handler.codec.quic.QuicSslContext;
import io.netty.handler.codec.quic.QuicSslContextBuilder;
import io.netty.handler.codec.quic.QuicStreamChannel;
import io.netty.handler.stream.ChunkedNioFile;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.Version;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.TrustManagerFactory;

/**
 * Netty's HTTP/3 codec as its example client uses it: a NioDatagramChannel carrying the QUIC
 * client codec (Http3.newQuicClientCodecBuilder, the example's flow-control windows), a
 * QuicChannel with an Http3ClientConnectionHandler, and a request stream per request
 * (Http3.newRequestStream with an Http3RequestStreamInitializer). The stream's pipeline speaks
 * Netty's HTTP objects through Http3FrameToHttpObjectCodec, so bodies go the way Netty's HTTP
 * users send and read them: HttpPostRequestEncoder (forms), HttpChunkedInput over ChunkedNioFile
 * (uploads), HttpContentDecompressor (gzip), HttpObjectAggregator (bodies in memory) or each
 * HttpContent written out (file). One QUIC connection per origin for the job, opened by its first
 * request and reused; parallel requests are concurrent streams on it. TLS: BoringSSL (inside the
 * native codec) with the JDK's trust manager over the job's CA, host names checked (Netty's
 * default "HTTPS" endpoint identification, so IP addresses match IP SANs). HTTP/3 alone.
 */
public final class NettyHttp3Driver extends AsyncDriver {
    /** flow-control windows: the ones Netty's Http3ClientExample sets (quiche's default, 0, stalls) */
    private static final long MAX_DATA = 10_000_000;
    private static final long MAX_STREAM_DATA = 1_000_000;

    private Job job;
    private QuicSslContext tls;
    private EventLoopGroup group;
    private HttpDataFactory forms;
    /** one QUIC connection per origin (host:port), opened by its first request */
    private final Map<String, CompletableFuture<QuicChannel>> connections = new ConcurrentHashMap<>();

    /** max_host_connections: any limit is kept, as one connection per origin is all it opens. */
    public NettyHttp3Driver() {
        super("max_host_connections", ANY);
    }

    public static void main(String[] args) {
        Lab.main(new NettyHttp3Driver(), args);
    }

    @Override
    protected void versions(Map<String, String> v) {
        Version codec = Version.identify().get("netty-codec-http3");
        v.put("netty", codec == null ? Lab.versionOf(Http3.class) : codec.artifactVersion());
        v.put("tls", "BoringSSL in netty-codec-native-quic (JDK trust manager)");
    }

    @Override
    public String refuse(Job job) {
        if (!job.http3()) {
            return "this driver speaks HTTP/3 alone";
        }
        for (Request req : job.requests) {
            if (!req.https()) {
                return "HTTP/3 runs over TLS alone: " + req.url + " is not https";
            }
        }
        return null;
    }

    @Override
    public void open(Job job) throws Exception {
        this.job = job;
        TrustManagerFactory trust = null; // no CA named: the JDK's own trust store
        if (job.tlsCa != null) {
            trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(Tls.trustStore(job.tlsCa));
        }
        tls = QuicSslContextBuilder.forClient()
                .trustManager(trust)
                .applicationProtocols(Http3.supportedApplicationProtocols())
                .build();
        group = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory()); // threads start with the first channel
        forms = new DefaultHttpDataFactory(DefaultHttpDataFactory.MINSIZE); // as Netty's HttpUploadClient
    }

    /** The origin's QUIC connection: the open one, or a new one (first request, or the last one closed). */
    private CompletableFuture<QuicChannel> connection(URI uri) {
        int port = uri.getPort() == -1 ? 443 : uri.getPort();
        return connections.compute(uri.getHost() + ":" + port, (origin, known) ->
                known != null && (!known.isDone() || !known.isCompletedExceptionally() && known.join().isActive())
                        ? known : connect(uri.getHost(), port));
    }

    private CompletableFuture<QuicChannel> connect(String host, int port) {
        CompletableFuture<QuicChannel> connected = new CompletableFuture<>();
        ChannelFuture bound = new Bootstrap().group(group).channel(NioDatagramChannel.class)
                .handler(Http3.newQuicClientCodecBuilder()
                        // the engine knows the peer: its name is checked against the certificate
                        .sslEngineProvider(q -> tls.newEngine(q.alloc(), host, port))
                        .initialMaxData(MAX_DATA)
                        .initialMaxStreamDataBidirectionalLocal(MAX_STREAM_DATA)
                        .build())
                .bind(0);
        bound.addListener(b -> {
            Channel udp = bound.channel();
            if (!b.isSuccess()) {
                connected.completeExceptionally(b.cause());
                return;
            }
            QuicChannel.newBootstrap(udp)
                    .handler(new Http3ClientConnectionHandler())
                    .remoteAddress(new InetSocketAddress(host, port))
                    .connect()
                    .addListener((Future<QuicChannel> f) -> {
                        if (f.isSuccess()) {
                            f.getNow().closeFuture().addListener(closed -> udp.close());
                            connected.complete(f.getNow());
                        } else {
                            udp.close();
                            connected.completeExceptionally(f.cause());
                        }
                    });
        });
        return connected;
    }

    @Override
    public CompletionStage<Response> send(Request req) {
        CompletableFuture<Response> done = new CompletableFuture<>();
        URI uri = req.uri();
        connection(uri).whenComplete((quic, failed) -> {
            if (failed != null) {
                done.completeExceptionally(failed);
                return;
            }
            Http3.newRequestStream(quic, new Http3RequestStreamInitializer() {
                @Override
                protected void initRequestStream(QuicStreamChannel ch) {
                    ChannelPipeline p = ch.pipeline();
                    p.addLast(new Http3FrameToHttpObjectCodec(false));
                    if (req.hasBody()) {
                        p.addLast(new ChunkedWriteHandler()); // file bodies, chunked multipart forms
                    }
                    if (job.acceptGzip) {
                        p.addLast(new HttpContentDecompressor(0));
                    }
                    if (req.toFile()) {
                        p.addLast(new ToFile(req, done));
                    } else {
                        p.addLast(new HttpObjectAggregator(Integer.MAX_VALUE), new InMemory(done));
                    }
                }
            }).addListener((Future<QuicStreamChannel> f) -> {
                if (!f.isSuccess()) {
                    done.completeExceptionally(f.cause());
                    return;
                }
                QuicStreamChannel stream = f.getNow();
                done.whenComplete((resp, exc) -> stream.close()); // also on a time-out
                try {
                    write(stream, req, uri, done);
                } catch (Exception e) {
                    done.completeExceptionally(e);
                }
            });
        });
        return job.timeout() == null ? done : done.orTimeout(job.timeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** The request on its stream: head and body as Netty's HTTP objects. */
    private void write(QuicStreamChannel stream, Request req, URI uri, CompletableFuture<Response> done)
            throws Exception {
        String target = (uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath())
                + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
        HttpMethod method = HttpMethod.valueOf(req.method);
        HttpRequest head = req.hasBody()
                ? new DefaultHttpRequest(HttpVersion.HTTP_1_1, method, target)
                : new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, target, Unpooled.EMPTY_BUFFER);
        head.headers().set(HttpHeaderNames.HOST, uri.getRawAuthority()); // :authority
        if (job.acceptGzip) {
            head.headers().set(HttpHeaderNames.ACCEPT_ENCODING, HttpHeaderValues.GZIP);
        }
        req.headers.forEach(head.headers()::set);
        if (req.form != null) {
            HttpPostRequestEncoder form = new HttpPostRequestEncoder(forms, head, req.multipart());
            for (Map.Entry<String, String> field : req.form.entrySet()) {
                form.addBodyAttribute(field.getKey(), field.getValue());
            }
            done.whenComplete((resp, exc) -> form.cleanFiles());
            stream.write(form.finalizeRequest());
            if (form.isChunked()) {
                stream.write(form);
            }
            stream.flush();
        } else if (req.bodyFile != null) {
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, req.uploadContentType());
            HttpUtil.setContentLength(head, Files.size(req.bodyPath()));
            stream.write(head);
            stream.writeAndFlush(new HttpChunkedInput(new ChunkedNioFile(req.bodyPath().toFile())));
        } else {
            stream.writeAndFlush(head);
        }
    }

    /** The HTTP version the response came in: the connection's ALPN protocol ("h3"). */
    private static String version(ChannelHandlerContext ctx) {
        return ((QuicChannel) ctx.channel().parent()).sslEngine().getApplicationProtocol();
    }

    /** Fails the request on an error or a stream that ends before its response. */
    private abstract static class Outcome<T> extends SimpleChannelInboundHandler<T> {
        final CompletableFuture<Response> done;

        Outcome(Class<T> type, CompletableFuture<Response> done) {
            super(type);
            this.done = done;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.completeExceptionally(new IOException("the stream closed before its response ended"));
        }
    }

    /** The whole response from HttpObjectAggregator, counted (and hashed) where it lies. */
    private final class InMemory extends Outcome<FullHttpResponse> {
        InMemory(CompletableFuture<Response> done) {
            super(FullHttpResponse.class, done);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse resp) {
            done.complete(Response.of(resp.status().code(), version(ctx), resp.content().nioBuffers(), job.verify));
        }
    }

    /** Each HttpContent of the response written to the sink file as it comes. */
    private final class ToFile extends Outcome<HttpObject> {
        private final Request req;
        private FileSink sink;
        private int status;

        ToFile(Request req, CompletableFuture<Response> done) {
            super(HttpObject.class, done);
            this.req = req;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) throws IOException {
            if (msg instanceof HttpResponse) {
                status = ((HttpResponse) msg).status().code();
                sink = new FileSink(req.sinkPath, job.verify);
            }
            if (msg instanceof HttpContent && sink != null) {
                for (ByteBuffer chunk : ((HttpContent) msg).content().nioBuffers()) {
                    sink.write(chunk);
                }
            }
            if (msg instanceof LastHttpContent && sink != null) {
                done.complete(sink.response(status, version(ctx)));
            }
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) throws IOException {
            if (sink != null) {
                sink.close();
            }
        }
    }

    @Override
    public Response request(Request req) throws Exception {
        return send(req).toCompletableFuture().get();
    }

    @Override
    public void close() throws Exception {
        for (CompletableFuture<QuicChannel> c : connections.values()) {
            if (c.isDone() && !c.isCompletedExceptionally()) {
                c.join().close().awaitUninterruptibly(); // its datagram channel closes with it
            }
        }
        connections.clear();
        if (group != null) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
            group = null;
        }
        if (forms != null) {
            forms.cleanAllHttpData();
            forms = null;
        }
    }
}
