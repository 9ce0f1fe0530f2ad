#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// Load test for `brisk serve` (or any OpenAI-compatible server): streaming
// completions from 1, 8 and 32 concurrent clients; reports aggregate
// generated tokens/s, time to first token p50/p99 and errors per level.
//
//   node scripts/serve_load.mjs --url http://127.0.0.1:8080 [--levels 1,8,32]
//        [--requests-per-client 4] [--max-tokens 128] [--prompt TEXT]
//        [--system-tokens N] [--api-key KEY] [--chat] [--json]
//
// --system-tokens N puts the same N-word system prompt in front of every
// request (a shared prefix, to measure the prefix cache). No dependencies:
// Node 18+'s fetch.
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    levels: { type: 'string', default: '1,8,32' },
    'requests-per-client': { type: 'string', default: '4' },
    'max-tokens': { type: 'string', default: '128' },
    prompt: { type: 'string', default: 'Once upon a time, there was a little' },
    'system-tokens': { type: 'string', default: '0' },
    'api-key': { type: 'string', default: process.env.OPENAI_API_KEY || '' },
    chat: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log('usage: node scripts/serve_load.mjs --url URL [--levels 1,8,32] [--requests-per-client N] [--max-tokens N] [--system-tokens N] [--chat] [--json]');
  process.exit(0);
}

const maxTokens = Number(opt['max-tokens']);
const perClient = Number(opt['requests-per-client']);
const system = Array.from({ length: Number(opt['system-tokens']) }, (_, i) => `word${i % 50}`).join(' ');

function body(i) {
  const common = { model: 'default', max_tokens: maxTokens, temperature: 0.8, seed: i, stream: true,
    stream_options: { include_usage: true } };
  if (opt.chat) {
    const messages = system ? [{ role: 'system', content: system }] : [];
    messages.push({ role: 'user', content: `${opt.prompt} (${i})` });
    return { ...common, messages };
  }
  return { ...common, prompt: `${system ? system + '\n' : ''}${opt.prompt}` };
}

async function one(i) {
  const t0 = performance.now();
  const headers = { 'content-type': 'application/json' };
  if (opt['api-key']) headers.authorization = `Bearer ${opt['api-key']}`;
  const path = opt.chat ? '/v1/chat/completions' : '/v1/completions';
  let res;
  try {
    res = await fetch(opt.url + path, { method: 'POST', headers, body: JSON.stringify(body(i)) });
  } catch (e) {
    return { error: `connect: ${e.cause?.code || e.message}` };
  }
  if (res.status !== 200) {
    await res.text().catch(() => '');
    return { error: `HTTP ${res.status}` };
  }
  let ttft = null;
  let tokens = 0;
  let buf = '';
  const decoder = new TextDecoder();
  try {
    for await (const part of res.body) {
      buf += decoder.decode(part, { stream: true });
      let k;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, k);
        buf = buf.slice(k + 2);
        if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
        const j = JSON.parse(ev.slice(6));
        if (j.error) return { error: `stream: ${j.error.type}` };
        const c = j.choices?.[0];
        if (ttft === null && c && (c.text || c.delta?.content)) ttft = performance.now() - t0;
        if (j.usage) tokens = j.usage.completion_tokens;
      }
    }
  } catch (e) {
    return { error: `stream broken: ${e.cause?.code || e.message}` };
  }
  return { ttft, tokens, ms: performance.now() - t0 };
}

function pct(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const results = [];
for (const level of opt.levels.split(',').map(Number)) {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: level }, async (_, c) => {
    const out = [];
    for (let r = 0; r < perClient; r++) out.push(await one(c * 1000 + r));
    return out;
  }));
  const wall = (performance.now() - t0) / 1000;
  const flat = all.flat();
  const ok = flat.filter((r) => !r.error);
  const errors = {};
  for (const r of flat) if (r.error) errors[r.error] = (errors[r.error] || 0) + 1;
  const ttfts = ok.map((r) => r.ttft).filter((x) => x !== null).sort((a, b) => a - b);
  const tokens = ok.reduce((s, r) => s + r.tokens, 0);
  const row = {
    clients: level, requests: flat.length, ok: ok.length, errors,
    tokens, seconds: Number(wall.toFixed(2)), tokens_per_s: Number((tokens / wall).toFixed(1)),
    ttft_p50_ms: ttfts.length ? Number(pct(ttfts, 50).toFixed(1)) : null,
    ttft_p99_ms: ttfts.length ? Number(pct(ttfts, 99).toFixed(1)) : null,
  };
  results.push(row);
  if (!opt.json) {
    const errText = Object.keys(errors).length ? JSON.stringify(errors) : 'none';
    console.log(`${String(level).padStart(3)} clients: ${row.tokens_per_s} tokens/s aggregate, ` +
      `TTFT p50 ${row.ttft_p50_ms} ms p99 ${row.ttft_p99_ms} ms, ${row.ok}/${row.requests} ok, errors: ${errText}`);
  }
}
if (opt.json) console.log(JSON.stringify(results, null, 2));
