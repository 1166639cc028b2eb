// java-jetty's plain loop (docs/driver-protocol.md §9): Jetty's HttpClient as its documentation
// shows it (a started HttpClient, GET(url) or newRequest(url).send(), a ContentResponse).
// Usage: Plain URL COUNT keep-alive|close WARMUP_S

import org.eclipse.jetty.client.ContentResponse;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.http.HttpHeader;

final class Plain {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int count = Integer.parseInt(args[1]);
        boolean close = args[2].equals("close");
        double warmupS = Double.parseDouble(args[3]);
        HttpClient client = new HttpClient();
        client.start();
        try {
            for (long until = System.nanoTime() + (long) (warmupS * 1e9); System.nanoTime() < until; ) {
                get(client, url, close);
            }
            long bytes = 0;
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                bytes += get(client, url, close);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("{\"requests\": " + count + ", \"bytes\": " + bytes + ", \"seconds\": " + seconds + "}");
        } catch (Exception e) {
            System.err.println("java-jetty plain loop: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    static int get(HttpClient client, String url, boolean close) throws Exception {
        ContentResponse response = close
                ? client.newRequest(url).headers(h -> h.put(HttpHeader.CONNECTION, "close")).send()
                : client.GET(url);
        byte[] body = response.getContent();
        if (response.getStatus() != 200) {
            throw new IllegalStateException(url + " answered " + response.getStatus());
        }
        return body.length;
    }
}
