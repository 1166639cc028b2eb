package clientlab.lab;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;

/** What one request got: final status, decoded body length, HTTP version, digest if verify. */
public final class Response {
    public final int status;
    public final long bytes;
    /** "1.0", "1.1", "2" or "3" */
    public final String http;
    /** hex SHA-256 of the decoded body, only when the job verifies */
    public final String sha256;

    public Response(int status, long bytes, String http, String sha256) {
        this.status = status;
        this.bytes = bytes;
        this.http = label(http);
        this.sha256 = sha256;
    }

    /** A response whose whole (decoded) body is in memory. */
    public static Response of(int status, Object http, byte[] body, boolean verify) {
        return new Response(status, body.length, String.valueOf(http), verify ? hex(digest().digest(body)) : null);
    }

    /**
     * A response whose whole (decoded) body is in memory as buffers (a Netty ByteBuf's
     * nioBuffers()): counted and, if verify, hashed in place; the buffers' positions stay.
     */
    public static Response of(int status, Object http, ByteBuffer[] body, boolean verify) {
        MessageDigest d = verify ? digest() : null;
        long size = 0;
        for (ByteBuffer b : body) {
            size += b.remaining();
            if (d != null) {
                d.update(b.duplicate());
            }
        }
        return new Response(status, size, String.valueOf(http), d == null ? null : hex(d.digest()));
    }

    /** A response whose (decoded) body the library wrote to {@code file}; digest read back if verify. */
    public static Response ofFile(int status, Object http, Path file, boolean verify) throws IOException {
        String sha = null;
        if (verify) {
            MessageDigest d = digest();
            byte[] chunk = new byte[FileSink.CHUNK];
            try (InputStream in = Files.newInputStream(file)) {
                for (int n = in.read(chunk); n >= 0; n = in.read(chunk)) {
                    d.update(chunk, 0, n);
                }
            }
            sha = hex(d.digest());
        }
        return new Response(status, Files.size(file), String.valueOf(http), sha);
    }

    /** The spellings the clients give, each with its label: a response's is looked up, not parsed. */
    private static final Map<String, String> KNOWN = Map.ofEntries(
            Map.entry("HTTP/1.1", "1.1"), Map.entry("HTTP/1.0", "1.0"), Map.entry("HTTP/2", "2"),
            Map.entry("HTTP/2.0", "2"), Map.entry("HTTP/3.0", "3"), Map.entry("HTTP_1_1", "1.1"),
            Map.entry("HTTP_2", "2"), Map.entry("http/1.1", "1.1"), Map.entry("http/1.0", "1.0"),
            Map.entry("h2", "2"), Map.entry("h2_prior_knowledge", "2"));

    /**
     * Normalise a library's idea of the HTTP version to "1.0", "1.1", "2" or "3": "HTTP/1.1" (Apache,
     * Jetty; "HTTP/3.0" for Jetty's HTTP/3), HTTP_1_1 / HTTP_2 (java.net.http), "http/1.1" / "h2" /
     * "h2_prior_knowledge" (OkHttp).
     */
    public static String label(String version) {
        String known = KNOWN.get(version);
        if (known != null) {
            return known;
        }
        String v = version.toUpperCase(Locale.ROOT);
        if (v.startsWith("HTTP/") || v.startsWith("HTTP_")) {
            v = v.substring(5);
        }
        switch (v.replace('_', '.')) {
            case "1.0": case "10":
                return "1.0";
            case "1.1": case "11":
                return "1.1";
            case "2": case "2.0": case "20": case "H2": case "H2.PRIOR.KNOWLEDGE":
                return "2";
            case "3": case "3.0": case "30": case "H3":
                return "3";
            default:
                return version;
        }
    }

    static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static String hex(byte[] digest) {
        return HexFormat.of().formatHex(digest);
    }
}
