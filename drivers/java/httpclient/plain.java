// java-httpclient's plain loop (docs/driver-protocol.md §9): java.net.http as the JDK's docs show it.
// Usage: Plain URL COUNT keep-alive|close WARMUP_S

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;

final class Plain {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int count = Integer.parseInt(args[1]);
        boolean close = args[2].equals("close");
        double warmupS = Double.parseDouble(args[3]);
        if (close) {
            // Connection is a restricted header: the JDK's documented switch lets a request set it
            System.setProperty("jdk.httpclient.allowRestrictedHeaders", "connection");
        }
        // HTTP/1.1 named, as the lab's job names it: the default (HTTP_2) would ask an http URL to upgrade
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(url));
        if (close) {
            builder.header("Connection", "close");
        }
        HttpRequest request = builder.build();
        try {
            for (long until = System.nanoTime() + (long) (warmupS * 1e9); System.nanoTime() < until; ) {
                get(client, request);
            }
            long bytes = 0;
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                bytes += get(client, request);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("{\"requests\": " + count + ", \"bytes\": " + bytes + ", \"seconds\": " + seconds + "}");
        } catch (Exception e) {
            System.err.println("java-httpclient plain loop: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    static int get(HttpClient client, HttpRequest request) throws Exception {
        HttpResponse<byte[]> response = client.send(request, BodyHandlers.ofByteArray());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(request.uri() + " answered " + response.statusCode());
        }
        return response.body().length;
    }
}
