/**
 * clientlab driver: Node's built-in global fetch (undici inside Node), one dispatcher per job.
 *
 * Trusting the job's CA without turning verification off: fetch takes a `dispatcher` option,
 * and Node's own undici Agent class is reachable without installing anything: once fetch has
 * run, Node keeps its global dispatcher (an instance of that Agent) under undici's global key,
 * Symbol.for('undici.globalDispatcher.2') from Node 24 on (with undici 8, in Node 26, '.1' holds
 * a wrapper for dispatchers of the older API), Symbol.for('undici.globalDispatcher.1') before.
 * The driver loads fetch with a data: URL (no network), takes that object's constructor, and
 * builds a new Agent per job with `connect: { ca }`. Every request is still made by the
 * built-in fetch and the built-in undici (process.versions.undici); nothing from npm.
 * (Node 20 has no tls.setDefaultCACertificates, and NODE_EXTRA_CA_CERTS is read only when
 * the process starts, while the lab hands the CA over in each job.)
 */

import { Response, baseVersions, fileResponse, main } from '../_lib/labdriver.mjs';
import { UndiciDriver, undiciOptions } from '../_lib/labhttp.mjs';

const GLOBAL_DISPATCHER = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')];

/** The Agent class of Node's bundled undici. */
async function builtinAgent() {
  await (await fetch('data:,')).arrayBuffer(); // loads Node's undici, which sets its global dispatcher
  const key = GLOBAL_DISPATCHER.find((symbol) => globalThis[symbol] !== undefined);
  const Agent = key && globalThis[key].constructor;
  if (Agent?.name !== 'Agent') throw new Error("Node's fetch did not set its global undici Agent");
  return Agent;
}

class FetchDriver extends UndiciDriver {
  constructor(Agent) {
    super();
    this.Agent = Agent;
  }

  versions() {
    return { ...baseVersions(), undici: process.versions.undici };
  }

  async open(job) {
    await super.open(job);
    this.dispatcher = new this.Agent(undiciOptions(job));
    // fetch asks for gzip, deflate, br by default: say exactly what the job wants
    this.encoding = { 'accept-encoding': job.gzipHeader };
  }

  async request(req) {
    const init = {
      method: req.method,
      headers: { ...req.uploadHeaders(), ...this.encoding },
      dispatcher: this.dispatcher,
    };
    // fetch follows by default; manual: Node's fetch returns the 3xx itself
    if (req.followRedirects !== null) init.redirect = req.followRedirects ? 'follow' : 'manual';
    if (req.multipart) {
      init.body = req.formData(); // sent as multipart/form-data
    } else if (req.form) {
      init.body = new URLSearchParams(req.form);
    } else if (req.bodyFile) {
      init.body = req.openBody(); // streamed from the file, with its Content-Length
      init.duplex = 'half';
    }
    const resp = await fetch(req.url, init);
    if (req.toFile) return fileResponse(req, resp.body ?? [], resp.status, this.httpVersion, this.job.verify);
    const body = new Uint8Array(await resp.arrayBuffer());
    return Response.of(resp.status, this.httpVersion, body, this.job.verify);
  }

  async close() {
    await this.dispatcher?.close();
    this.dispatcher = null;
  }
}

main(new FetchDriver(await builtinAgent()));
