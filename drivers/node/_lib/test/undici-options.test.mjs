// undiciOptions (labhttp.mjs): the number of connections is undici's own unless the job's
// max_host_connections names one. A job's concurrency is how many requests are in flight; capping
// undici's connections at it made a sequential job's every GET wait in the pool for the
// connection's release, where undici's default sends it on a second connection.
// Run: node --test drivers/node/_lib/test/undici-options.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Job } from '../labdriver.mjs';
import { undiciOptions } from '../labhttp.mjs';

const job = (extra) => new Job({ http: '1.1', requests: [{ method: 'GET', url: 'http://127.0.0.1:1/' }], ...extra });

test('a sequential job leaves the number of connections to undici', () => {
  assert.equal(undiciOptions(job({ concurrency: 1 })).connections, null);
});

test('a parallel job leaves the number of connections to undici', () => {
  assert.equal(undiciOptions(job({ concurrency: 8 })).connections, null);
});

test('max_host_connections caps the connections', () => {
  assert.equal(undiciOptions(job({ concurrency: 8, options: { max_host_connections: 2 } })).connections, 2);
});
