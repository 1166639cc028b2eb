/**
 * node-fetch on Deno: Deno's own fetch (deno_fetch, on hyper), one Deno.HttpClient per job
 * (Deno.createHttpClient, passed as fetch's `client`): its pool is the job's; the job's CA is
 * its `caCerts` (added to the default roots, verification on); keep-alive off is
 * `poolMaxIdlePerHost: 0` (no connection is kept once its response is read); the job's HTTP
 * version is `http1` / `http2` (only the one the job names is allowed, so every response comes in
 * it or the request fails). A file body is the opened file's `readable` stream, as Deno's docs
 * send one; a body to a file is `pipeTo` the opened file's `writable`.
 */

import { Driver, LIBRARY_ENCODING, Response, baseVersions, fileDigest } from '../_lib/labdriver.mjs';
import { fetchRequests } from '../_lib/labfetch.mjs';

class DenoFetch extends fetchRequests(Driver) {
  // Deno's fetch sends no Expect: 100-continue; the other options name settings it does not have
  // recommended (AbortSignal.timeout, driver.toml's [behaviour.recommended]) is what it does in every job
  options = { expect_100: [false], recommended: [true], accept_encoding: LIBRARY_ENCODING };

  versions() {
    return { ...baseVersions(), v8: Deno.version.v8 };
  }

  async open(job) {
    this.openFetch(job);
    const ca = job.ca();
    const options = { http1: job.http === '1.1', http2: job.http !== '1.1' };
    if (ca) options.caCerts = [ca.toString()];
    if (!job.keepAlive) options.poolMaxIdlePerHost = 0;
    this.httpClient = Deno.createHttpClient(options);
    this.httpVersion = job.http === '1.1' ? '1.1' : '2';
  }

  client(init) {
    init.client = this.httpClient;
    if (this.job.timeoutMs) init.signal = AbortSignal.timeout(this.job.timeoutMs); // fetch's documented time limit
    return init;
  }

  async fileBody(req) {
    return { body: (await Deno.open(req.bodyFile)).readable };
  }

  async toFile(req, resp) {
    const file = await Deno.open(req.sinkPath, { write: true, create: true, truncate: true });
    if (resp.body) await resp.body.pipeTo(file.writable); // closes the file
    else file.close();
    const bytes = (await Deno.stat(req.sinkPath)).size;
    return new Response(resp.status, bytes, this.httpVersion, this.job.verify ? await fileDigest(req.sinkPath) : null);
  }

  async close() {
    this.httpClient?.close();
    this.httpClient = null;
  }
}

export async function driver() {
  return new DenoFetch();
}
