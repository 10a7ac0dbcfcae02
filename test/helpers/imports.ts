import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// The import graph of the repository's sources, read from the text (no compiler): what the architecture test and
// the deployment test check the layering and each process's dependencies against.

export const ROOT = path.resolve(import.meta.dirname, '../..');

export function tsFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.posix.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return tsFiles(rel);
    return rel.endsWith('.ts') ? [rel] : [];
  });
}

export interface Import {
  from: string;
  /** Repo-relative path of a relative import (`.js` → `.ts`), or the package name. */
  target: string;
  relative: boolean;
}

export function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)]
    .map((m) => (m[1] ?? m[2])!);
  return specs.map((spec) => spec.startsWith('.')
    ? { from: file, relative: true, target: path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts') }
    : { from: file, relative: false, target: spec });
}

/** Every file `entry` reaches through relative imports (itself included), and every package those files import. */
export function closureOf(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const i of importsOf(file)) {
      if (i.relative) visit(i.target);
      else packages.add(i.target);
    }
  };
  visit(entry);
  return { files, packages };
}

/** True when a package name is a Redis client (ioredis, or bullmq, which opens one). */
export const isRedisClient = (pkg: string): boolean => /^(ioredis|bullmq)(\/|$)/.test(pkg);
