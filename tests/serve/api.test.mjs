// SPDX-License-Identifier: MIT
// The OpenAI routes of `brisk serve`, driven by the official openai client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, briskRun, metric, sleep } from './harness.mjs';

let server;
let client;

before(async () => {
  server = await startServer(['--parallel', '4', '--cache-slots', '4']);
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'brisk serve exits 0 after SIGTERM');
});

const PROMPT = 'Once upon a time, there was a little';

test('health, models and metrics', async () => {
  const h = await fetch(`${server.base}/health`);
  assert.equal(h.status, 200);
  assert.equal((await h.json()).status, 'ok');
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(typeof models.data[0].id, 'string');
  const m = await (await fetch(`${server.base}/metrics`)).text();
  for (const name of ['brisk_requests_total', 'brisk_queue_depth', 'brisk_active_sequences', 'brisk_step_seconds_bucket',
    'brisk_generation_tokens_per_second', 'brisk_prefix_cache_hits_total', 'brisk_prompt_tokens_total'])
    assert.match(m, new RegExp(`^${name}`, 'm'), `metric ${name}`);
});

test('greedy completion equals brisk run', async () => {
  const expected = briskRun(PROMPT, 40);
  const r = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 40, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].text, expected);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 1);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 40);
});

test('streamed completion equals the whole one, ends with [DONE] and usage', async () => {
  const whole = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 30, temperature: 0 });
  const stream = await client.completions.create({
    model: 'm', prompt: PROMPT, max_tokens: 30, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    chunks++;
  }
  assert.ok(chunks > 2, 'several chunks');
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
});

