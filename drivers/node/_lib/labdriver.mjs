/**
 * labdriver: the clientlab driver protocol (docs/driver-protocol.md) for Node.js drivers.
 *
 * A driver extends `Driver`, says which job options it honours, and supplies three steps:
 * `open(job)` builds the client, `request(req)` does one request and returns a `Response`,
 * `close()` closes the client. `main(driver)` does the rest: hello / job / ready / go / done /
 * report, refusing jobs that set an option the driver does not honour (capabilities are the lab's
 * business: it sends no job that needs one the driver's `driver.toml` does not claim). Up to
 * `job.concurrency` requests run at once (one after another, in order, when it is 1). It also
 * answers `bare`, the calibration loop: the same requests on one client kept from round to round,
 * timed by the driver's own clock.
 *
 * Importing this module moves the real stdout aside: protocol lines are written to fd 1 with
 * fs.writeSync, while `process.stdout` (and so console.log) becomes stderr, so a library's stray
 * output cannot break the protocol. Import it before the client library.
 *
 * Node's standard library only: the fetch driver has no dependencies at all.
 */

import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync, statSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';

export const PROTOCOL = 1;

// Options known in protocol version 1 and the JSON type each value must have.
const OPTION_TYPES = {
  tcp_nodelay: 'boolean',
  max_host_connections: 'integer',
  share: 'list',
  expect_100: 'boolean',
  multi_api: 'string',
  accept_encoding: 'string',
};
/** accept_encoding = "library": the job leaves Accept-Encoding and decoding to the library as it
 * ships (docs/driver-protocol.md §3); a driver that honours it lists it with these values. */
export const LIBRARY_ENCODING = ['library'];
const HTTP_VERSIONS = ['1.1', '2', 'h2c'];

/* ---------------------------------------------------------------- stdout moved aside */

const PROTO_FD = 1;

/** Make `process.stdout` (and with it console.log, console.info…) write to stderr. The stream
 * on fd 1 is never created, so fd 1 stays the blocking pipe the lab handed over. */
function moveStdoutAside() {
  const stderr = process.stderr;
  Object.defineProperty(process, 'stdout', { configurable: true, enumerable: true, get: () => stderr });
  for (const name of ['log', 'info', 'debug', 'dir', 'table']) console[name] = console.error;
}
moveStdoutAside();

/** Write one protocol line to the lab's pipe, whole. */
function send(message) {
  const data = Buffer.from(JSON.stringify(message) + '\n');
  let done = 0;
  while (done < data.length) {
    try {
      done += writeSync(PROTO_FD, data, done, data.length - done);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // pipe full: wait 1 ms
    }
  }
}

/** One line on stderr (the lab keeps the last lines for its failure message). */
export function log(text) {
  process.stderr.write(`${text}\n`);
}

/* ---------------------------------------------------------------- the job */

/** A job that cannot be done exactly as asked: answered `unsupported`. */
export class Unsupported extends Error {}

/** A malformed job: answered `error`. */
class BadJob extends Error {}

function check(condition, message, Kind = BadJob) {
  if (!condition) throw new Kind(message);
}

function stringMap(value, what) {
  if (value === undefined || value === null) return {};
  check(typeof value === 'object' && !Array.isArray(value), `${what} must be an object`);
  for (const v of Object.values(value)) check(typeof v === 'string', `${what} values must be strings`);
  return { ...value };
}

/** One entry of `job.requests`, done `repeat` times; `r` is its index. */
export class Request {
  constructor(r, data) {
    check(data && typeof data === 'object', `request ${r} must be an object`);
    check(typeof data.method === 'string' && typeof data.url === 'string',
      `request ${r}: method and url must be strings`);
    this.r = r;
    this.method = data.method.toUpperCase();
    this.url = data.url;
    this.repeat = data.repeat ?? 1;
    check(Number.isInteger(this.repeat) && this.repeat >= 0, `request ${r}: repeat must be a count`);
    this.headers = stringMap(data.headers, `request ${r}: headers`);
    this.form = data.form == null ? null : stringMap(data.form, `request ${r}: form`);
    this.formEncoding = data.form_encoding || 'urlencoded';
    check(['urlencoded', 'multipart'].includes(this.formEncoding),
      `form_encoding '${this.formEncoding}' is not known`, Unsupported);
    this.bodyFile = data.body_file ?? null;
    this.contentType = data.content_type ?? null;
    check(!(this.form && this.bodyFile), `request ${r}: both form and body_file`);
    // true: follow; false: report the 3xx; null (absent): the URL does not redirect, and the
    // driver leaves its library's redirect setting as it ships
    this.followRedirects = data.follow_redirects ?? null;
    check(this.followRedirects === null || typeof this.followRedirects === 'boolean',
      `request ${r}: follow_redirects must be a boolean`);
    this.sink = data.sink || 'memory';
    check(['memory', 'file'].includes(this.sink), `sink '${this.sink}' is not known`, Unsupported);
    this.sinkPath = data.sink_path ?? null;
    check(this.sink !== 'file' || typeof this.sinkPath === 'string', `request ${r}: sink file without sink_path`);
  }

