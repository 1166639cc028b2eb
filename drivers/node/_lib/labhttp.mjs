/**
 * labhttp: client set-up that several Node drivers share, so that each driver keeps only what is
 * specific to its library (docs in README.md beside this file).
 *
 * - `AgentDriver`, `connectionHeaders(job)`: what drivers on node:http / node:https Agents share
 *   (node-http, node-axios, node-got);
 * - `UndiciDriver`, `undiciOptions(job)`: what drivers on undici share, built into Node
 *   (node-fetch) or from npm (node-undici): honoured options, refusals, dispatcher options and
 *   the HTTP version of the responses;
 * - `multipartBody(form)`: a multipart/form-data body built by hand, for clients without a
 *   form encoder (node-http).
 */

import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import http from 'node:http';
import https from 'node:https';

import { Driver, LIBRARY_ENCODING, baseVersions, httpLabel } from './labdriver.mjs';

/* ---------------------------------------------------------------- node:http agents */

/** An Agent class that sets TCP_NODELAY to `nodelay` on every socket it creates. Node's own
 * `noDelay` agent option reaches plain sockets only (tls.connect drops it; Node 20 sets
 * TCP_NODELAY on plain http sockets by default and not on TLS ones), so it is set on the socket
 * itself: a TLSSocket passes setNoDelay on to its TCP handle. */
function noDelayAgent(Base, nodelay) {
  if (nodelay === null) return Base;
  return class extends Base {
    createConnection(...args) {
      return super.createConnection(...args).setNoDelay(nodelay);
    }
  };
}

/**
 * The job's node:http and node:https Agents: keep-alive as the job says, at most
 * `job.connections` sockets per host, TCP_NODELAY when the job sets it, and the job's CA trusted
 * for https (with verification on, Node's default). Destroy both when the job ends.
 */
export function nodeAgents(job) {
  const nodelay = job.option('tcp_nodelay');
  const options = { keepAlive: job.keepAlive, maxSockets: job.connections };
  if (nodelay !== null) options.noDelay = nodelay;
  const HttpAgent = noDelayAgent(http.Agent, nodelay);
  const HttpsAgent = noDelayAgent(https.Agent, nodelay);
  return { http: new HttpAgent(options), https: new HttpsAgent({ ...options, ca: job.ca() }) };
}

/**
 * A driver on node:http / node:https Agents: `open` builds `this.agents` (see nodeAgents) and
 * `close` destroys every Agent in it (a subclass may add one, e.g. an HTTP/2 agent). The client
 * writes a body right after its headers, so expect_100 can only be false unless a subclass
 * says otherwise. A subclass's `open` calls `super.open(job)` first.
 */
export class AgentDriver extends Driver {
  // accept_encoding "library": a subclass sets Accept-Encoding from job.encodingHeader()
  options = { tcp_nodelay: null, max_host_connections: null, expect_100: [false], accept_encoding: LIBRARY_ENCODING };

  versions() {
    return { ...baseVersions(), llhttp: process.versions.llhttp };
  }

  async open(job) {
    this.job = job;
    this.agents = nodeAgents(job);
  }

  async close() {
    for (const agent of Object.values(this.agents ?? {})) agent.destroy();
    this.agents = null;
  }
}

/** Headers every request of the job carries for keep-alive: `Connection: close` when it is off.
 * An Agent without keepAlive but with a finite maxSockets still asks for keep-alive (and reuses
 * a socket when a request is waiting), so the header is what makes it one connection per request. */
export function connectionHeaders(job) {
  return job.keepAlive ? {} : { connection: 'close' };
}

/* ---------------------------------------------------------------- undici */

/**
 * Options for an undici Pool or Agent (the built-in one behind fetch, or the npm package):
 * undici's own number of connections per origin (unlimited) unless the job's
 * max_host_connections names one. The job's concurrency is what is in flight (runAll's workers),
 * not a cap on connections: with its default undici sends a sequential loop's next request on a
 * second connection while the first is still being released, and alternates between the two;
 * capped at one, the request waits in the pool for the connection's drain, an extra turn of the
 * event loop a request. Keep-alive off is `pipelining: 0`, undici's
 * documented way to close the connection after every request (it then sends Connection: close);
 * HTTP/2 is `allowH2` (its connector offers http/1.1 and h2 whatever the connect options say: a
 * connection that falls back is closed by ConnectionVersions), h2c is the connector's `useH2c`
 * (npm undici 7 only); the job's CA goes to the connector (tls.connect's `ca`, verification stays
 * on); the job's time limit, when it names one, is undici's headers and body timeouts (else
 * undici's own, 300 s each). undici always sets
 * TCP_NODELAY on its sockets.
 */
