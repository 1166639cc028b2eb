package clientlab.ktor.okhttp

import clientlab.ktor.KtorDriver
import clientlab.lab.Driver
import clientlab.lab.Job
import clientlab.lab.Lab
import clientlab.lab.Tls
import io.ktor.client.engine.okhttp.OkHttp
import io.ktor.client.engine.okhttp.OkHttpConfig
import io.ktor.client.request.HttpRequestBuilder
import io.ktor.client.request.header
import io.ktor.http.HttpHeaders
import okhttp3.Dispatcher
import okhttp3.Protocol

/**
 * Ktor's client on its OkHttp engine: Ktor's API and plugins over an OkHttpClient the engine
 * builds (on the first request, as Ktor does) and calls asynchronously.
 */
// accept_encoding "library": the engine's OkHttp asks for gzip and decodes it (perRequest)
class OkHttpEngineDriver : KtorDriver<OkHttpConfig>(OkHttp, "accept_encoding", Driver.LIBRARY_ENCODING) {
    override fun versions(versions: MutableMap<String, String>) {
        super.versions(versions)
        versions["okhttp"] = okhttp3.OkHttp.VERSION
        versions["okio"] = Lab.versionOf(okio.Okio::class.java)
    }

    override fun OkHttpConfig.configure(job: Job) {
        val trust = job.tlsCa?.let { Tls.trustManager(it) } // read now, not when the engine builds its client
        config {
            // the job's limit, when it names one, on the whole call, as java-okhttp sets it;
            // connect, read and write keep OkHttp's 10 s
            job.timeout()?.let { callTimeout(it) }
            if (job.h2c()) {
                protocols(listOf(Protocol.H2_PRIOR_KNOWLEDGE))
            } else if (job.http != "2") {
                protocols(listOf(Protocol.HTTP_1_1))
            }
            // HTTP/2 over TLS keeps OkHttp's own list (h2, http/1.1): ALPN may settle on
            // HTTP/1.1, and such a response fails its request (Job.checkVersion)
            if (trust != null) {
                sslSocketFactory(Tls.context(trust).socketFactory, trust)
            }
            if (job.concurrency > 1) {
                // OkHttp's Dispatcher runs 5 calls per host as it ships: the job's concurrency
                // is what it must keep in flight
                dispatcher(Dispatcher().apply {
                    maxRequests = job.concurrency
                    maxRequestsPerHost = job.concurrency
                })
            }
        }
    }

    override fun HttpRequestBuilder.perRequest(job: Job) {
        if (!job.acceptGzip && !job.libraryEncoding()) {
            // OkHttp asks for gzip (and decodes it) unless the request names an encoding, as it
            // does where the job leaves it to the library
            header(HttpHeaders.AcceptEncoding, "identity")
        }
    }

    companion object {
        @JvmStatic
        fun main(args: Array<String>) = Lab.main(OkHttpEngineDriver(), args)
    }
}
