// SPDX-License-Identifier: MIT
// Starts `brisk serve` on a free loopback port for a test file and stops it.
// The model: stories260K from the shared test data, or (when that is absent
// and not under CI=true) a synthetic model written by `brisk synth`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BRISK = process.env.BRISK_BIN || 'brisk';
const DATA = process.env.BRISK_TEST_DATA || process.env.BRISK_DEFAULT_TEST_DATA || '';

let scratch = null;
export function scratchDir() {
  if (!scratch) {
    scratch = mkdtempSync(join(tmpdir(), 'brisk-serve-test-'));
    process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
  }
  return scratch;
}

let cachedModel = null;
export function modelPath() {
  if (cachedModel) return cachedModel;
  const shared = join(DATA, 'models', 'stories260K.gguf');
  if (DATA && existsSync(shared)) return (cachedModel = shared);
  if (process.env.CI === 'true') throw new Error(`missing test data under CI: ${shared}`);
  console.warn(`# stories260K not found (set BRISK_TEST_DATA); using a synthetic model`);
  const out = join(scratchDir(), 'synthetic.gguf');
  const r = spawnSync(BRISK, ['synth', '--shape', 'tiny', '-o', out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`brisk synth failed: ${r.stderr}`);
  return (cachedModel = out);
}

// Resolves with { port, proc, logs, stop() } once /health answers 200.
export async function startServer(extraArgs = [], { model = modelPath(), waitReady = true } = {}) {
  const args = ['serve', '-m', model, '--port', '0', '-t', '2', '--no-pin', '--log-format', 'json', ...extraArgs];
  const proc = spawn(BRISK, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const logs = [];
  let buf = '';
  let resolvePort;
  const portPromise = new Promise((resolve, reject) => {
    resolvePort = resolve;
    proc.on('exit', (code) => reject(new Error(`brisk serve exited early (${code}): ${buf}${logs.map((l) => JSON.stringify(l)).join('\n')}`)));
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const j = JSON.parse(line);
        logs.push(j);
        if (j.event === 'listening') resolvePort(j.port);
      } catch {
        logs.push({ raw: line });
      }
    }
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await withTimeout(portPromise, 20000, 'server did not start listening');
  const server = {
    port,
    proc,
    logs,
    exited,
    base: `http://127.0.0.1:${port}`,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return withTimeout(exited, 40000, 'server did not stop after SIGTERM');
    },
  };
  if (waitReady) {
    const deadline = Date.now() + 30000;
    for (;;) {
      try {
        const r = await fetch(`${server.base}/health`);
        if (r.status === 200) break;
      } catch {}
      if (Date.now() > deadline) throw new Error('server never became ready');
      await sleep(50);
    }
    // /health can answer before this process has read the 'ready' line from
    // the pipe; tests read that line's fields.
    while (!logs.some((l) => l.event === 'ready')) {
      if (Date.now() > deadline) throw new Error('server answered /health but never logged ready');
      await sleep(10);
    }
  }
  return server;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise.finally(() => clearTimeout(t)),
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

// Greedy text of `brisk run` for a prompt (what follows the echoed prompt).
export function briskRun(prompt, nPredict) {
  const r = spawnSync(BRISK, ['run', '-m', modelPath(), '-p', prompt, '-n', String(nPredict), '--temp', '0', '-t', '2', '--no-pin'], {
    encoding: 'utf8',
    timeout: 60000,
  });
  if (r.status !== 0) throw new Error(`brisk run failed: ${r.stderr}`);
  if (!r.stdout.startsWith(prompt)) throw new Error(`brisk run did not echo the prompt: ${r.stdout}`);
  return r.stdout.slice(prompt.length).replace(/\n$/, '');
}

export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : undefined;
}

// Sends raw bytes on a fresh connection; resolves with everything the server sent.
import net from 'node:net';
export function rawRequest(port, bytes, { endAfterWrite = false } = {}) {
  return withTimeout(
    new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      let data = '';
      sock.on('connect', () => {
        sock.write(bytes);
        if (endAfterWrite) sock.end();
      });
      sock.setEncoding('latin1');
      sock.on('data', (d) => {
        data += d;
      });
      sock.on('end', () => resolve(data));
      sock.on('close', () => resolve(data));
      sock.on('error', reject);
    }),
    20000,
    'raw request'
  );
}
