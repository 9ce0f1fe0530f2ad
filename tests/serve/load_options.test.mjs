// SPDX-License-Identifier: MIT
// brisk serve takes the loading options of every command that runs a model:
// --mlock, --no-mmap, --plan, --plan-cache; a bad plan is a usage error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { BRISK, startServer, modelPath, scratchDir } from './harness.mjs';

test('a model read into memory, locked, on a plan measured and cached where asked, answers', async () => {
  const cache = join(scratchDir(), 'plans');
  const s = await startServer(['--no-mmap', '--mlock', '--plan', 'measure', '--plan-cache', cache]);
  try {
    const r = await fetch(`${s.base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 16, temperature: 0 }),
    });
    assert.equal(r.status, 200);
    // Not compared with brisk run's text: another plan may round differently.
    assert.ok((await r.json()).usage.completion_tokens > 0);
    assert.ok(existsSync(cache), 'the plan was cached under --plan-cache');
  } finally {
    await s.stop();
  }
});

test('--plan takes auto, fixed or measure', () => {
  const r = spawnSync(BRISK, ['serve', '-m', modelPath(), '--port', '0', '--plan', 'sometimes'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--plan must be auto, fixed or measure/);
});