  /** True when the form goes as multipart/form-data. */
  get multipart() {
    return this.form !== null && this.formEncoding === 'multipart';
  }

  /** True when the body is streamed to `sinkPath`. */
  get toFile() {
    return this.sink === 'file';
  }

  /** True when the request carries a body (form or file). */
  get hasBody() {
    return this.form !== null || this.bodyFile !== null;
  }

  /** `bodyFile` as a stream, read while it is sent. */
  openBody() {
    return createReadStream(this.bodyFile, { highWaterMark: 64 * 1024 });
  }

  /** The form as a FormData (sent as multipart/form-data); `FormDataClass` is the global one
   * unless the library brings its own. */
  formData(FormDataClass = globalThis.FormData) {
    const data = new FormDataClass();
    for (const [name, value] of Object.entries(this.form)) data.append(name, value);
    return data;
  }

  /** The form urlencoded, as a string. */
  urlencoded() {
    return new URLSearchParams(this.form).toString();
  }

  /** The extra headers plus Content-Type and Content-Length for a raw `bodyFile` body (so it
   * goes with a length, not chunked, as its size is known). */
  uploadHeaders() {
    const headers = { ...this.headers };
    if (this.bodyFile) {
      if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
        headers['content-type'] = this.contentType || 'application/octet-stream';
      }
      headers['content-length'] = String(statSync(this.bodyFile).size);
    }
    return headers;
  }
}

/** A job (docs/driver-protocol.md §3) as typed fields. */
export class Job {
  constructor(data) {
    check(data && typeof data === 'object' && Array.isArray(data.requests), 'job must be an object with a requests list');
    this.scenario = data.scenario ?? '';
    this.verify = Boolean(data.verify);
    this.http = String(data.http ?? '1.1');
    check(HTTP_VERSIONS.includes(this.http), `http '${this.http}' is not known`, Unsupported);
    this.tlsCa = data.tls_ca ?? null;
    this.concurrency = data.concurrency ?? 1;
    check(Number.isInteger(this.concurrency) && this.concurrency >= 1, 'concurrency must be at least 1');
    this.keepAlive = Boolean(data.keep_alive ?? true);
    this.cookies = Boolean(data.cookies);
    this.acceptGzip = Boolean(data.accept_gzip);
    // null: the job names no time limit, and the library keeps its own default
    this.timeoutS = data.timeout_s == null ? null : Number(data.timeout_s);
    check(this.timeoutS === null || this.timeoutS > 0, 'timeout_s must be positive');
    check(data.options == null || (typeof data.options === 'object' && !Array.isArray(data.options)),
      'options must be an object');
    this.options = { ...(data.options ?? {}) };
    this.requests = data.requests.map((entry, r) => new Request(r, entry));
    this._ca = undefined;
  }

  /** The option's value, null when absent or null (the client's default). */
  option(name) {
    return this.options[name] ?? null;
  }

  /** Per-request time limit in milliseconds; null when the job names none. */
  get timeoutMs() {
    return this.timeoutS === null ? null : Math.ceil(this.timeoutS * 1000);
  }

  /** `{ [name]: timeoutMs }` for each name when the job names a time limit, else {} (the
   * library's own default stays). */
  timeoutOptions(...names) {
    return this.timeoutMs === null ? {} : Object.fromEntries(names.map((name) => [name, this.timeoutMs]));
  }

  /** The job leaves Accept-Encoding and decoding to the library as it ships (the option
   * accept_encoding = "library"): the driver sets no Accept-Encoding of its own. */
  get libraryEncoding() {
    return this.option('accept_encoding') === 'library';
  }

