package clientlab.lab;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Counts responses and failures and keeps nothing else: the bare loop's stand-in for a
 * {@link Report}, so that the calibration pays for no report a plain program would not build.
 */
final class Tally implements Outcomes {
    private final String wanted;
    private final AtomicInteger responses = new AtomicInteger();
    private final AtomicInteger errors = new AtomicInteger();
    private final AtomicReference<String> firstError = new AtomicReference<>();

    Tally(Job job) {
        this.wanted = job.wanted();
    }

    /** A response counts unless the report would call it an error (HTTP/2 or 3 asked, not used). */
    @Override
    public void add(Request req, Response resp) {
        String wrong = Report.versionMismatch(wanted, resp.http);
        if (wrong != null) {
            failed(wrong);
            return;
        }
        responses.incrementAndGet();
    }

    @Override
    public void fail(Request req, Throwable exc) {
        failed(firstError.get() == null ? Report.message(exc) : null);
    }

    private void failed(String message) {
        errors.incrementAndGet();
        if (message != null) {
            firstError.compareAndSet(null, message);
        }
    }

    int responses() {
        return responses.get();
    }

    int errors() {
        return errors.get();
    }

    /** The first failure's message, or null without one. */
    String firstError() {
        return firstError.get();
    }
}
