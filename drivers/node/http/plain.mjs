// node-http's plain loop (docs/driver-protocol.md §9): http.get() as Node's docs show it.
// Usage: node plain.mjs URL COUNT keep-alive|close WARMUP_S
import http from 'node:http';

const [url, count, mode, warmupS] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
if (mode !== 'keep-alive' && mode !== 'close') {
  console.error(`mode must be keep-alive or close, not ${mode}`);
  process.exit(1);
}
// keep-alive: the global Agent (keepAlive on since Node 19); close: agent false, a connection
// of its own per request with Connection: close
const options = mode === 'close' ? { agent: false } : {};

function get() {
  return new Promise((resolve, reject) => {
    http.get(url, options, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        if (res.statusCode !== 200) reject(new Error(`${url} answered ${res.statusCode}`));
        else resolve(body.length);
      });
      res.on('error', reject);
    }).on('error', reject);
  });
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
  console.error(`node-http plain loop: ${err?.message ?? err}`);
  process.exit(1);
}
