// java-okhttp's plain loop (docs/driver-protocol.md §9): OkHttp as its README shows it.
// Usage: Plain URL COUNT keep-alive|close WARMUP_S

import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

final class Plain {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int count = Integer.parseInt(args[1]);
        boolean close = args[2].equals("close");
        double warmupS = Double.parseDouble(args[3]);
        OkHttpClient client = new OkHttpClient();
        Request.Builder builder = new Request.Builder().url(url);
        if (close) {
            builder.header("Connection", "close");
        }
        Request request = builder.build();
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
            System.err.println("java-okhttp plain loop: " + e);
            System.exit(1);
        }
        System.exit(0);
    }

    static int get(OkHttpClient client, Request request) throws Exception {
        try (Response response = client.newCall(request).execute()) {
            byte[] body = response.body().bytes();
            if (response.code() != 200) {
                throw new IllegalStateException(request.url() + " answered " + response.code());
            }
            return body.length;
        }
    }
}
