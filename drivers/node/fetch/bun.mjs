/**
 * node-fetch on Bun: Bun's own fetch (its HTTP client, written in Zig), one Bun.FetchSession per
 * job: the session's keep-alive pool is the job's, never shared with another job's or with plain
 * fetch(); keep-alive off is the session's `keepAlive: false` (every connection closed after its
 * response); the job's CA is the session's `tls: { ca }`, verification on. HTTP/2 is asked for
 * per request as Bun documents it, `protocol: "http2"` (h2 alone in ALPN: a server that does not
 * choose it fails the request), and HTTP/1.1 jobs over https say `protocol: "http1.1"`, so the
 * version of every response is the one asked for. A file body is Bun.file(path), which Bun
 * sends from the file (sendfile over plain http); a body to a file is Bun.write(path, response).
 */

import { Driver, LIBRARY_ENCODING, Response, baseVersions, fileDigest } from '../_lib/labdriver.mjs';
import { fetchRequests } from '../_lib/labfetch.mjs';

class BunFetch extends fetchRequests(Driver) {
  // Bun's fetch sends no Expect: 100-continue; the other options name settings it does not have
  // recommended (AbortSignal.timeout, driver.toml's [behaviour.recommended]) is what it does in every job
  options = { expect_100: [false], recommended: [true], accept_encoding: LIBRARY_ENCODING };

  versions() {
    return { ...baseVersions(), bun_revision: Bun.revision };
  }

  async open(job) {
    this.openFetch(job);
    const ca = job.ca();
    this.session = new Bun.FetchSession({ keepAlive: job.keepAlive, ...(ca ? { tls: { ca: ca.toString() } } : {}) });
    this.httpVersion = job.http === '1.1' ? '1.1' : '2';
  }

  client(init, req) {
    init.session = this.session;
    if (req.url.startsWith('https:')) init.protocol = this.httpVersion === '2' ? 'http2' : 'http1.1';
    if (this.job.timeoutMs) init.signal = AbortSignal.timeout(this.job.timeoutMs); // fetch's documented time limit
    return init;
  }

  fileBody(req) {
    return { body: Bun.file(req.bodyFile) };
  }

  async toFile(req, resp) {
    const bytes = await Bun.write(req.sinkPath, resp);
    return new Response(resp.status, bytes, this.httpVersion, this.job.verify ? await fileDigest(req.sinkPath) : null);
  }

  async close() {
    this.session?.close();
    this.session = null;
  }
}

export async function driver() {
  return new BunFetch();
}
