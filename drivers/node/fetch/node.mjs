/**
 * node-fetch on Node.js: Node's built-in global fetch (undici inside Node), one dispatcher per job.
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

import { LIBRARY_ENCODING, baseVersions, fileResponse } from '../_lib/labdriver.mjs';
import { fetchRequests } from '../_lib/labfetch.mjs';
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

class NodeFetch extends fetchRequests(UndiciDriver) {
  // recommended: fetch's documented time limit, AbortSignal.timeout() (driver.toml's
  // [behaviour.recommended]), instead of undici's waits for the headers and for each body read
  options = {
    tcp_nodelay: [true], max_host_connections: null, expect_100: [false], recommended: [true],
    accept_encoding: LIBRARY_ENCODING, // fetch's own Accept-Encoding (labfetch.mjs)
  };

  constructor(Agent) {
    super();
    this.Agent = Agent;
  }

  versions() {
    return { ...baseVersions(), undici: process.versions.undici };
  }

  async open(job) {
    await super.open(job);
    this.openFetch(job);
    const options = undiciOptions(job);
    this.deadlineMs = job.option('recommended') ? job.timeoutMs : null;
    if (this.deadlineMs !== null) { // the signal is the time limit; undici keeps its own waits, as a fetch user's does
      delete options.headersTimeout;
      delete options.bodyTimeout;
    }
    this.dispatcher = new this.Agent(options);
  }

  client(init) {
    init.dispatcher = this.dispatcher;
    if (this.deadlineMs !== null) init.signal = AbortSignal.timeout(this.deadlineMs); // from the request's start
    return init;
  }

  fileBody(req) {
    return { body: req.openBody(), duplex: 'half' }; // streamed from the file, with its Content-Length
  }

  toFile(req, resp) {
    return fileResponse(req, resp.body ?? [], resp.status, this.httpVersion, this.job.verify);
  }

  async close() {
    await this.dispatcher?.close();
    this.dispatcher = null;
  }
}

export async function driver() {
  return new NodeFetch(await builtinAgent());
}
