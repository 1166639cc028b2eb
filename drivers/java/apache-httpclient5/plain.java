// java-apache-httpclient5's plain loop (docs/driver-protocol.md §9): HttpClient 5's classic API as
// its quick start shows it (HttpClients.createDefault(), execute() with a response handler).
// Usage: Plain URL COUNT keep-alive|close WARMUP_S

import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;

final class Plain {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int count = Integer.parseInt(args[1]);
        boolean close = args[2].equals("close");
        double warmupS = Double.parseDouble(args[3]);
        CloseableHttpClient client = HttpClients.createDefault();
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
            System.err.println("java-apache-httpclient5 plain loop: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    static int get(CloseableHttpClient client, String url, boolean close) throws Exception {
        HttpGet request = new HttpGet(url);
        if (close) {
            request.setHeader("Connection", "close");
        }
        return client.execute(request, response -> {
            byte[] body = EntityUtils.toByteArray(response.getEntity());
            if (response.getCode() != 200) {
                throw new IllegalStateException(url + " answered " + response.getCode());
            }
            return body.length;
        });
    }
}
