/**
 * clientlab driver: node:http / node:https request() with one keep-alive Agent per scheme for
 * the job (maxSockets = concurrency), up to `concurrency` requests in flight.
 */

import http from 'node:http';
import https from 'node:https';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';

import { Response, fileResponse, main } from '../_lib/labdriver.mjs';
import { AgentDriver, connectionHeaders, multipartBody } from '../_lib/labhttp.mjs';

/** The body of an IncomingMessage: decoded by node:zlib when it came gzip-encoded and the job
 * asked for gzip (node:http decodes nothing by itself; this is the way Node's docs show). */
function bodyStream(res, acceptGzip) {
  if (!acceptGzip || !/^\s*(x-)?gzip\s*$/i.test(res.headers['content-encoding'] ?? '')) return res;
  const gunzip = createGunzip();
  pipeline(res, gunzip).catch(() => {}); // an error destroys gunzip too: its reader sees it
  return gunzip;
}

/** Every chunk of a stream, in one Buffer, collected from its 'data' events until 'end', as
 * Node's http docs read a response: an async iterator over the stream (`for await`) cost about
 * a fifth more CPU a 12-byte request than the docs' loop does. A stream that closes before its
 * end (the connection reset mid-body) fails the request. */
function readAll(stream) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let ended = false;
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks));
    });
    stream.on('error', reject);
    stream.on('close', () => ended || reject(new Error('the response closed before its body ended')));
  });
}

class HttpDriver extends AgentDriver {
  // with Expect: 100-continue the body waits for the server's 100 (the request's 'continue' event)
  options = { ...this.options, expect_100: null };

  versions() {
    return { ...super.versions(), http: process.versions.node }; // node:http is Node's own: its version
  }

  async open(job) {
    await super.open(job);
    this.headers = { ...connectionHeaders(job) };
    // node:http sends no Accept-Encoding of its own
    if (job.acceptGzip) this.headers['accept-encoding'] = 'gzip';
    if (job.option('expect_100')) this.headers.expect = '100-continue';
  }

  request(req) {
    return new Promise((resolve, reject) => {
      const url = new URL(req.url);
      const secure = url.protocol === 'https:';
      const headers = { ...req.uploadHeaders(), ...this.headers };
      let body = null;
      if (req.multipart) {
        const form = multipartBody(req.form);
        body = form.body;
        headers['content-type'] = form.contentType;
      } else if (req.form) {
        body = Buffer.from(req.urlencoded());
        headers['content-type'] = 'application/x-www-form-urlencoded';
      }
      if (body) headers['content-length'] = String(body.length);
      if (!req.hasBody) delete headers.expect;
      const request = (secure ? https : http).request(url, {
        method: req.method,
        headers,
        agent: secure ? this.agents.https : this.agents.http,
        ...this.job.timeoutOptions('timeout'),
      });
      request.on('timeout', () => request.destroy(new Error(`no answer for ${this.job.timeoutS} s`)));
      request.on('error', reject);
      request.on('response', (res) => this.response(req, res).then(resolve, reject));
      const send = () => (req.bodyFile ? req.openBody().on('error', reject).pipe(request) : request.end(body));
      if (headers.expect) request.on('continue', send); // the body follows the server's 100
      else send();
    });
  }

  async response(req, res) {
    const stream = bodyStream(res, this.job.acceptGzip);
    if (req.toFile) return fileResponse(req, stream, res.statusCode, res.httpVersion, this.job.verify);
    const data = await readAll(stream);
    return Response.of(res.statusCode, res.httpVersion, data, this.job.verify);
  }
}

main(new HttpDriver());
