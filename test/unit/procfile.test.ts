import { describe, expect, it } from 'vitest';
import { commandLine, parseProcfile, supervisedProcesses } from '../../scripts/procfile.js';

const text = `# comment
release: node dist/scripts/migrate.js

api: node dist/api/server.js
psp: node dist/sandbox/main.js
`;

describe('Procfile', () => {
  it('reads name: command lines, skipping blanks and comments', () => {
    expect(parseProcfile(text)).toEqual([
      { name: 'release', command: 'node', args: ['dist/scripts/migrate.js'] },
      { name: 'api', command: 'node', args: ['dist/api/server.js'] },
      { name: 'psp', command: 'node', args: ['dist/sandbox/main.js'] },
    ]);
    expect(() => parseProcfile('no colon here')).toThrow(/Procfile/);
  });

  it('supervises all but release, and the sandbox only without an external PSP_URL', () => {
    const specs = parseProcfile(text);
    expect(supervisedProcesses(specs, { externalPsp: false }).map((s) => s.name)).toEqual(['api', 'psp']);
    expect(supervisedProcesses(specs, { externalPsp: true }).map((s) => s.name)).toEqual(['api']);
  });

  it('runs node entries with this Node, from dist or (under tsx) from source', () => {
    const [, api] = parseProcfile(text);
    expect(commandLine(api!, false)).toEqual({ file: process.execPath, args: ['--enable-source-maps', 'dist/api/server.js'] });
    expect(commandLine(api!, true)).toEqual({ file: process.execPath, args: ['--enable-source-maps', '--import', 'tsx', 'api/server.ts'] });
    expect(commandLine({ name: 'x', command: 'bash', args: ['run.sh'] }, true)).toEqual({ file: 'bash', args: ['run.sh'] });
  });
});
