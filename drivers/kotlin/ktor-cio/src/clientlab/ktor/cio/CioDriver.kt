package clientlab.ktor.cio

import clientlab.ktor.KtorDriver
import clientlab.lab.Driver
import clientlab.lab.Job
import clientlab.lab.Lab
import clientlab.lab.Tls
import io.ktor.client.engine.cio.CIO
import io.ktor.client.engine.cio.CIOEngineConfig

/**
 * Ktor's client on its own engine, CIO (coroutine sockets, Ktor's own HTTP/1.x and TLS code),
 * with the engine's defaults: HTTP/1.1 only, so the manifest claims neither http2 nor h2c; and,
 * with pipelining off as it ships, a connection of its own for every request, closed after the
 * answer (CIO's Endpoint keeps connections only in its request pipeline, which hung on the bench
 * server's answers when turned on), so the manifest claims keepalive_off and not keepalive.
 */
// accept_encoding "library": Ktor without its ContentEncoding plugin sends no Accept-Encoding and
// decodes nothing, as a job without accept_gzip does already
class CioDriver : KtorDriver<CIOEngineConfig>(CIO, "accept_encoding", Driver.LIBRARY_ENCODING) {
    override fun CIOEngineConfig.configure(job: Job) {
        // the engine's own limit on a request (15 s as it ships): the job's, when it names one
        job.timeout()?.let { requestTimeout = it.toMillis() }
        job.tlsCa?.let { ca -> https { trustManager = Tls.trustManager(ca) } }
    }

    companion object {
        @JvmStatic
        fun main(args: Array<String>) = Lab.main(CioDriver(), args)
    }
}
