// node-undici's plain loop (docs/driver-protocol.md §9): undici's request() as its README shows it.
// Usage: node plain.mjs URL COUNT keep-alive|close WARMUP_S
import { Agent, request } from 'undici';

const [url, count, mode, warmupS] = [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
if (mode !== 'keep-alive' && mode !== 'close') {
  console.error(`mode must be keep-alive or close, not ${mode}`);
  process.exit(1);
}
// keep-alive: undici's global dispatcher; close: pipelining 0, undici's way to close after each request
const dispatcher = mode === 'close' ? new Agent({ pipelining: 0 }) : undefined;

async function get() {
  const { statusCode, body } = await request(url, { dispatcher });
  const data = await body.arrayBuffer();
  if (statusCode !== 200) throw new Error(`${url} answered ${statusCode}`);
  return data.byteLength;
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
  console.error(`node-undici plain loop: ${err?.message ?? err}`);
  process.exit(1);
}
