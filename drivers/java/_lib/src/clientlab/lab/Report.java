package clientlab.lab;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Collects responses and errors (thread-safe) and writes them as the report message. */
public final class Report implements Outcomes {
    private final boolean verify;
    /** the version every response must have, or null (see {@link Job#wanted}) */
    private final String wanted;
    private final List<Object[]> responses;
    private final List<Object[]> errors = new ArrayList<>();

    Report(Job job) {
        this.verify = job.verify;
        this.wanted = job.wanted();
        // room for every response now: the timed phase does not pay for the lab's bookkeeping
        this.responses = new ArrayList<>(Math.min(job.total(), 1 << 20));
    }

    /** Record one response; an HTTP/2 or HTTP/3 job answered in another version is an error, not a response. */
    @Override
    public synchronized void add(Request req, Response resp) {
        String wrong = versionMismatch(wanted, resp.http);
        if (wrong != null) {
            errors.add(new Object[] {req.r, wrong});
            return;
        }
        responses.add(new Object[] {req.r, resp.status, resp.bytes, resp.http, resp.sha256});
    }

    /** Record one request that got no response. */
    @Override
    public synchronized void fail(Request req, Throwable exc) {
        errors.add(new Object[] {req.r, message(exc)});
    }

    /**
     * Why a response to an HTTP/2 or HTTP/3 job ({@code wanted}: "2", "3"; null for HTTP/1.1) is
     * an error (the client fell back to another version), or null. {@code http} is a
     * {@link Response#label}.
     */
    static String versionMismatch(String wanted, String http) {
        return wanted != null && !http.equals(wanted)
                ? "HTTP/" + wanted + " was asked, the client fell back to HTTP/" + http
                        + " (not counted as HTTP/" + wanted + " work)" : null;
    }

    /** A failure as the report's message: the exception's class and text, at most 500 characters. */
    static String message(Throwable exc) {
        Throwable t = cause(exc);
        String text = t.getMessage();
        String message = t.getClass().getSimpleName() + (text == null || text.isEmpty() ? "" : ": " + text);
        return message.length() > 500 ? message.substring(0, 500) : message;
    }

    /** The exception behind the wrappers of futures, executors and lambdas (UncheckedIOException). */
    public static Throwable cause(Throwable exc) {
        Throwable t = exc;
        while ((t instanceof CompletionException || t instanceof ExecutionException
                || t instanceof UncheckedIOException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    synchronized void write(Writer out) throws IOException {
        try (JsonGenerator g = Lab.JSON.getFactory().createGenerator(out)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            g.writeStartObject();
            g.writeStringField("type", "report");
            g.writeArrayFieldStart("responses");
            for (Object[] x : responses) {
                g.writeStartObject();
                g.writeNumberField("r", (Integer) x[0]);
                g.writeNumberField("status", (Integer) x[1]);
                g.writeNumberField("bytes", (Long) x[2]);
                g.writeStringField("http", (String) x[3]);
                if (verify) {
                    g.writeStringField("sha256", (String) x[4]);
                }
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("errors");
            for (Object[] x : errors) {
                g.writeStartObject();
                g.writeNumberField("r", (Integer) x[0]);
                g.writeStringField("message", (String) x[1]);
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        }
    }
}
