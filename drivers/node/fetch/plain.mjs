// node-fetch's plain loop (docs/driver-protocol.md §9): the runtime's global fetch as its docs
// show it, on Node.js, Bun or Deno.
// Usage: node plain.mjs URL COUNT keep-alive|close WARMUP_S
const [url, count, mode, warmupS] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
if (mode !== 'keep-alive' && mode !== 'close') {
  console.error(`mode must be keep-alive or close, not ${mode}`);
  process.exit(1);
}

// keep-alive: fetch's own defaults. close, each runtime's documented way to close after each
// request: Bun's `keepalive: false`; a Deno HttpClient that keeps no idle connection; on Node an
// Agent of its bundled undici with pipelining 0 (undici's way), as the driver does for keep-alive
// off: Node exports no Agent, so its class is taken from the global dispatcher fetch sets up.
let init = {};
if (mode === 'close') {
  if (globalThis.Bun) {
    init = { keepalive: false };
  } else if (globalThis.Deno) {
    init = { client: Deno.createHttpClient({ poolMaxIdlePerHost: 0 }) };
  } else {
    await fetch('data:,');
    const key = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')].find((s) => globalThis[s]);
    init = { dispatcher: new globalThis[key].constructor({ pipelining: 0 }) };
  }
}

async function get() {
  const res = await fetch(url, init);
  const body = await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return body.byteLength;
}

try {
  for (const until = performance.now() + warmupS * 1000; performance.now() < until;) await get();
  let bytes = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) bytes += await get();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(JSON.stringify({ requests: count, bytes, seconds }));
  process.exit(0);
} catch (err) {
  console.error(`node-fetch plain loop: ${err?.cause?.message ?? err?.message ?? err}`);
  process.exit(1);
}
