// SPDX-License-Identifier: MIT
// examples/deploy/nginx.conf in front of two `brisk serve` instances on
// loopback: one is killed mid-load; only requests in flight on it fail.
// nginx (Debian's package) runs as this user's process with its own prefix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, scratchDir, sleep, withTimeout } from './harness.mjs';

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
const EXAMPLE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'deploy', 'nginx.conf');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function startNginx(ports) {
  const prefix = join(scratchDir(), 'nginx');
  for (const d of ['', 'logs', 'tmp']) mkdirSync(join(prefix, d), { recursive: true });
  chmodSync(join(prefix, 'tmp'), 0o777);  // workers may run as another user when started by root
  const listen = await freePort();
  // The example as shipped, pointed at this test's ports.
  let site = readFileSync(EXAMPLE, 'utf8');
  site = site.replace(/^\s*server 127\.0\.0\.1:\d+ .*$/gm, '');
  site = site.replace('least_conn;', `least_conn;\n${ports.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=10s;`).join('\n')}`);
  site = site.replace(/listen 127\.0\.0\.1:\d+;/, `listen 127.0.0.1:${listen};`);
  writeFileSync(join(prefix, 'brisk.conf'), site);
  const t = join(prefix, 'tmp');
  writeFileSync(join(prefix, 'nginx.conf'), `
daemon off;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 512; }
http {
  access_log ${prefix}/logs/access.log;
  client_body_temp_path ${t}/body;
  proxy_temp_path ${t}/proxy;
  fastcgi_temp_path ${t}/fastcgi;
  uwsgi_temp_path ${t}/uwsgi;
  scgi_temp_path ${t}/scgi;
  include ${prefix}/brisk.conf;
}
`);
  const proc = spawn(NGINX, ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => proc.on('exit', r));
  const base = `http://127.0.0.1:${listen}`;
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {}
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start: ${err}`);
    await sleep(50);
  }
  return { base, stop: async () => { proc.kill('SIGQUIT'); await withTimeout(exited, 10000, 'nginx exit'); } };
}

// One streaming completion; records when it started and ended, which
// instance answered (the model id is the instance's --alias) and how it ended.
async function streamOnce(base, i) {
  const r = { start: performance.now(), end: null, instance: null, ok: false, error: null };
  try {
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 120, temperature: 0.8, seed: i, stream: true }),
    });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    let buf = '';
    const dec = new TextDecoder();
    let done = false;
    for await (const part of res.body) {
      buf += dec.decode(part, { stream: true });
      let k;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, k);
        buf = buf.slice(k + 2);
        if (ev === 'data: [DONE]') done = true;
        else if (ev.startsWith('data: ')) r.instance ??= JSON.parse(ev.slice(6)).model;
      }
    }
    if (!done) throw new Error('stream ended without [DONE]');
    r.ok = true;
  } catch (e) {
    r.error = String(e.cause?.code || e.message);
  }
  r.end = performance.now();
  return r;
}

test('two instances behind nginx: killing one fails only its requests in flight', { skip: !NGINX && process.env.CI !== 'true' ? 'nginx not installed (scripts/install-deps.sh)' : false }, async () => {
  assert.ok(NGINX, 'nginx is installed');
  const a = await startServer(['--parallel', '4', '--alias', 'instance-a']);
  const b = await startServer(['--parallel', '4', '--alias', 'instance-b']);
  const nginx = await startNginx([a.port, b.port]);
  try {
    const results = [];
    let killedAt = null;
    let n = 0;
    const clients = Array.from({ length: 6 }, async () => {
      const until = performance.now() + 6000;
      while (performance.now() < until) results.push(await streamOnce(nginx.base, n++));
    });
    // Kill instance A (SIGKILL: no draining) once both have work in flight.
    const killer = (async () => {
      await sleep(1500);
      killedAt = performance.now();
      a.proc.kill('SIGKILL');
    })();
    await withTimeout(Promise.all([...clients, killer]), 60000, 'load through nginx');
    const failed = results.filter((r) => !r.ok);
    const after = results.filter((r) => r.start > killedAt);
    assert.ok(results.some((r) => r.ok && r.instance === 'instance-a' && r.end < killedAt), 'A served requests before the kill');
    assert.ok(after.length >= 6, 'requests kept coming after the kill');
    for (const f of failed) {
      assert.ok(f.start < killedAt && f.end >= killedAt, `a failure that was in flight at the kill: ${JSON.stringify(f)}`);
      assert.notEqual(f.instance, 'instance-b', 'no request on the surviving instance failed');
    }
    for (const r of after) assert.ok(r.ok && r.instance === 'instance-b', `after the kill all go to B and succeed: ${JSON.stringify(r)}`);
    const inFlightOnA = results.filter((r) => r.start < killedAt && r.end >= killedAt && r.instance !== 'instance-b');
    assert.equal(failed.length, inFlightOnA.filter((r) => !r.ok).length);
    console.log(`# ${results.length} requests, ${failed.length} failed (in flight on the killed instance), ${after.length} after the kill all ok`);
  } finally {
    await nginx.stop();
    await b.stop();
    await a.exited;
  }
});
