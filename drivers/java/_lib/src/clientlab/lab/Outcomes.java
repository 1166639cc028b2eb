package clientlab.lab;

/**
 * Where a run records each request's outcome: the {@link Report} of a timed trial, or the
 * bare loop's {@link Tally}. Both are filled by the same loop ({@link Driver#runAll}), so the
 * calibration times exactly the code a trial runs. Implementations are thread-safe: parallel
 * jobs record from worker threads and completion callbacks.
 */
public interface Outcomes {
    /** Record one response. */
    void add(Request req, Response resp);

    /** Record one request that got no response. */
    void fail(Request req, Throwable exc);
}
