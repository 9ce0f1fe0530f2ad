// SPDX-License-Identifier: MIT
// Continuous batching: a long prompt is read in chunks between the decode
// steps of a running stream (it does not freeze it); --parallel auto.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, metric, sleep } from './harness.mjs';

async function* events(res) {
  const dec = new TextDecoder();
  let buf = '';
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (ev === 'data: [DONE]') return;
      if (ev.startsWith('data: ')) yield JSON.parse(ev.slice(6));
    }
  }
}

test('a long prompt does not stop another stream while it is read', async () => {
  // 16 tokens per step: a ~1500-token prompt takes ~95 steps to read.
  const s = await startServer(['--parallel', '2', '-b', '16', '--cache-slots', '0']);
  try {
    const post = (body) => fetch(`${s.base}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const running = await post({ prompt: 'Once upon a time', max_tokens: 1500, temperature: 0, stream: true });
    const it = events(running);
    // Let the first stream get going.
    for (let i = 0; i < 5; i++) await it.next();
    const longPrompt = 'The cat sat on the mat. '.repeat(150);
    const longReq = post({ prompt: longPrompt, max_tokens: 1, temperature: 0 });
    // Count the first stream's completion tokens while the long one is read:
    // with the engine's chunked prefill it keeps getting one token per step.
    const long = await (await longReq).json();
    assert.ok(long.usage.prompt_tokens > 1000, `long prompt: ${long.usage.prompt_tokens} tokens`);
    let got = 0;
    for await (const ev of it) {
      got++;
      if (ev.choices[0]?.finish_reason) break;
    }
    // The access log line follows the end of the response.
    let log, longLine, runLine;
    for (const until = Date.now() + 5000; Date.now() < until; await sleep(20)) {
      log = s.logs.filter((l) => l.event === 'request');
      longLine = log.find((l) => l.prompt_tokens > 1000);
      runLine = log.find((l) => l.prompt_tokens < 20);
      if (longLine && runLine) break;
    }
    assert.ok(longLine && runLine, 'both requests are logged');
    assert.ok(log.indexOf(longLine) < log.indexOf(runLine), 'the stream was still running when the long prompt finished');
    // The stream started before the long prompt and produced tokens during
    // its ~90 steps of reading: its TTFT-to-end window overlaps, and it was
    // not held back until the long prompt was read.
    const prefillSteps = Math.ceil(long.usage.prompt_tokens / 16);
    assert.ok(runLine.completion_tokens > prefillSteps, 'the stream kept going');
    // The stream's chunks kept arriving while the long prompt was read: the
    // steps that read it each carried a decode token of the stream.
    const stepCount = await metric(s.base, 'brisk_step_seconds_count');
    assert.ok(stepCount < runLine.completion_tokens + prefillSteps, `steps ${stepCount}: prompt chunks shared steps with decoding`);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('--parallel auto takes what the memory plan allows', async () => {
  const s = await startServer(['--parallel', 'auto', '-c', '256']);
  try {
    const ready = s.logs.find((l) => l.event === 'ready');
    assert.ok(ready.parallel >= 1 && ready.parallel <= 32, JSON.stringify(ready));
    assert.equal(await metric(s.base, 'brisk_parallel_slots'), ready.parallel);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});
