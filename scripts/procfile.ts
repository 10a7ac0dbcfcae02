import { readFileSync } from 'node:fs';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
}

/** `name: command args...` lines; blank lines and `#` comments skipped. No shell: arguments split on spaces. */
export function parseProcfile(text: string): ProcessSpec[] {
  const specs: ProcessSpec[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([\w-]+):\s*(.+)$/);
    if (!m) throw new Error(`Procfile: cannot read line "${line}"`);
    const [command, ...args] = m[2]!.split(/\s+/);
    specs.push({ name: m[1]!, command: command!, args });
  }
  return specs;
}

/**
 * The processes `npm start` supervises: every line but `release` (migrations run first, once), and the
 * sandbox provider (`psp`) only when no external PSP_URL is configured.
 */
export function supervisedProcesses(specs: ProcessSpec[], opts: { externalPsp: boolean }): ProcessSpec[] {
  return specs.filter((s) => s.name !== 'release' && !(s.name === 'psp' && opts.externalPsp));
}

/**
 * How to run a spec from here: `node` is this very Node binary; run from source (`tsx scripts/start.ts`),
 * `dist/x.js` becomes `x.ts` under tsx, so no build is needed.
 */
export function commandLine(spec: ProcessSpec, fromSource: boolean): { file: string; args: string[] } {
  if (spec.command !== 'node') return { file: spec.command, args: spec.args };
  const args = fromSource ? ['--import', 'tsx', ...spec.args.map((a) => a.replace(/^dist\/(.+)\.js$/, '$1.ts'))] : spec.args;
  return { file: process.execPath, args: ['--enable-source-maps', ...args] };
}

export const readProcfile = (file: string): ProcessSpec[] => parseProcfile(readFileSync(file, 'utf8'));
