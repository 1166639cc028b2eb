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
    // work after `done`, asked for by a test of the profile's window (PLANTED_AFTER_DONE_MS): none
    // by default, so that the driver differs from java-httpclient by the planted method alone
    private static final long AFTER_DONE_MS = Long.parseLong(System.getenv().getOrDefault("PLANTED_AFTER_DONE_MS", "0"));
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

    /**
     * Busy work of its own name after a job's `done`, its report written: a profiler whose window
     * closes at `done` has no sample of it. It starts after a pause that leaves the lab time to
     * read `done` and close the window on a busy host (what it takes for that is no part of what
     * the test checks: that the window does not stay open while the samplers write their data).
     */
    static void workAfterDone() throws InterruptedException {
        Thread.sleep(150);
        long end = System.nanoTime() + AFTER_DONE_MS * 1_000_000L;
        long x = sink;
        while (System.nanoTime() < end) {
            // calls, which JFR can walk the stack from: it drops a sample taken inside a compiled
            // counted loop such as plantedSlowPath's (no debug information there; perf names that)
            for (int i = 0; i < 1000; i++) {
                x += Long.toString(x).hashCode();
            }
        }
        sink = x;
    }

    @Override
    public void close() throws Exception {
        super.close();
        if (AFTER_DONE_MS > 0) {
            workAfterDone();
        }
    }

    public static void main(String[] args) {
        run(new PlantedDriver(), args);
    }
}
