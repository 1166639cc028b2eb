/**
 * clientlab driver: undici (npm) request() through one Pool per origin (undici's own number
 * of connections unless max_host_connections names one), up to `concurrency` requests in flight.
 */

import { Response, baseVersions, fileResponse, main, packageVersion } from '../_lib/labdriver.mjs';
import { UndiciDriver, undiciOptions } from '../_lib/labhttp.mjs';
import { FormData, Pool, interceptors } from 'undici';

const MAX_REDIRECTS = 20; // as fetch

class UndiciPoolDriver extends UndiciDriver {
  versions() {
    return { ...baseVersions(), undici: packageVersion(import.meta.url, 'undici') };
  }

  async open(job) {
    await super.open(job);
    const options = undiciOptions(job);
    // undici follows no redirect as it ships: a job with a request to follow gets its redirect
    // interceptor (maxRedirections per request); gzip bodies are decoded by its decompress
    // interceptor
    const layers = [];
    if (job.requests.some((req) => req.followRedirects)) layers.push(interceptors.redirect());
    if (job.acceptGzip) layers.push(interceptors.decompress());
    this.newPool = (origin) => (layers.length ? new Pool(origin, options).compose(...layers) : new Pool(origin, options));
    this.pools = new Map(job.origins.map((origin) => [origin, this.newPool(origin)]));
    // undici sends no Accept-Encoding of its own
    this.encoding = job.acceptGzip ? { 'accept-encoding': 'gzip' } : {};
  }

  /** A later bare round may go to the server on another port: a Pool for each new origin, built
   * as `open` built the others (looked up beforehand, so that `request` stays a plain get). */
  async reuse(job) {
    for (const origin of job.origins) if (!this.pools.has(origin)) this.pools.set(origin, this.newPool(origin));
  }

  async request(req) {
    const url = new URL(req.url);
    const options = {
      origin: url.origin, // the redirect interceptor resolves Location against it
      method: req.method,
      path: url.pathname + url.search,
      headers: { ...req.uploadHeaders(), ...this.encoding },
    };
    if (req.followRedirects !== null) options.maxRedirections = req.followRedirects ? MAX_REDIRECTS : 0;
    if (req.multipart) {
      options.body = req.formData(FormData); // undici's own, sent as multipart/form-data
    } else if (req.form) {
      options.body = req.urlencoded();
      options.headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (req.bodyFile) {
      options.body = req.openBody(); // streamed from the file, with its Content-Length
    }
    const { statusCode, body } = await this.pools.get(url.origin).request(options);
    if (req.toFile) return fileResponse(req, body, statusCode, this.httpVersion, this.job.verify);
    const bytes = new Uint8Array(await body.arrayBuffer());
    return Response.of(statusCode, this.httpVersion, bytes, this.job.verify);
  }

  async close() {
    await Promise.all([...(this.pools?.values() ?? [])].map((pool) => pool.close()));
    this.pools = null;
  }
}

main(new UndiciPoolDriver());
