// The golden transcript (drivers/contract/transcript.json) through the helper's message loop:
// each case's lines to contract-driver.mjs (the transcript's contract client on labdriver.mjs),
// its answers compared with the case's. Run: node --test drivers/node/_lib/test/transcript.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const transcript = JSON.parse(readFileSync(new URL('../../../contract/transcript.json', import.meta.url)));
const driver = fileURLToPath(new URL('./contract-driver.mjs', import.meta.url));

/** The transcript's comparison: equal JSON, where a <...> string in `want` is a pattern. */
function matches(want, got) {
  if (typeof want === 'string' && want.startsWith('<') && want.endsWith('>')) {
    if (want === '<any string>') return typeof got === 'string';
    if (want === '<any number>') return typeof got === 'number' && got >= 0;
    if (want.startsWith('<text with: ')) return typeof got === 'string' && got.includes(want.slice(12, -1));
  }
  if (Array.isArray(want)) {
    return Array.isArray(got) && got.length === want.length && want.every((w, i) => matches(w, got[i]));
  }
  if (want !== null && typeof want === 'object') {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
    const rest = want['<more>'];
    return Object.entries(want).every(([k, v]) => k === '<more>' || (Object.hasOwn(got, k) && matches(v, got[k])))
      && Object.entries(got).every(([k, v]) => Object.hasOwn(want, k) || (rest !== undefined && matches(rest, v)));
  }
  return want === got;
}

for (const c of transcript.cases) {
  test(c.name, () => {
    const input = c.lab.map((m) => `${typeof m === 'string' ? m : JSON.stringify(m)}\n`).join('');
    const run = spawnSync(process.execPath, [driver], { input, encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, `the driver exited ${run.status}: ${run.stderr}`);
    const got = run.stdout.split('\n').filter((line) => line).map((line) => JSON.parse(line));
    assert.ok(matches(c.driver, got), `${c.about}\nwant ${JSON.stringify(c.driver)}\ngot  ${run.stdout}`);
  });
}

test('the comparison takes patterns and nothing else', () => {
  assert.ok(matches({ a: '<text with: bad>', '<more>': '<any string>' }, { a: 'a bad job', b: 'x' }));
  assert.ok(!matches({ a: 1 }, { a: 1, b: 'x' }));
  assert.ok(!matches([1, 2], [2, 1]) && !matches('<any number>', true) && !matches(true, 1));
});
