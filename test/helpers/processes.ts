import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { freePort } from '../../scripts/free-port.js';
export { freePort };

export const ROOT = path.resolve(import.meta.dirname, '../..');


/** The direct children of a process, from /proc (Linux). */
export function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Running, i.e. present and not a zombie waiting to be reaped. */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Production-grade secrets for a child process under test (tests pass theirs explicitly). */
export function testSecrets(): Record<string, string> {
  const s = () => `${randomUUID()}${randomUUID()}`;
  return { JWT_SECRET: s(), PAYMENT_WEBHOOK_SECRET: s(), PSP_API_KEY: s(), DASHBOARD_PASSWORD: s() };
}

/** Runs a TypeScript entry of this repository under tsx (with `args`), collecting its output. */
export function spawnTs(file: string, env: Record<string, string>, args: string[] = []): ChildProcess & { output: () => string } {
  let out = '';
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return Object.assign(child, { output: () => out });
}