  /** `{ [name]: gzipHeader }`, or {} where the job leaves Accept-Encoding to the library. */
  encodingHeader(name = 'accept-encoding') {
    return this.libraryEncoding ? {} : { [name]: this.gzipHeader };
  }

  /** Accept-Encoding value: gzip when asked, else identity (for clients whose default asks for
   * compression; clients that send no Accept-Encoding need it only with accept_gzip). */
  get gzipHeader() {
    return this.acceptGzip ? 'gzip' : 'identity';
  }

  /** Connections a pool may open to one host: `concurrency`, or fewer when
   * max_host_connections says so. */
  get connections() {
    return Math.min(this.concurrency, this.option('max_host_connections') ?? Infinity);
  }

  /** Every origin the job's requests go to. */
  get origins() {
    return [...new Set(this.requests.map((req) => new URL(req.url).origin))];
  }

  /** The job's CA file (PEM), read once; undefined when there is none. */
  ca() {
    if (this._ca === undefined) this._ca = this.tlsCa ? readFileSync(this.tlsCa) : null;
    return this._ca ?? undefined;
  }

  /** How many requests in all, repeats included. */
  get total() {
    return this.requests.reduce((n, req) => n + req.repeat, 0);
  }

  /** Every request to do, in order, repeats expanded. */
  * work() {
    for (const req of this.requests) for (let i = 0; i < req.repeat; i++) yield req;
  }
}

/* ---------------------------------------------------------------- responses */

/** Normalise a library's idea of the HTTP version to "1.0", "1.1" or "2": accepts "1.1",
 * "2.0" (node:http's httpVersion), "HTTP/2", "h1"/"h2" (undici), 11/20. */
export function httpLabel(version) {
  const text = String(version).toUpperCase().replace(/^HTTP\//, '');
  return { 10: '1.0', 11: '1.1', 20: '2', '2.0': '2', H1: '1.1', H2: '2', H2C: '2' }[text] ?? text;
}

/** What one request got: final status, decoded body length, HTTP version, digest if verify. */
export class Response {
  constructor(status, bytes, http, sha256 = null) {
    this.status = status;
    this.bytes = bytes;
    this.http = httpLabel(http);
    this.sha256 = sha256;
  }

  /** A response whose whole (decoded) body is in memory (Buffer or Uint8Array). */
  static of(status, http, body, verify) {
    return new Response(status, body.byteLength, http, verify ? createHash('sha256').update(body).digest('hex') : null);
  }
}

/** Stream a body (a Node stream, a web ReadableStream or any async iterable of chunks) to
 * `req.sinkPath` as Node's users do, `pipeline(body, fs.createWriteStream(path))`, and resolve
 * to the Response: its size is what the file stream wrote; the digest, only when verifying, is
 * read back from the file once it is written, so nothing stands between body and file. */
export async function fileResponse(req, source, status, http, verify) {
  const file = createWriteStream(req.sinkPath);
  await pipeline(source, file);
  return new Response(status, file.bytesWritten, http, verify ? await fileDigest(req.sinkPath) : null);
}

/** sha256 of a file's content, in hex. */
export async function fileDigest(path) {
  const digest = createHash('sha256');
  for await (const chunk of createReadStream(path)) digest.update(chunk);
  return digest.digest('hex');
}

/** An HTTP/2 job's response that came in another version (an ALPN or server fall-back): the
 * request fails with this rather than count as HTTP/2 work. */
export class WrongVersion extends Error {
  constructor(asked, got) {
    super(`HTTP/${got} response on an HTTP/${asked === 'h2c' ? '2 (h2c)' : asked} job: the connection fell back`);
    this.name = 'WrongVersion';
  }
}

/** What a failed request's error says, with its cause chain (fetch says only "fetch failed"
 * and keeps the reason in `cause`). */
function failureMessage(err) {
  const parts = [];
  for (let e = err, depth = 0; e && depth < 4; e = e.cause, depth++) {
    const text = e instanceof Error ? `${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}` : String(e);
    if (text !== parts.at(-1)) parts.push(text);
  }
  return parts.join(' <- ').slice(0, 500);
}

/** Collects responses and errors in the report's wire format. */
export class Report {
  constructor(verify) {
    this.verify = verify;
    this.responses = [];
    this.errors = [];
  }

  /** Record one response. */
  add(req, resp) {
    const item = { r: req.r, status: resp.status, bytes: resp.bytes, http: resp.http };
    if (this.verify) item.sha256 = resp.sha256;
    this.responses.push(item);
  }

  /** Record one request that got no response. */
  fail(req, err) {
    this.errors.push({ r: req.r, message: failureMessage(err) });
  }
}

/** Counts responses and errors and keeps nothing else: the bare loop's stand-in for a Report,
 * so that the calibration loop pays for no report a plain program would not build. */
export class Tally {
  responses = 0;
  errors = 0;
  firstError = null;

  add(_req, _resp) {
    this.responses++;
  }

  fail(_req, err) {
    this.errors++;
    this.firstError ??= failureMessage(err);
  }
}

/* ---------------------------------------------------------------- the driver */

/** Versions every Node driver reports: the runtime and its TLS library. Bun and Deno answer
 * `process.versions.node` with the Node.js version they are compatible with, so the runtime that
 * ran is named beside it. */
export function baseVersions() {
  const versions = { node: process.versions.node, openssl: process.versions.openssl };
  if (globalThis.Bun) versions.bun = globalThis.Bun.version;
  if (globalThis.Deno) versions.deno = globalThis.Deno.version.deno;
  return versions;
}

/** The version of an installed package, read from its package.json beside the driver
 * (`node_modules/<name>/package.json`; some packages do not export that file). */
export function packageVersion(driverUrl, name) {
  return JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, driverUrl))).version;
}

