package clientlab.lab;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A driver: one client per job. A subclass says which job options it honours and supplies
 * {@link #open} (build the client from the job), {@link #request} (do one request) and
 * {@link #close}; {@link Lab#main} does the rest. Requests run one after another, or, for
 * jobs with {@code concurrency} > 1 (only given when the manifest claims {@code parallel}),
 * on {@code concurrency} threads sharing the client, each taking the next request in turn.
 * Clients with an asynchronous API extend {@link AsyncDriver} instead.
 */
public abstract class Driver {
    /** In the constructor's option pairs: every valid value of the option is honoured. */
    protected static final List<?> ANY = null;
    /** The values of accept_encoding a driver honours: "library", the library's own Accept-Encoding. */
    public static final List<String> LIBRARY_ENCODING = List.of("library");

    private final Map<String, List<?>> options = new HashMap<>();
    private ExecutorService workers;

    /**
     * A driver honouring the job options named in {@code honoured}, as (name, values) pairs:
     * the values it honours exactly, or {@link #ANY} for every valid value, e.g.
     * {@code super("tcp_nodelay", List.of(true), "expect_100", ANY)}. Any other non-null
     * option is answered unsupported.
     */
    protected Driver(Object... honoured) {
        for (int i = 0; i < honoured.length; i += 2) {
            options.put((String) honoured[i], (List<?>) honoured[i + 1]);
        }
    }

    final Map<String, List<?>> options() {
        return options;
    }

    /** Add the client library's versions (and any library under it) to the hello message's. */
    protected void versions(Map<String, String> versions) {
    }

    /**
     * Whether the client can open a new connection per request over HTTP/2. The Java clients
     * do it with Connection: close, which HTTP/2 does not have: jobs asking for it are refused.
     */
    protected boolean http2WithoutKeepAlive() {
        return false;
    }

    /** A reason this driver cannot do {@code job} exactly, or null. */
    public String refuse(Job job) {
        return null;
    }

    /** Build and configure the client. No connection may be opened here. */
    public abstract void open(Job job) throws Exception;

    /** Do one request; throw on failure without a response (it becomes a report error). */
    public abstract Response request(Request req) throws Exception;

    /** Close the client and every connection it holds (after the report). */
    public void close() throws Exception {
    }

    /** Whether parallel jobs run on worker threads (started before ready, outside the timing). */
    protected boolean threaded() {
        return true;
    }

    /**
     * The timed phase: every request of the job, each one's outcome into {@code report} (a
     * trial's {@link Report}, or the bare loop's {@link Tally}: one loop for both).
     */
    protected void runAll(Job job, List<Request> work, Outcomes report) throws Exception {
        if (job.concurrency == 1) {
            for (Request req : work) {
                once(req, report);
            }
            return;
        }
        runParallel(job, work, report);
    }

    /** Up to {@code concurrency} requests at once: one blocking request per worker thread. */
    protected void runParallel(Job job, List<Request> work, Outcomes report) throws Exception {
        AtomicInteger next = new AtomicInteger();
        Callable<Void> worker = () -> {
            for (int i = next.getAndIncrement(); i < work.size(); i = next.getAndIncrement()) {
                once(work.get(i), report);
            }
            return null;
        };
        List<Future<Void>> running = new ArrayList<>();
        for (int t = 0; t < job.concurrency; t++) {
            running.add(workers.submit(worker));
        }
        for (Future<Void> f : running) {
            f.get();
        }
    }

    /**
     * One request into the report; a failure is reported, never fatal. An answer too large for
     * the heap (a decompression bomb held whole) throws OutOfMemoryError from the library's call,
     * as it would in the user's program: it is that request's failure, and what the request held
     * is garbage once the error has left the call.
     */
    protected final void once(Request req, Outcomes report) {
        Response resp;
        try {
            resp = request(req);
        } catch (Exception | OutOfMemoryError exc) {
            report.fail(req, exc);
            return;
        }
        report.add(req, resp);
    }

    final void begin(Job job) throws Exception {
        open(job);
        if (job.concurrency > 1 && threaded()) {
            ThreadPoolExecutor pool = new ThreadPoolExecutor(job.concurrency, job.concurrency, 0,
                    TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                        Thread t = new Thread(r, "lab-worker");
                        t.setDaemon(true);
                        return t;
                    });
            pool.prestartAllCoreThreads(); // before ready: starting threads is not the timed work
            workers = pool;
        }
    }

    final void end() throws Exception {
        try {
            close();
        } finally {
            if (workers != null) {
                workers.shutdownNow();
                workers = null;
            }
        }
    }
}
