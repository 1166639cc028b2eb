package clientlab.lab

import clientlab.ktor.KtorDriver
import io.ktor.client.engine.mock.MockEngine
import io.ktor.client.engine.mock.MockEngineConfig
import io.ktor.client.engine.mock.respond
import io.ktor.http.HttpStatusCode
import java.io.IOException
import kotlin.system.exitProcess

/**
 * The transcript's contract client (drivers/contract/transcript.json, `client`) behind the Kotlin
 * helper: a KtorDriver whose engine is Ktor's MockEngine, answering each request from its URL, so
 * that the helper's own coroutine loop, body reading and refusals run as in a driver.
 */
class ContractKtor : KtorDriver<MockEngineConfig>(MockEngine, "tcp_nodelay", null, "expect_100", listOf(false)) {
    override fun MockEngineConfig.configure(job: Job) {
        addHandler { request ->
            val url = request.url.toString()
            if ("/fail" in url) {
                throw IOException("connection refused")
            }
            val status = Regex("/status/(\\d{3})").find(url)?.groupValues?.get(1)?.toInt() ?: 200
            respond(url.toByteArray(), HttpStatusCode.fromValue(status))
        }
    }

    override fun versions(versions: MutableMap<String, String>) {
        super.versions(versions)
        versions["contract"] = "1"
    }

    override fun refuse(job: Job): String? =
        if (job.scenario == "refused-by-client") "the contract client refuses this job" else super.refuse(job)

    override fun open(job: Job) {
        if (job.scenario == "open-fails") {
            throw IOException("the contract client cannot be built")
        }
        super.open(job)
    }
}

fun main(args: Array<String>) {
    exitProcess(TranscriptTest.run(args) { ContractKtor() })
}
