package clientlab.planted;

import clientlab.httpclient.JdkHttpClientDriver;
import clientlab.lab.Request;
import clientlab.lab.Response;

/**
 * Test driver java-httpclient-planted: java-httpclient's own driver with a deliberate busy method
 * on every request, which the CPU profile's differential must find and name (plantedSlowPath).
 */
public final class PlantedDriver extends JdkHttpClientDriver {
    private static final int LOOPS = Integer.parseInt(System.getenv().getOrDefault("PLANTED_LOOPS", "1500000"));
    private static volatile long sink;

    /**
     * A plain loop the JIT cannot drop (its result is kept): every sample in it is this method's own.
     * It costs several times java.net.http's own work a request, so that the cell stays past the
     * CPU-gap rule's threshold when the reference cell's JVM runs slow on a busy host.
     */
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
        return super.request(req);
    }

    public static void main(String[] args) {
        run(new PlantedDriver(), args);
    }
}
