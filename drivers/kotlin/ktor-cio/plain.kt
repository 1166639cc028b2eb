// kotlin-ktor-cio's plain loop (docs/driver-protocol.md §9): Ktor's client on its CIO engine as
// Ktor's docs show it, with the engine's defaults.
// Usage: Plain URL COUNT keep-alive|close WARMUP_S
@file:JvmName("Plain")

import io.ktor.client.HttpClient
import io.ktor.client.call.body
import io.ktor.client.engine.cio.CIO
import io.ktor.client.request.get
import io.ktor.client.request.header
import io.ktor.http.HttpHeaders
import kotlin.system.exitProcess
import kotlinx.coroutines.runBlocking

fun main(args: Array<String>) {
    val url = args[0]
    val count = args[1].toInt()
    val close = args[2] == "close"
    val warmupS = args[3].toDouble()
    val client = HttpClient(CIO)

    suspend fun get(): Int {
        val response = client.get(url) {
            if (close) {
                header(HttpHeaders.Connection, "close")
            }
        }
        val body: ByteArray = response.body()
        check(response.status.value == 200) { "$url answered ${response.status}" }
        return body.size
    }

    try {
        runBlocking {
            val until = System.nanoTime() + (warmupS * 1e9).toLong()
            while (System.nanoTime() < until) {
                get()
            }
            var bytes = 0L
            val start = System.nanoTime()
            repeat(count) { bytes += get() }
            val seconds = (System.nanoTime() - start) / 1e9
            println("{\"requests\": $count, \"bytes\": $bytes, \"seconds\": $seconds}")
        }
    } catch (e: Exception) {
        System.err.println("kotlin-ktor-cio plain loop: $e")
        exitProcess(1)
    }
    exitProcess(0)
}