/**
 * A driver: one client per job. Subclasses set `options` and override `versions`, `open`,
 * `request` and `close`; `refuse` may add per-job refusals, and `reuse` readies the bare loop's
 * kept client for a later round. `options` maps each option the driver honours to the values it
 * honours exactly, or to null for every valid value; any other non-null option is refused.
 */
export class Driver {
  options = {};

  /** Library versions for the hello message. */
  versions() {
    return baseVersions();
  }

  /** A reason this driver cannot do `job` exactly, or null. */
  refuse(_job) {
    return null;
  }

  /** Build and configure the client. No connection may be opened here. */
  async open(_job) {
    throw new Error('open() not implemented');
  }

  /** Do one request; throw on failure without a response (it becomes a report error). */
  async request(_req) {
    throw new Error('request() not implemented');
  }

  /** Close the client and every connection it holds. */
  async close() {}

  /** A later bare round's job for the client `open` built from the first round's: only the
   * server's port may differ. A client that takes any origin needs nothing. */
  async reuse(_job) {}

  /** Every request, up to `concurrency` at once (in order when it is 1), each one's outcome into
   * `report`: a Report in the timed phase, a Tally in the bare loop. On an HTTP/2 or h2c job a
   * response in another version is a failed request, never done work. */
  async runAll(job, report) {
    const work = job.work(); // shared by the workers: they take the next entry between awaits
    const h2 = job.http !== '1.1';
    const worker = async () => {
      for (const req of work) {
        try {
          const resp = await this.request(req);
          if (h2 && resp.http !== '2') throw new WrongVersion(job.http, resp.http);
          report.add(req, resp);
        } catch (err) {
          report.fail(req, err); // a failed request is reported, never fatal
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(job.concurrency, job.total)) }, worker));
  }
}

function typeOk(kind, value) {
  switch (kind) {
    case 'boolean': return typeof value === 'boolean';
    case 'integer': return Number.isInteger(value) && value >= 1;
    case 'list': return Array.isArray(value);
    case 'string': return typeof value === 'string';
    default: return true;
  }
}

/** Why a job cannot be done exactly (an option set that the driver does not honour), or null. */
export function refusal(job, honoured) {
  for (const name of Object.keys(job.options).sort()) {
    const value = job.options[name];
    if (value === null || value === undefined) continue;
    if (!Object.hasOwn(honoured, name)) return `option ${name} is not supported`;
    const kind = OPTION_TYPES[name];
    if (kind && !typeOk(kind, value)) return `option ${name} must be a ${kind}, got ${JSON.stringify(value)}`;
    const allowed = honoured[name];
    if (allowed && !allowed.includes(value)) {
      return `option ${name}=${JSON.stringify(value)} cannot be honoured (only ${allowed.map((v) => JSON.stringify(v)).join(', ')})`;
    }
  }
  return null;
}

/** The protocol message loop for one driver. */
class Loop {
  constructor(driver) {
    this.driver = driver;
    this.job = null; // the job that is ready, waiting for go
    this.bare = false; // the bare loop's client is built and kept for the next bare round
  }

