package clientlab.ktor

import clientlab.lab.Driver
import clientlab.lab.FileSink
import clientlab.lab.Job
import clientlab.lab.Lab
import clientlab.lab.Outcomes
import clientlab.lab.Request
import clientlab.lab.Response
import io.ktor.client.HttpClient
import io.ktor.client.call.body
import io.ktor.client.engine.HttpClientEngineConfig
import io.ktor.client.engine.HttpClientEngineFactory
import io.ktor.client.plugins.compression.ContentEncoding
import io.ktor.client.plugins.cookies.HttpCookies
import io.ktor.client.request.HttpRequestBuilder
import io.ktor.client.request.forms.FormDataContent
import io.ktor.client.request.forms.MultiPartFormDataContent
import io.ktor.client.request.forms.formData
import io.ktor.client.request.header
import io.ktor.client.request.prepareRequest
import io.ktor.client.request.request
import io.ktor.client.request.setBody
import io.ktor.client.request.url
import io.ktor.client.statement.bodyAsChannel
import io.ktor.http.ContentType
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpMethod
import io.ktor.http.contentType
import io.ktor.http.parameters
import io.ktor.util.cio.readChannel
import io.ktor.utils.io.readAvailable
import java.io.File
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking

/**
 * Ktor's HttpClient on one engine ([factory]), one client per job, as Ktor's docs build it:
 * `HttpClient(Engine) { … }` with the engine's defaults, Ktor's own redirect following
 * (`followRedirects`), `HttpCookies` for cookies and `ContentEncoding` for gzip, each only where
 * the job asks. Requests run in coroutines under `runBlocking`: one after another, or, for
 * parallel jobs, `concurrency` coroutines taking the next request in turn. Bodies are read the
 * way Ktor's users read them: `body<ByteArray>()` of a response, or its `bodyAsChannel()`
 * streamed to the file. A subclass configures its engine for the job ([configure]) and may add
 * what the engine needs on each request ([perRequest]).
 */
abstract class KtorDriver<T : HttpClientEngineConfig>(
    private val factory: HttpClientEngineFactory<T>,
    vararg honoured: Any?,
) : Driver(*honoured) {
    private lateinit var job: Job
    private var client: HttpClient? = null

    /** The engine's settings for the job: the CA to trust, the job's time limit, the HTTP version. */
    protected abstract fun T.configure(job: Job)

    /** What the engine needs on every request of the job, beyond the job's own headers. */
    protected open fun HttpRequestBuilder.perRequest(job: Job) {
    }

    override fun versions(versions: MutableMap<String, String>) {
        versions["kotlin-stdlib"] = KotlinVersion.CURRENT.toString()
        versions["ktor"] = Lab.versionOf(HttpClient::class.java)
        versions["kotlinx-coroutines"] = Lab.versionOf(Dispatchers::class.java)
    }

    override fun refuse(job: Job): String? =
        if (job.redirectsDiffer()) {
            "Ktor follows redirects or not per client (followRedirects), and this job's entries differ"
        } else {
            null
        }

    override fun open(job: Job) {
        this.job = job
        client = HttpClient(factory) {
            engine { configure(job) }
            // an entry that names it sets Ktor's switch; otherwise it stays as Ktor ships it
            job.followRedirects()?.let { followRedirects = it }
            if (job.cookies) {
                install(HttpCookies) // its default storage: every cookie kept, for this client alone
            }
            if (job.acceptGzip) {
                install(ContentEncoding) { gzip() }
            }
        }
    }

    private fun HttpRequestBuilder.of(req: Request) {
        url(req.url)
        method = HttpMethod.parse(req.method)
        if (!job.keepAlive) {
            header(HttpHeaders.Connection, "close")
        }
        perRequest(job)
        req.headers.forEach { (name, value) -> header(name, value) }
        val form = req.form
        when {
            req.multipart() -> setBody(MultiPartFormDataContent(formData { form.forEach { (k, v) -> append(k, v) } }))
            form != null -> setBody(FormDataContent(parameters { form.forEach { (k, v) -> append(k, v) } }))
            req.bodyFile != null -> {
                contentType(ContentType.parse(req.uploadContentType()))
                setBody(File(req.bodyFile).readChannel())
            }
        }
    }

    /** One request to its response, or an exception without one. */
    private suspend fun fetch(req: Request): Response {
        val client = checkNotNull(client) { "no client: the job was not opened" }
        if (req.toFile()) {
            return client.prepareRequest { of(req) }.execute { resp ->
                job.checkVersion(resp.version) // before the body: an answer in another version is no work of the job's
                val channel = resp.bodyAsChannel()
                FileSink(req.sinkPath, job.verify).use { sink ->
                    val chunk = ByteArray(FileSink.CHUNK)
                    while (true) {
                        val n = channel.readAvailable(chunk, 0, chunk.size)
                        if (n < 0) {
                            break
                        }
                        sink.write(chunk, 0, n)
                    }
                    sink.response(resp.status.value, resp.version)
                }
            }
        }
        val resp = client.request { of(req) }
        job.checkVersion(resp.version)
        val body: ByteArray = resp.body()
        return Response.of(resp.status.value, resp.version, body, job.verify)
    }

    private suspend fun record(req: Request, outcomes: Outcomes) {
        val resp = try {
            fetch(req)
        } catch (exc: Exception) { // a time-out arrives as a cancellation: it is this request's failure
            outcomes.fail(req, exc)
            return
        } catch (exc: OutOfMemoryError) { // an answer too large for the heap (a bomb held whole): this request's too
            outcomes.fail(req, exc)
            return
        }
        outcomes.add(req, resp)
    }

    /** Coroutines, not the helper's worker threads, carry parallel jobs. */
    override fun threaded(): Boolean = false

    override fun runAll(job: Job, work: List<Request>, report: Outcomes) {
        runBlocking {
            if (job.concurrency == 1) {
                for (req in work) {
                    record(req, report)
                }
                return@runBlocking
            }
            val next = AtomicInteger()
            repeat(job.concurrency) {
                launch {
                    var i = next.getAndIncrement()
                    while (i < work.size) {
                        record(work[i], report)
                        i = next.getAndIncrement()
                    }
                }
            }
        }
    }

    /** The blocking form of one request (the helper's loop runs through [runAll] instead). */
    override fun request(req: Request): Response = runBlocking { fetch(req) }

    override fun close() {
        client?.close() // closes the engine, and with it every connection the job opened
        client = null
    }
}