export function undiciOptions(job) {
  const options = {
    connections: job.option('max_host_connections') ?? null,
    allowH2: job.http !== '1.1',
    connect: { ca: job.ca() },
    ...job.timeoutOptions('headersTimeout', 'bodyTimeout'),
  };
  if (!job.keepAlive) options.pipelining = 0;
  else if (job.http === '1.1') options.pipelining = 1; // over HTTP/2 undici's default: up to maxConcurrentStreams streams
  if (job.http === 'h2c') options.connect.useH2c = true;
  return options;
}


/**
 * The HTTP version of undici's connections. Neither fetch's Response nor undici's request()
 * says which version a response came in, but undici publishes every connection it makes on the
 * diagnostics channel `undici:client:connected` with its version ("h1" or "h2", from ALPN).
 * The label is that version when all of the job's connections agree, which they do when every
 * request goes to one origin with one setting; otherwise it says so, and verification fails.
 *
 * On an HTTP/2 job a connection on which ALPN fell back to HTTP/1.1 is destroyed as soon as it
 * is published, before undici writes a request on it: every request undici gives it fails with
 * that error, so no HTTP/1.1 response passes for HTTP/2 work.
 */
export class ConnectionVersions {
  constructor() {
    this.seen = new Set();
    this.required = null; // '2' on an HTTP/2 or h2c job
    diagnostics.subscribe('undici:client:connected', ({ connectParams, socket }) => {
      const version = httpLabel(connectParams.version);
      if (this.required !== null && version !== this.required) {
        socket.destroy(new Error(`the server chose HTTP/${version} (ALPN ${socket.alpnProtocol || 'none'}) on an `
          + `HTTP/${this.required} job; undici offers h2 only beside http/1.1, so the connection is closed`));
        return;
      }
      this.seen.add(version);
    });
  }

  /** Forget the connections of the last job; `job` says which version its connections need. */
  reset(job) {
    this.seen.clear();
    this.required = job.http === '1.1' ? null : '2';
  }

  /** The version of every response so far. */
  get label() {
    if (this.seen.size === 1) return this.seen.values().next().value;
    return `unknown (connections: ${[...this.seen].join(', ') || 'none'})`;
  }
}

/**
 * A driver on undici: the options it honours (it sets TCP_NODELAY on every socket, so true is
 * what it does and false cannot be; it sends no Expect: 100-continue and refuses an Expect header
 * over HTTP/1.1), no connection per request over HTTP/2, and `httpVersion`, the version of the
 * responses (see ConnectionVersions). A subclass's `open` calls `super.open(job)` first.
 */
export class UndiciDriver extends Driver {
  // accept_encoding "library": undici's Pool sends no Accept-Encoding and decodes nothing by
  // itself, as a job without accept_gzip does already (fetch sets its own: labfetch.mjs)
  options = { tcp_nodelay: [true], max_host_connections: null, expect_100: [false], accept_encoding: LIBRARY_ENCODING };
  connections = new ConnectionVersions();

  refuse(job) {
    if (!job.keepAlive && job.http !== '1.1') return 'keep-alive off over HTTP/2: undici keeps its HTTP/2 session';
    return null;
  }

  async open(job) {
    this.job = job;
    this.connections.reset(job);
  }

  /** The HTTP version of the job's responses. */
  get httpVersion() {
    return this.connections.label;
  }
}

/* ---------------------------------------------------------------- multipart by hand */

/** A form field name in a Content-Disposition header, escaped as the HTML standard says. */
function quoteName(name) {
  return name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** `form` as a multipart/form-data body (plain fields, no file names) and its content type. */
export function multipartBody(form) {
  const boundary = `----clientlab${randomBytes(12).toString('hex')}`;
  const parts = Object.entries(form).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${quoteName(name)}"\r\n\r\n${value}\r\n`,
  );
  return { body: Buffer.from(`${parts.join('')}--${boundary}--\r\n`), contentType: `multipart/form-data; boundary=${boundary}` };
}
