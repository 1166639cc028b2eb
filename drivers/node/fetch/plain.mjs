// node-fetch's plain loop (docs/driver-protocol.md §9): Node's global fetch as its docs show it.
// Usage: node plain.mjs URL COUNT keep-alive|close WARMUP_S
const [url, count, mode, warmupS] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];

// keep-alive: fetch's own global dispatcher. close: an Agent of Node's bundled undici with
// pipelining 0 (undici's way to close after each request), as the driver does for keep-alive
// off; Node exports no Agent, so its class is taken from the global dispatcher fetch sets up.
let dispatcher;
if (mode === 'close') {
  await fetch('data:,');
  const key = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')].find((s) => globalThis[s]);
  dispatcher = new globalThis[key].constructor({ pipelining: 0 });
} else if (mode !== 'keep-alive') {
  console.error(`mode must be keep-alive or close, not ${mode}`);
  process.exit(1);
}

async function get() {
  const res = await fetch(url, { dispatcher });
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
