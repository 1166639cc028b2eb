package clientlab.planted;

import clientlab.lab.Driver;
import clientlab.lab.Job;
import clientlab.lab.Lab;
import clientlab.lab.Request;
import clientlab.lab.Response;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Test driver java-httpclient-planted: java.net.http's HttpClient, one request after another, with a
 * deliberate busy method on every request, which the CPU profile's differential must find and name
 * (plantedSlowPath).
 */
public final class PlantedDriver extends Driver {
    private static final int LOOPS = Integer.parseInt(System.getenv().getOrDefault("PLANTED_LOOPS", "500000"));
    private static volatile long sink;
    private HttpClient client;
    private Job job;

    @Override
    public String refuse(Job job) {
        return "1.1".equals(job.http) ? null : "this test driver speaks HTTP/1.1 only";
    }

    @Override
    public void open(Job job) {
        this.job = job;
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    }

    /** A plain loop the JIT cannot drop (its result is kept): every sample in it is this method's own. */
    static void plantedSlowPath() {
        long x = sink;
        for (int i = 0; i < LOOPS; i++) {
            x = (x ^ (i * 7L)) * 31 + 1;
        }
        sink = x;
    }

    @Override
    public Response request(Request req) throws Exception {
        plantedSlowPath();
        HttpResponse<byte[]> res = client.send(HttpRequest.newBuilder(req.uri()).GET().build(),
                HttpResponse.BodyHandlers.ofByteArray());
        return Response.of(res.statusCode(), res.version() == HttpClient.Version.HTTP_2 ? "2" : "1.1", res.body(), job.verify);
    }

    public static void main(String[] args) {
        Lab.main(new PlantedDriver(), args);
    }
}
