/**
 * clientlab driver: got, one instance (got.extend) per job on keep-alive node:http / node:https
 * Agents (maxSockets = concurrency), or an http2-wrapper Agent for HTTP/2 (`http2: true`),
 * up to `concurrency` requests in flight.
 */

import { Response, fileResponse, main, packageVersion } from '../_lib/labdriver.mjs';
import { AgentDriver, connectionHeaders } from '../_lib/labhttp.mjs';
import got from 'got';
import http2wrapper from 'http2-wrapper';
import { CookieJar } from 'tough-cookie';

class GotDriver extends AgentDriver {
  versions() {
    return {
      ...super.versions(), nghttp2: process.versions.nghttp2,
      got: packageVersion(import.meta.url, 'got'),
      'http2-wrapper': packageVersion(import.meta.url, 'http2-wrapper'),
      'tough-cookie': packageVersion(import.meta.url, 'tough-cookie'),
    };
  }

  refuse(job) {
    if (job.http !== '2') return null;
    // TCP_NODELAY is set on the node:http Agents' sockets, not on http2-wrapper's sessions
    if (job.option('tcp_nodelay') !== null) return 'tcp_nodelay cannot be set on http2-wrapper sessions';
    if (!job.keepAlive) return 'keep-alive off over HTTP/2: http2-wrapper keeps its session';
    // the first request of a process resolves ALPN on a connection of its own and its session
    // is not the one later requests use: a second connection that maxSessions cannot cap
    if (job.option('max_host_connections') !== null) return 'max_host_connections cannot be honoured over HTTP/2';
    return null;
  }

  async open(job) {
    await super.open(job);
    const h2 = job.http === '2';
    // HTTP/2: got's `http2: true` (http2-wrapper, ALPN over TLS); its own Agent per job so that
    // no session outlives the job. got offers h2 and http/1.1 and takes what the server picks:
    // its `https.alpnProtocols` option offers h2 alone, so the job gets HTTP/2 or no connection
    if (h2) this.agents.http2 = new http2wrapper.Agent();
    const https = { certificateAuthority: job.ca() };
    if (h2) https.alpnProtocols = ['h2'];
    this.client = got.extend({
      agent: this.agents,
      http2: h2,
      https,
      // got asks for gzip, deflate, br by default: say exactly what the job wants, unless it
      // leaves that to got (accept_encoding "library")
      headers: { ...job.encodingHeader(), ...connectionHeaders(job) },
      cookieJar: job.cookies ? new CookieJar() : undefined, // tough-cookie, got's documented jar
      // the job's time limit, when it names one, after which a request is given up and reported
      // as failed, as are a refused or reset one (protocol §3, §4): so no retry (got retries GETs
      // twice by default)
      timeout: job.timeoutOptions('request'),
      retry: { limit: 0 },
      throwHttpErrors: false, // every status is a response, not an error
      responseType: 'buffer',
    });
  }

  async request(req) {
    const options = { method: req.method, headers: req.uploadHeaders() };
    if (req.followRedirects !== null) options.followRedirect = req.followRedirects; // got follows by default
    if (req.multipart) {
      options.body = req.formData(); // got encodes a spec FormData as multipart/form-data
    } else if (req.form) {
      options.form = req.form; // got's urlencoded form option
    } else if (req.bodyFile) {
      options.body = req.openBody(); // streamed from the file, with its Content-Length
    }
    if (req.toFile) return this.download(req, options);
    const res = await this.client(req.url, options);
    return Response.of(res.statusCode, res.httpVersion, res.body, this.job.verify); // a Buffer (responseType buffer)
  }

  /** got.stream: the body piped to the file once the (final) response has arrived. */
  async download(req, options) {
    const stream = this.client.stream(req.url, options);
    const res = await new Promise((resolve, reject) => stream.once('response', resolve).once('error', reject));
    return fileResponse(req, stream, res.statusCode, res.httpVersion, this.job.verify);
  }
}

main(new GotDriver());
