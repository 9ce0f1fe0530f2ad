// SPDX-License-Identifier: MIT
// Hostile and over-limit requests, authentication, a full queue and graceful
// shutdown: every case gets a 4xx/503 in OpenAI's error shape, never a crash.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, rawRequest, sleep, withTimeout, scratchDir } from './harness.mjs';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

let server;
before(async () => {
  server = await startServer(['--parallel', '2', '--max-body', '64K', '--max-tokens', '200']);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0);
});

async function post(path, body, headers = {}) {
  const r = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, json, text, headers: r.headers };
}

function assertError(r, status, pattern) {
  assert.equal(r.status, status, r.text);
  assert.equal(typeof r.json?.error?.message, 'string', r.text);
  assert.equal(typeof r.json.error.type, 'string');
  if (pattern) assert.match(r.json.error.message, pattern);
}

test('bad requests get 400 with a clear message', async () => {
  const P = '/v1/completions';
  const C = '/v1/chat/completions';
  assertError(await post(P, '{"prompt": "hi", '), 400, /JSON/);
  assertError(await post(P, '[1,2]'), 400, /object/);
  assertError(await post(P, '{}'), 400, /prompt/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', n: 2 })), 400, /n=1/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', temperature: 'hot' })), 400, /temperature/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', temperature: 7 })), 400, /temperature/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', max_tokens: 1e6 })), 400, /max_tokens/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', max_tokens: -1 })), 400, /max_tokens/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', max_tokens: 2.5 })), 400, /max_tokens/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', stop: [1] })), 400, /stop/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', stop: ['a', 'b', 'c', 'd', 'e'] })), 400, /stop/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', stream: 'yes' })), 400, /stream/);
  assertError(await post(P, JSON.stringify({ prompt: 'hi', logprobs: 3 })), 400, /logprobs/);
  assertError(await post(P, JSON.stringify({ prompt: [99999999] })), 400, /token/);
  assertError(await post(P, JSON.stringify({ prompt: 'word '.repeat(3000) })), 400, /context/);
  assertError(await post(C, JSON.stringify({ messages: [] })), 400, /messages/);
  assertError(await post(C, JSON.stringify({ messages: 'hi' })), 400, /messages/);
  assertError(await post(C, JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] })), 400, /role/);
  assertError(await post(C, JSON.stringify({ messages: [{ role: 'user', content: 5 }] })), 400, /content/);
  assertError(await post(C, JSON.stringify({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function' }] })), 400, /tools/);
  // Deep nesting: refused, without exhausting the stack.
  // (within this server's 64 KiB --max-body)
  assertError(await post(P, '['.repeat(30000) + ']'.repeat(30000)), 400);
  assertError(await post(P, '{"prompt": ' + '['.repeat(30000) + ']'.repeat(30000) + '}'), 400, /prompt/);
  assertError(await post(C, '{"messages": [' + '{"a":'.repeat(10000) + '1' + '}'.repeat(10000) + ']}'), 400, /messages/);
  // Invalid UTF-8 inside a JSON string.
  const bad = Buffer.concat([Buffer.from('{"prompt": "ab'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
  assertError(await post(P, bad), 400, /JSON/);
});

test('limits: body size, unknown routes', async () => {
  const big = JSON.stringify({ prompt: 'x'.repeat(100 * 1024) });
  const r = await post('/v1/completions', big);
  assert.equal(r.status, 413);
  const nf = await fetch(`${server.base}/v1/nothing`);
  assert.equal(nf.status, 404);
  assert.equal(typeof (await nf.json()).error.message, 'string');
});

test('junk HTTP gets a 4xx or a closed connection, and the server lives on', async () => {
  const cases = [
    'GARBAGE\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n',
    'GET / HTTP/9.9\r\n' + 'X: y\r\n'.repeat(10) + '\r\n',
    '\x00\x01\x02\x03\xff\xfe\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\n' + 'A'.repeat(20000) + '\r\n\r\n',
  ];
  for (const c of cases) {
    const reply = await rawRequest(server.port, Buffer.from(c, 'latin1'), { endAfterWrite: true });
    if (reply.length) assert.match(reply, /^HTTP\/1\.[01] [45]\d\d/, `reply to ${JSON.stringify(c.slice(0, 40))}: ${reply.slice(0, 80)}`);
  }
  // A request that stops half-way through its body.
  await rawRequest(server.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"prompt":', { endAfterWrite: true });
  const ok = await rawRequest(server.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(ok, /^HTTP\/1\.1 200/);
});

test('API key: required on /v1, compared exactly; /health stays open', async () => {
  const keyFile = join(scratchDir(), 'key');
  writeFileSync(keyFile, 'sk-test-123\n');
  const s = await startServer(['--api-key-file', keyFile, '--parallel', '1']);
  try {
    for (const key of ['wrong', 'sk-test-12', 'sk-test-1234', '']) {
      const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: key || 'x', maxRetries: 0 });
      await assert.rejects(c.completions.create({ model: 'm', prompt: 'hi', max_tokens: 2 }), (e) => e.status === 401);
    }
    const none = await fetch(`${s.base}/v1/models`);
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, 'invalid_api_key');
    const good = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'sk-test-123', maxRetries: 0 });
    const r = await good.completions.create({ model: 'm', prompt: 'hi', max_tokens: 2 });
    assert.equal(r.object, 'text_completion');
    assert.equal((await fetch(`${s.base}/health`)).status, 200);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('a full queue answers 503 with Retry-After; nothing is lost', async () => {
  const s = await startServer(['--parallel', '1', '--max-queue', '1', '--cache-slots', '0']);
  try {
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 150, temperature: 0 });
    const results = await Promise.all(Array.from({ length: 6 }, () =>
      fetch(`${s.base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), json: await r.json() }))));
    const busy = results.filter((r) => r.status === 503);
    const ok = results.filter((r) => r.status === 200);
    assert.equal(busy.length + ok.length, results.length, JSON.stringify(results.map((r) => r.status)));
    assert.ok(busy.length >= 1, 'some were refused');
    assert.ok(ok.length >= 2, 'the running one and the queued one finished');
    for (const b of busy) {
      assert.equal(b.retry, '1');
      assert.match(b.json.error.message, /busy/);
    }
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('per-request timeout ends a long request with 504', async () => {
  const s = await startServer(['--parallel', '1', '--timeout', '0.3', '-c', '512']);
  try {
    const r = await fetch(`${s.base}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once', max_tokens: 200, temperature: 0 }),
    });
    // stories260K is fast: either it finished in time or it was cut off.
    assert.ok([200, 504].includes(r.status));
    if (r.status === 504) assert.match((await r.json()).error.message, /timeout/);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('SIGTERM: refuses new requests, finishes those in flight, exits 0', async () => {
  const s = await startServer(['--parallel', '2']);
  const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'x', maxRetries: 0 });
  const stream = await c.completions.create({ model: 'm', prompt: 'Once upon a time', max_tokens: 200, temperature: 0, stream: true });
  let text = '';
  let finish = null;
  let signalled = false;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) { text += ch.text; if (ch.finish_reason) finish = ch.finish_reason; }
    if (!signalled) {
      signalled = true;
      s.proc.kill('SIGTERM');
      await sleep(100);
      const h = await fetch(`${s.base}/health`).catch(() => null);
      if (h) assert.equal(h.status, 503, 'health turns 503 while draining');
    }
  }
  assert.ok(['stop', 'length'].includes(finish), 'the stream in flight completed');
  const { code } = await withTimeout(s.exited, 30000, 'exit after SIGTERM');
  assert.equal(code, 0);
  assert.ok(s.logs.some((l) => l.event === 'draining'));
  assert.ok(s.logs.some((l) => l.event === 'stopped'));
});

test('SIGTERM: requests still running at the shutdown deadline are ended, exit 0', async () => {
  const s = await startServer(['--parallel', '2', '--shutdown-timeout', '0.5']);
  const res = await fetch(`${s.base}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 1900, temperature: 0, stream: true }),
  });
  assert.equal(res.status, 200);
  const dec = new TextDecoder();
  let body = '';
  let signalled = false;
  for await (const part of res.body) {
    body += dec.decode(part, { stream: true });
    if (!signalled) {
      signalled = true;
      s.proc.kill('SIGTERM');
    }
  }
  const { code } = await withTimeout(s.exited, 30000, 'exit after the deadline');
  assert.equal(code, 0);
  assert.match(body, /shutting down/, 'the stream ends with an error event');
  assert.match(body, /data: \[DONE\]\n\n$/);
  assert.ok(s.logs.some((l) => l.event === 'shutdown_deadline'));
});
