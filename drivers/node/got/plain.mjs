// node-got's plain loop (docs/driver-protocol.md §9): got() as its README shows it.
// Usage: node plain.mjs URL COUNT keep-alive|close WARMUP_S
import http from 'node:http';

import got from 'got';

const [url, count, mode, warmupS] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
if (mode !== 'keep-alive' && mode !== 'close') {
  console.error(`mode must be keep-alive or close, not ${mode}`);
  process.exit(1);
}
// keep-alive: Node's global Agent (keepAlive on since Node 19), got's default; close: an Agent
// without keep-alive, which sends Connection: close and opens a connection per request
const options = { responseType: 'buffer' };
if (mode === 'close') options.agent = { http: new http.Agent({ keepAlive: false }) };

async function get() {
  const res = await got(url, options); // throws on a status outside 2xx
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  return res.body.length;
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
  console.error(`node-got plain loop: ${err?.message ?? err}`);
  process.exit(1);
}