  async closeClient() {
    try {
      await this.driver.close(); // no connection survives the job
    } catch (err) {
      log(`close failed: ${err?.stack ?? err}`);
    }
  }

  /** Close the client of a job waiting for go or of the bare loop, if there is one. */
  async release() {
    if (!this.job && !this.bare) return;
    this.job = null;
    this.bare = false;
    await this.closeClient();
  }

  /** The job, or null after answering why it is malformed or cannot be done. */
  parse(data) {
    try {
      return new Job(data);
    } catch (err) {
      if (err instanceof Unsupported) send({ type: 'unsupported', reason: err.message });
      else send({ type: 'error', message: `bad job: ${err.message}` });
      return null;
    }
  }

  /** Parse a job and build the client for it; null (after answering why) when it cannot be done. */
  async prepare(data) {
    const job = this.parse(data);
    if (!job) return null;
    const reason = refusal(job, this.driver.options) ?? this.driver.refuse(job);
    if (reason) {
      send({ type: 'unsupported', reason });
      return null;
    }
    try {
      await this.driver.open(job);
    } catch (err) {
      log(err?.stack ?? String(err));
      await this.closeClient();
      if (err instanceof Unsupported) send({ type: 'unsupported', reason: err.message });
      else send({ type: 'error', message: `building the client failed: ${err?.name}: ${err?.message}` });
      return null;
    }
    return job;
  }

  async onJob(data) {
    await this.release(); // a new job instead of go, or after bare rounds: drop that client
    this.job = await this.prepare(data);
    if (this.job) send({ type: 'ready' });
  }

  async onGo() {
    const job = this.job;
    this.job = null;
    if (!job) {
      send({ type: 'error', message: 'go without a ready job' });
      return;
    }
    const report = new Report(job.verify);
    await this.driver.runAll(job, report);
    send({ type: 'done' }); // before the report: serialising it is not timed
    send({ type: 'report', responses: report.responses, errors: report.errors });
    await this.closeClient();
  }

  /** One round of the calibration loop: the job's requests on the kept client (built by the
   * first round), timed by the driver's own clock, nothing kept but counts. */
  async onBare(data) {
    let job;
    if (this.bare) {
      job = this.parse(data);
      if (!job) return;
      try {
        await this.driver.reuse(job);
      } catch (err) {
        log(err?.stack ?? String(err));
        send({ type: 'error', message: `reusing the client failed: ${err?.name}: ${err?.message}` });
        return;
      }
    } else {
      await this.release(); // a job waiting for go: its client is not the bare loop's
      job = await this.prepare(data);
      if (!job) return;
      this.bare = true;
    }
    const tally = new Tally();
    const start = process.hrtime.bigint();
    await this.driver.runAll(job, tally);
    const wallS = Number(process.hrtime.bigint() - start) / 1e9;
    const answer = { type: 'bare', wall_s: wallS, requests: tally.responses, errors: tally.errors };
    if (tally.firstError !== null) answer.error = tally.firstError;
    send(answer);
  }

  async onLine(line) {
    if (!line.trim()) return;
    let message;
    try {
      message = JSON.parse(line);
      if (typeof message?.type !== 'string') throw new Error('no type');
    } catch {
      send({ type: 'error', message: `not a protocol message: ${JSON.stringify(line.slice(0, 200))}` });
      return;
    }
    if (message.type === 'hello') {
      send({ type: 'hello', protocol: PROTOCOL, versions: this.driver.versions() });
    } else if (message.type === 'job') {
      await this.onJob(message.job ?? {});
    } else if (message.type === 'go') {
      await this.onGo();
    } else if (message.type === 'bare') {
      await this.onBare(message.job ?? {});
    } else {
      send({ type: 'error', message: `unknown message type ${JSON.stringify(message.type)}` });
    }
  }
}

/** Run `driver` on stdin/stdout until end of input, then exit 0. */
export async function main(driver) {
  // a library's late error (a socket closed after its job) is logged, never fatal
  process.on('uncaughtException', (err) => log(`uncaught: ${err?.stack ?? err}`));
  process.on('unhandledRejection', (err) => log(`unhandled rejection: ${err?.stack ?? err}`));
  const loop = new Loop(driver);
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    await loop.onLine(line);
  }
  await loop.release();
  process.exit(0);
}
