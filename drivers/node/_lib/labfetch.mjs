/**
 * labfetch: what the fetch driver does the same way on every JavaScript runtime it runs on
 * (Node.js, Bun, Deno), each with its own built-in fetch: the request's init (method, headers,
 * redirect mode, body) and reading the response whole into memory with arrayBuffer(), as fetch's
 * users do. A runtime's module supplies what differs (drivers/node/fetch/<runtime>.mjs):
 *
 * - `client(init, req)`: the init with the job's client in it (Node: an undici dispatcher; Bun:
 *   a FetchSession; Deno: an HttpClient), which trusts the job's CA and keeps its connections;
 * - `fileBody(req)`: init fields (or a promise of them) that send `body_file` from the file;
 * - `toFile(req, resp)`: the body streamed to `sink_path`, as a Response;
 * - `httpVersion`: the HTTP version of the job's responses (fetch's Response does not say it).
 */

import { Response } from './labdriver.mjs';

/** The JavaScript runtime this process runs on: 'node', 'bun' or 'deno'. */
export function runtime() {
  if (globalThis.Bun) return 'bun';
  return globalThis.Deno ? 'deno' : 'node';
}

/** A driver class on `Base` whose `request` is fetch's; a subclass's `open` calls `openFetch(job)`. */
export const fetchRequests = (Base) => class extends Base {
  openFetch(job) {
    this.job = job;
    // fetch asks for gzip, deflate, br (and more) by default: say exactly what the job wants,
    // unless it leaves that to fetch (accept_encoding "library")
    this.encoding = job.encodingHeader();
  }

  async request(req) {
    const init = { method: req.method, headers: { ...req.uploadHeaders(), ...this.encoding } };
    // fetch follows by default; manual: the 3xx itself is the response
    if (req.followRedirects !== null) init.redirect = req.followRedirects ? 'follow' : 'manual';
    if (req.multipart) {
      init.body = req.formData(); // sent as multipart/form-data
    } else if (req.form) {
      init.body = new URLSearchParams(req.form);
    } else if (req.bodyFile) {
      Object.assign(init, await this.fileBody(req));
    }
    const resp = await fetch(req.url, this.client(init, req));
    if (req.toFile) return this.toFile(req, resp);
    const body = new Uint8Array(await resp.arrayBuffer());
    return Response.of(resp.status, this.httpVersion, body, this.job.verify);
  }
};
