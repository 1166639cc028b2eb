// java-netty-http3's plain loop (docs/driver-protocol.md §9): Netty's HTTP/3 codec as its
// Http3ClientExample uses it: a QUIC client codec on a datagram channel, one QuicChannel, a
// request stream per GET whose Http3RequestStreamInboundHandler collects the answer.
// Usage: Plain URL COUNT keep-alive WARMUP_S CA (an https URL on the server's HTTP/3 port)

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.handler.codec.http3.DefaultHttp3HeadersFrame;
import io.netty.handler.codec.http3.Http3;
import io.netty.handler.codec.http3.Http3ClientConnectionHandler;
import io.netty.handler.codec.http3.Http3DataFrame;
import io.netty.handler.codec.http3.Http3HeadersFrame;
import io.netty.handler.codec.http3.Http3RequestStreamInboundHandler;
import io.netty.handler.codec.quic.QuicChannel;
import io.netty.handler.codec.quic.QuicSslContext;
import io.netty.handler.codec.quic.QuicSslContextBuilder;
import io.netty.handler.codec.quic.QuicStreamChannel;
import io.netty.util.ReferenceCountUtil;
import java.io.File;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.concurrent.CompletableFuture;

final class Plain {
    public static void main(String[] args) throws Exception {
        URI url = URI.create(args[0]);
        int count = Integer.parseInt(args[1]);
        double warmupS = Double.parseDouble(args[3]);
        if (!args[2].equals("keep-alive")) {
            // as the driver: a new QUIC connection per request is no setting of the codec
            System.err.println("java-netty-http3 plain loop: mode " + args[2] + " is not supported (keep-alive only)");
            System.exit(1);
        }
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        QuicSslContext context = QuicSslContextBuilder.forClient()
                .trustManager(new File(args[4]))
                .applicationProtocols(Http3.supportedApplicationProtocols()).build();
        // the engine is told the peer, so that its name is checked against the certificate (with
        // the example's sslContext(context) the engine knows no host, and the JDK trust manager's
        // HTTPS identification fails every handshake); the example's flow-control windows: the
        // codec's defaults (0) let no answer arrive
        Channel channel = new Bootstrap().group(group).channel(NioDatagramChannel.class)
                .handler(Http3.newQuicClientCodecBuilder()
                        .sslEngineProvider(q -> context.newEngine(q.alloc(), url.getHost(), url.getPort()))
                        .initialMaxData(10_000_000)
                        .initialMaxStreamDataBidirectionalLocal(1_000_000)
                        .build())
                .bind(0).sync().channel();
        try {
            QuicChannel quic = QuicChannel.newBootstrap(channel)
                    .handler(new Http3ClientConnectionHandler())
                    .remoteAddress(new InetSocketAddress(url.getHost(), url.getPort()))
                    .connect().get();
            for (long until = System.nanoTime() + (long) (warmupS * 1e9); System.nanoTime() < until; ) {
                get(quic, url);
            }
            long bytes = 0;
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                bytes += get(quic, url);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("{\"requests\": " + count + ", \"bytes\": " + bytes + ", \"seconds\": " + seconds + "}");
        } catch (Exception e) {
            System.err.println("java-netty-http3 plain loop: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    /** One GET on a new request stream: the body's length once the stream's input has ended. */
    static int get(QuicChannel quic, URI url) throws Exception {
        CompletableFuture<Integer> done = new CompletableFuture<>();
        QuicStreamChannel stream = Http3.newRequestStream(quic, new Http3RequestStreamInboundHandler() {
            private CharSequence status;
            private CompositeByteBuf body;

            @Override
            protected void channelRead(ChannelHandlerContext ctx, Http3HeadersFrame frame) {
                status = frame.headers().status();
                body = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
            }

            @Override
            protected void channelRead(ChannelHandlerContext ctx, Http3DataFrame frame) {
                body.addComponent(true, frame.content().retain()); // the body kept whole in memory
                ReferenceCountUtil.release(frame);
            }

            @Override
            protected void channelInputClosed(ChannelHandlerContext ctx) {
                if (status == null || !"200".contentEquals(status)) {
                    done.completeExceptionally(new IllegalStateException(url + " answered " + status));
                } else {
                    done.complete(body.readableBytes());
                }
                if (body != null) {
                    body.release();
                }
                ctx.close();
            }

            @Override
            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                done.completeExceptionally(cause);
                ctx.close();
            }
        }).sync().getNow();
        Http3HeadersFrame frame = new DefaultHttp3HeadersFrame();
        frame.headers().method("GET").path(url.getRawPath()).authority(url.getRawAuthority()).scheme("https");
        stream.writeAndFlush(frame).addListener(QuicStreamChannel.SHUTDOWN_OUTPUT).sync();
        return done.get();
    }
}
