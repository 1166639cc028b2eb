package clientlab.lab;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/** TLS that trusts the job's CA file (the lab's own CA); verification is never disabled. */
public final class Tls {
    private Tls() {
    }

    /** A key store holding every certificate of a PEM file as a trusted entry. */
    public static KeyStore trustStore(String caFile) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = Files.newInputStream(Path.of(caFile))) {
            int i = 0;
            for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("lab-ca-" + i++, cert);
            }
            if (i == 0) {
                throw new GeneralSecurityException("no certificate in " + caFile);
            }
        }
        return store;
    }

    /** The JDK's X.509 trust manager over {@link #trustStore}. */
    public static X509TrustManager trustManager(String caFile) throws IOException, GeneralSecurityException {
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trustStore(caFile));
        for (TrustManager tm : tmf.getTrustManagers()) {
            if (tm instanceof X509TrustManager) {
                return (X509TrustManager) tm;
            }
        }
        throw new GeneralSecurityException("no X509TrustManager");
    }

    /** A TLS context trusting only the CA file. */
    public static SSLContext context(String caFile) throws IOException, GeneralSecurityException {
        return context(trustManager(caFile));
    }

    /** A TLS context over a trust manager from {@link #trustManager}. */
    public static SSLContext context(X509TrustManager trust) throws GeneralSecurityException {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {trust}, null);
        return ctx;
    }
}
