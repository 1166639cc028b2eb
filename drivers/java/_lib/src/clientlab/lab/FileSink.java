package clientlab.lab;

import java.io.Closeable;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.security.MessageDigest;

/** Writes a streamed body to a file chunk by chunk, counting it (and hashing when verifying). */
public final class FileSink implements Closeable {
    /** read/write size for streamed bodies */
    public static final int CHUNK = 64 * 1024;

    private final FileOutputStream file;
    private final MessageDigest digest;
    private long size;
    private final byte[] copy = new byte[CHUNK];

    public FileSink(String path, boolean verify) throws IOException {
        this.file = new FileOutputStream(path);
        this.digest = verify ? Response.digest() : null;
    }

    /** Append one chunk. */
    public void write(byte[] chunk, int off, int len) throws IOException {
        file.write(chunk, off, len);
        size += len;
        if (digest != null) {
            digest.update(chunk, off, len);
        }
    }

    /** Append one chunk (the buffer's remaining bytes; its position is left unchanged). */
    public void write(ByteBuffer chunk) throws IOException {
        ByteBuffer view = chunk.duplicate();
        int len = view.remaining();
        if (digest != null) {
            digest.update(chunk.duplicate());
        }
        while (view.hasRemaining()) {
            file.getChannel().write(view);
        }
        size += len;
    }

    /** Write every byte of a streamed body, then describe the file (see {@link #response}). */
    public Response drain(InputStream in, int status, Object http) throws IOException {
        int n;
        while ((n = in.read(copy)) >= 0) {
            write(copy, 0, n);
        }
        return response(status, http);
    }

    /** The sink as an OutputStream, for libraries that write bodies to one. */
    public OutputStream stream() {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                FileSink.this.write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                FileSink.this.write(b, off, len);
            }
        };
    }

    /** Close the file and describe what was written. */
    public Response response(int status, Object http) throws IOException {
        close();
        return new Response(status, size, String.valueOf(http), digest == null ? null : Response.hex(digest.digest()));
    }

    /** Close the file (idempotent). */
    @Override
    public void close() throws IOException {
        file.close();
    }
}
