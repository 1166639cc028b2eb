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
 * end (the connection reset mid-body) fails the request. `done(err, body)` is called once. */
function readAll(stream, done) {
  const chunks = [];
  let ended = false;
  stream.on('data', (chunk) => chunks.push(chunk));
  stream.on('end', () => {
    ended = true;
    done(null, Buffer.concat(chunks));
  });
  stream.on('error', done);
  stream.on('close', () => ended || done(new Error('the response closed before its body ended')));
}

class HttpDriver extends AgentDriver {
  // with Expect: 100-continue the body waits for the server's 100 (the request's 'continue' event)
  options = { ...this.options, expect_100: null };

  versions() {
    return { ...super.versions(), http: process.versions.node }; // node:http is Node's own: its version
  }

  async open(job) {
    await super.open(job);
    const headers = { ...connectionHeaders(job) };
    // node:http sends no Accept-Encoding of its own
    if (job.acceptGzip) headers['accept-encoding'] = 'gzip';
    const expect = job.option('expect_100');
    // each entry's URL, module and options, built once as a program does before its loop: a
    // request of it then passes the same options object (node:http copies what it changes)
    this.entries = job.requests.map((req) => {
      const secure = req.url.startsWith('https:');
      const entryHeaders = { ...req.uploadHeaders(), ...headers };
      if (expect && req.hasBody) entryHeaders.expect = '100-continue';
      return {
        url: req.url,
        module: secure ? https : http,
        options: {
          method: req.method,
          headers: entryHeaders,
          agent: secure ? this.agents.https : this.agents.http,
          ...job.timeoutOptions('timeout'),
        },
      };
    });
  }

  request(req) {
    const { url, module, options } = this.entries[req.r];
    let body = null;
    let opts = options;
    if (req.form) { // a form body is built for each request, as a program builds what it sends
      const headers = { ...options.headers };
      if (req.multipart) {
        const form = multipartBody(req.form);
        body = form.body;
        headers['content-type'] = form.contentType;
      } else {
        body = Buffer.from(req.urlencoded());
        headers['content-type'] = 'application/x-www-form-urlencoded';
      }
      headers['content-length'] = String(body.length);
      opts = { ...options, headers };
    }
    return new Promise((resolve, reject) => {
      const request = module.request(url, opts, (res) => {
        const stream = bodyStream(res, this.job.acceptGzip);
        if (req.toFile) {
          fileResponse(req, stream, res.statusCode, res.httpVersion, this.job.verify).then(resolve, reject);
          return;
        }
        readAll(stream, (err, data) => (err ? reject(err) : resolve(
          Response.of(res.statusCode, res.httpVersion, data, this.job.verify))));
      });
      if (this.job.timeoutS !== null) {
        request.on('timeout', () => request.destroy(new Error(`no answer for ${this.job.timeoutS} s`)));
      }
      request.on('error', reject);
      const send = () => (req.bodyFile ? req.openBody().on('error', reject).pipe(request) : request.end(body));
      if (opts.headers.expect) request.on('continue', send); // the body follows the server's 100
      else send();
    });
  }
}

main(new HttpDriver());