test('raw SSE framing: data lines and a final [DONE]', async () => {
  const r = await fetch(`${server.base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: PROMPT, max_tokens: 5, temperature: 0, stream: true }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const body = await r.text();
  const events = body.split('\n\n').filter((e) => e.length);
  assert.equal(events.at(-1), 'data: [DONE]');
  for (const e of events.slice(0, -1)) JSON.parse(e.replace(/^data: /, ''));
});

test('chat completion, whole and streamed', async () => {
  const messages = [
    { role: 'system', content: 'You tell short stories.' },
    { role: 'user', content: 'Tell me about a cat.' },
  ];
  const r = await client.chat.completions.create({ model: 'm', messages, max_tokens: 20, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.usage.prompt_tokens > 5);
  const stream = await client.chat.completions.create({ model: 'm', messages, max_tokens: 20, temperature: 0, stream: true });
  let text = '';
  let role = null;
  let finish = null;
  for await (const c of stream) {
    const d = c.choices[0];
    if (!d) continue;
    if (d.delta.role) role = d.delta.role;
    if (d.delta.content) text += d.delta.content;
    if (d.finish_reason) finish = d.finish_reason;
  }
  assert.equal(role, 'assistant');
  assert.equal(text, r.choices[0].message.content);
  assert.equal(finish, r.choices[0].finish_reason);
});

test('stop strings end the text before them, across token boundaries', async () => {
  const full = (await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 40, temperature: 0 })).choices[0].text;
  assert.ok(full.length > 30, `a long enough completion: ${JSON.stringify(full)}`);
  // A stop string that starts mid-word and spans several characters (so,
  // with a 512-token vocabulary, several tokens).
  const stop = full.slice(12, 19);
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 40, temperature: 0, stop: ['zzzz-never', stop] });
  assert.equal(r.choices[0].text, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(r.usage.completion_tokens < 40);
  const s = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 40, temperature: 0, stop, stream: true });
  let text = '';
  let finish = null;
  for await (const c of s) for (const ch of c.choices) { text += ch.text; if (ch.finish_reason) finish = ch.finish_reason; }
  assert.equal(text, expected);
  assert.equal(finish, 'stop');
});

test('max_tokens gives finish_reason length and that many tokens', async () => {
  const r = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 3, temperature: 0 });
  if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 3);
  else assert.ok(r.usage.completion_tokens <= 3);
});

test('seeded sampling repeats; penalties are accepted', async () => {
  const a = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 20, temperature: 1.0, top_p: 0.9, seed: 42 });
  const b = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 20, temperature: 1.0, top_p: 0.9, seed: 42 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  const greedy = await client.completions.create({ model: 'm', prompt: PROMPT, max_tokens: 30, temperature: 0 });
  const penalised = await client.completions.create({
    model: 'm', prompt: PROMPT, max_tokens: 30, temperature: 0, frequency_penalty: 2, presence_penalty: 2,
  });
  assert.notEqual(penalised.choices[0].text, greedy.choices[0].text, 'penalties change greedy text');
});

test('a repeated prompt reuses the cached prefix', async () => {
  const prompt = 'The little dog ran to the park and saw a big red ball. The dog';
  const hits0 = await metric(server.base, 'brisk_prefix_cache_hits_total');
  const first = await client.completions.create({ model: 'm', prompt, max_tokens: 10, temperature: 0 });
  const second = await client.completions.create({ model: 'm', prompt: prompt + ' was', max_tokens: 10, temperature: 0 });
  const third = await client.completions.create({ model: 'm', prompt, max_tokens: 10, temperature: 0 });
  assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0, 'extension hits the cache');
  // The entry for `prompt` gave way to the one extending it; all but the
  // last token (read again for its logits) come from there.
  assert.ok(third.usage.prompt_tokens_details.cached_tokens >= third.usage.prompt_tokens - 1, 'a repeated prompt is cached');
  const fourth = await client.completions.create({ model: 'm', prompt, max_tokens: 10, temperature: 0 });
  assert.equal(fourth.usage.prompt_tokens_details.cached_tokens, fourth.usage.prompt_tokens, 'an identical prompt is all cached');
  assert.equal(fourth.choices[0].text, first.choices[0].text);
  assert.equal(third.choices[0].text, first.choices[0].text, 'cached KV gives the same text');
  const expected = briskRun(prompt + ' was', 10);
  assert.equal(second.choices[0].text, expected, 'a fork cut back and extended gives brisk run\'s text');
  assert.ok((await metric(server.base, 'brisk_prefix_cache_hits_total')) >= hits0 + 2);
});

test('a burst sharing a long prefix reads it once', async () => {
  // Four requests at once (the server's --parallel) with the same long
  // beginning: one reads it into the cache, the others wait for it and fork.
  const shared = 'Once upon a time, in a small house near the woods, there lived a girl named Lily who loved to play ' +
    'with her red ball in the garden every day after lunch with her mother and her little brother Tim. One day,';
  const endings = [' Lily saw a bird', ' Tim found a cat', ' the sun was hot', ' mom made a cake'];
  const hits0 = await metric(server.base, 'brisk_prefix_cache_hits_total');
  const got = await Promise.all(endings.map((e) =>
    client.completions.create({ model: 'm', prompt: shared + e, max_tokens: 8, temperature: 0 })));
  const cached = got.map((r) => r.usage.prompt_tokens_details.cached_tokens);
  assert.equal(cached.filter((c) => c > 0).length, endings.length - 1, `cached tokens per request: ${cached}`);
  for (const c of cached) if (c > 0) assert.ok(c >= 40, `the shared part comes from the cache (${cached})`);
  assert.equal((await metric(server.base, 'brisk_prefix_cache_hits_total')) - hits0, endings.length - 1);
  for (let i = 0; i < endings.length; ++i)
    assert.equal(got[i].choices[0].text, briskRun(shared + endings[i], 8), 'a fork gives brisk run\'s text');
});

test('concurrent requests each get their own text', async () => {
  const prompts = ['The cat', 'A big tree', 'Lily had a', 'One day, Tom', 'The sun was', 'Max and Sue', 'In the sky', 'Once there'];
  const expected = [];
  for (const p of prompts) expected.push((await client.completions.create({ model: 'm', prompt: p, max_tokens: 24, temperature: 0 })).choices[0].text);
  const got = await Promise.all(prompts.map((p, i) =>
    i % 2
      ? client.completions.create({ model: 'm', prompt: p, max_tokens: 24, temperature: 0 }).then((r) => r.choices[0].text)
      : (async () => {
          let t = '';
          for await (const c of await client.completions.create({ model: 'm', prompt: p, max_tokens: 24, temperature: 0, stream: true }))
            for (const ch of c.choices) t += ch.text;
          return t;
        })()
  ));
  assert.deepEqual(got, expected);
});

test('a client that disconnects mid-stream frees its sequence', async () => {
  const ac = new AbortController();
  const stream = await client.completions.create(
    { model: 'm', prompt: PROMPT, max_tokens: 400, temperature: 0, stream: true },
    { signal: ac.signal }
  );
  let n = 0;
  try {
    for await (const c of stream) {
      if (++n === 3) ac.abort();
    }
  } catch (e) {
    assert.ok(ac.signal.aborted, `aborted: ${e}`);
  }
  const deadline = Date.now() + 10000;
  while ((await metric(server.base, 'brisk_active_sequences')) !== 0) {
    assert.ok(Date.now() < deadline, 'the sequence ends after the client leaves');
    await sleep(20);
  }
  await sleep(200);
  const line = server.logs.find((l) => l.event === 'request' && l.outcome === 'cancelled');
  assert.ok(line, 'the request log says cancelled');
  assert.ok(line.completion_tokens < 400);
});

test('a non-streaming client that hangs up is cancelled too', async () => {
  const { connect } = await import('node:net');
  const body = JSON.stringify({ prompt: PROMPT, max_tokens: 1500, temperature: 0 });
  const sock = connect(server.port, '127.0.0.1');
  await new Promise((r) => sock.on('connect', r));
  sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  await sleep(150);
  sock.destroy();
  const deadline = Date.now() + 10000;
  for (;;) {
    const line = server.logs.find((l) => l.event === 'request' && l.outcome === 'cancelled' && l.stream === false);
    if (line) {
      assert.ok(line.completion_tokens < 1500);
      break;
    }
    assert.ok(Date.now() < deadline, 'the request ends after its client leaves');
    await sleep(20);
  }
  assert.equal(await metric(server.base, 'brisk_active_sequences'), 0);
});

test('request log lines carry no prompt text by default', async () => {
  const secret = 'purple elephant secret';
  await client.completions.create({ model: 'm', prompt: secret, max_tokens: 2 });
  await sleep(100);
  const lines = server.logs.filter((l) => l.event === 'request');
  assert.ok(lines.length > 5);
  for (const l of lines) assert.ok(!JSON.stringify(l).includes('elephant'));
  const last = lines.at(-1);
  for (const k of ['id', 'status', 'prompt_tokens', 'cached_tokens', 'completion_tokens', 'total_ms']) assert.ok(k in last, k);
});
