/**
 * clientlab driver: the runtime's own built-in fetch, on Node.js (undici inside Node), Bun (Bun's
 * own client) or Deno (Deno's, on hyper), one client per job, up to `concurrency` fetches in
 * flight. The request and the reading of the body are the same code on every runtime
 * (../_lib/labfetch.mjs); node.mjs, bun.mjs and deno.mjs hold what each runtime does its own way:
 * the per-job client that trusts the job's CA, a file sent as a body and a body streamed to a file.
 */

import { main } from '../_lib/labdriver.mjs'; // first: it moves stdout aside
import { runtime } from '../_lib/labfetch.mjs';

const { driver } = await import(`./${runtime()}.mjs`);
main(await driver());
