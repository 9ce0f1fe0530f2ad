#!/usr/bin/env node
// SPDX-License-Identifier: MIT
// Load test for `brisk serve` (or any OpenAI-compatible server): streaming
// completions from 1, 8 and 32 concurrent clients; reports aggregate
// generated tokens/s, time to first token p50/p99 and errors per level.
//
//   node scripts/serve_load.mjs --url http://127.0.0.1:8080 [--levels 1,8,32]
//        [--requests-per-client 4] [--max-tokens 128] [--prompt TEXT]
//        [--system-tokens N] [--api-key KEY] [--chat] [--json]
//        [--duration S] [--rss-pid PID]
//
// --duration S keeps every client sending requests for S seconds instead of
// a fixed number each (a soak test); --rss-pid PID samples that local
// process's resident memory every 5 s and reports its first, largest and
// last values, and the growth between the first and last minute.
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
    duration: { type: 'string', default: '0' },
    'rss-pid': { type: 'string', default: '' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log('usage: node scripts/serve_load.mjs --url URL [--levels 1,8,32] [--requests-per-client N] [--max-tokens N] [--system-tokens N] [--chat] [--json] [--duration S] [--rss-pid PID]');
  process.exit(0);
}

const maxTokens = Number(opt['max-tokens']);
const duration = Number(opt.duration);
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
    return { error: `HTTP ${res.status}`, retryAfter: Number(res.headers.get('retry-after')) || 1 };
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

// Resident memory of a local process in MiB, or null once it is gone.
async function rssMiB(pid) {
  const { readFile } = await import('node:fs/promises');
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

function rssSummary(samples) {
  if (!samples.length) return null;
  const mib = samples.map((s) => s.mib);
  const minuteAvg = (from, to) => {
    const w = samples.filter((s) => s.t >= from && s.t < to).map((s) => s.mib);
    return w.length ? w.reduce((a, b) => a + b, 0) / w.length : null;
  };
  const end = samples[samples.length - 1].t;
  const first = minuteAvg(0, 60), last = minuteAvg(end - 60, end + 1);
  return {
    samples: samples.length, first_mib: Number(mib[0].toFixed(1)), max_mib: Number(Math.max(...mib).toFixed(1)),
    last_mib: Number(mib[mib.length - 1].toFixed(1)),
    first_to_last_minute_mib: first !== null && last !== null ? Number((last - first).toFixed(1)) : null,
  };
}

const results = [];
for (const level of opt.levels.split(',').map(Number)) {
  const t0 = performance.now();
  const samples = [];
  let sampling = null;
  if (opt['rss-pid']) {
    const sample = async () => {
      const mib = await rssMiB(opt['rss-pid']);
      if (mib !== null) samples.push({ t: (performance.now() - t0) / 1000, mib });
    };
    await sample();
    sampling = setInterval(sample, 5000);
  }
  const more = (r) => (duration > 0 ? performance.now() - t0 < duration * 1000 : r < perClient);
  const all = await Promise.all(Array.from({ length: level }, async (_, c) => {
    const out = [];
    for (let r = 0; more(r); r++) {
      const res = await one(c * 1000000 + r);
      out.push(res);
      // A busy server (503) asked to be left alone for a while.
      if (res.error === 'HTTP 503') await new Promise((ok) => setTimeout(ok, res.retryAfter * 1000));
    }
    return out;
  }));
  if (sampling) clearInterval(sampling);
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
  if (opt['rss-pid']) row.rss = rssSummary(samples);
  results.push(row);
  if (!opt.json) {
    const errText = Object.keys(errors).length ? JSON.stringify(errors) : 'none';
    console.log(`${String(level).padStart(3)} clients: ${row.tokens_per_s} tokens/s aggregate, ` +
      `TTFT p50 ${row.ttft_p50_ms} ms p99 ${row.ttft_p99_ms} ms, ${row.ok}/${row.requests} ok, errors: ${errText}`);
    if (row.rss) console.log(`    server RSS MiB: first ${row.rss.first_mib}, max ${row.rss.max_mib}, last ` +
      `${row.rss.last_mib}, last minute minus first minute ${row.rss.first_to_last_minute_mib}`);
  }
}
if (opt.json) console.log(JSON.stringify(results, null, 2));
