package clientlab.lab;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** One entry of {@code job.requests}, done {@code repeat} times; {@code r} is its index. */
public final class Request {
    public final int r;
    public final String method;
    public final String url;
    public final int repeat;
    /** extra request headers, in the job's order */
    public final Map<String, String> headers;
    /** form fields in the job's order, or null when the request posts no form */
    public final Map<String, String> form;
    public final String formEncoding;
    /** file whose bytes are the raw body, or null */
    public final String bodyFile;
    public final String contentType;
    /**
     * true: follow 3xx; false: report the 3xx itself; null (absent from the job): the URL does not
     * redirect, so the driver leaves the library's redirect setting as it ships.
     */
    public final Boolean followRedirects;
    public final String sink;
    public final String sinkPath;

    private Request(int r, JsonNode e) {
        this.r = r;
        String m = text(e, "method", null);
        this.method = m == null ? null : m.toUpperCase(Locale.ROOT);
        this.url = text(e, "url", null);
        this.repeat = e.path("repeat").asInt(1);
        this.headers = strings(e.get("headers"), "headers");
        JsonNode form = e.get("form");
        this.form = form == null || form.isNull() ? null : strings(form, "form");
        this.formEncoding = text(e, "form_encoding", "urlencoded");
        this.bodyFile = text(e, "body_file", null);
        this.contentType = text(e, "content_type", null);
        JsonNode follow = e.get("follow_redirects");
        if (follow != null && !follow.isNull() && !follow.isBoolean()) {
            throw new IllegalArgumentException("request " + r + ": follow_redirects must be a boolean");
        }
        this.followRedirects = follow == null || follow.isNull() ? null : follow.asBoolean();
        this.sink = text(e, "sink", "memory");
        this.sinkPath = text(e, "sink_path", null);
        if (method == null || url == null) {
            throw new IllegalArgumentException("request " + r + ": method and url must be strings");
        }
        if (repeat < 0) {
            throw new IllegalArgumentException("request " + r + ": negative repeat");
        }
        if (this.form != null && bodyFile != null) {
            throw new IllegalArgumentException("request " + r + ": both form and body_file");
        }
        if (toFile() && sinkPath == null) {
            throw new IllegalArgumentException("request " + r + ": sink file without sink_path");
        }
    }

    /** Build from the job's JSON entry; unknown keys are ignored (newer labs may add some). */
    static Request parse(int r, JsonNode entry) {
        if (entry == null || !entry.isObject()) {
            throw new IllegalArgumentException("request " + r + " is not an object");
        }
        return new Request(r, entry);
    }

    /** A reason this entry cannot be done as the protocol says (an unknown value), or null. */
    String unknownValue() {
        if (!formEncoding.equals("urlencoded") && !formEncoding.equals("multipart")) {
            return "form_encoding '" + formEncoding + "' is not known";
        }
        if (!sink.equals("memory") && !sink.equals("file")) {
            return "sink '" + sink + "' is not known";
        }
        return null;
    }

    public URI uri() {
        return URI.create(url);
    }

    public boolean https() {
        return url.regionMatches(true, 0, "https:", 0, 6);
    }

    /** True when the form goes as multipart/form-data. */
    public boolean multipart() {
        return form != null && formEncoding.equals("multipart");
    }

    /** True when the body is streamed to {@code sinkPath}. */
    public boolean toFile() {
        return sink.equals("file");
    }

    /** True when the request carries a body (form or file). */
    public boolean hasBody() {
        return form != null || bodyFile != null;
    }

    public Path bodyPath() {
        return bodyFile == null ? null : Path.of(bodyFile);
    }

    /** Content type of the raw {@code body_file} body. */
    public String uploadContentType() {
        return contentType != null ? contentType : "application/octet-stream";
    }

    private static String text(JsonNode obj, String key, String dflt) {
        JsonNode v = obj.get(key);
        return v != null && v.isTextual() ? v.asText() : dflt;
    }

    private static Map<String, String> strings(JsonNode obj, String what) {
        if (obj == null || obj.isNull()) {
            return Collections.emptyMap();
        }
        if (!obj.isObject()) {
            throw new IllegalArgumentException(what + " must be an object");
        }
        Map<String, String> out = new LinkedHashMap<>();
        obj.fields().forEachRemaining(f -> {
            if (!f.getValue().isTextual()) {
                throw new IllegalArgumentException(what + " values must be strings");
            }
            out.put(f.getKey(), f.getValue().asText());
        });
        return Collections.unmodifiableMap(out);
    }
}
