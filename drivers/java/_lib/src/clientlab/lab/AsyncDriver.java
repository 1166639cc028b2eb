package clientlab.lab;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;

/**
 * A driver for a client with an asynchronous API: {@link #request} is its blocking call, used
 * for sequential jobs; {@link #send} starts one request and completes later, and parallel jobs
 * keep up to {@link #inFlight} of them started at once, from the calling thread.
 */
public abstract class AsyncDriver extends Driver {
    /** See {@link Driver#Driver(Object...)}. */
    protected AsyncDriver(Object... honoured) {
        super(honoured);
    }

    /** Start one request; the stage completes with its response, or fails without one. */
    public abstract CompletionStage<Response> send(Request req) throws Exception;

    /**
     * How many requests are started and not yet complete at once: the job's concurrency, or
     * {@code Integer.MAX_VALUE} when the client's own dispatcher holds them to it.
     */
    protected int inFlight(Job job) {
        return job.concurrency;
    }

    @Override
    protected final boolean threaded() {
        return false;
    }

    @Override
    protected void runParallel(Job job, List<Request> work, Outcomes report) throws Exception {
        Semaphore slots = new Semaphore(inFlight(job));
        CountDownLatch finished = new CountDownLatch(work.size());
        for (Request req : work) {
            slots.acquire();
            CompletionStage<Response> stage;
            try {
                stage = send(req);
            } catch (Exception exc) {
                report.fail(req, exc);
                slots.release();
                finished.countDown();
                continue;
            }
            stage.whenComplete((resp, exc) -> {
                if (exc != null) {
                    report.fail(req, exc);
                } else {
                    report.add(req, resp);
                }
                slots.release();
                finished.countDown();
            });
        }
        finished.await();
    }
}
