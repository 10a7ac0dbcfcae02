import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MUTATIONS } from '../../scripts/mutations.js';

// The deliberate breaks of `npm run check:mutations` still aim at the code: each active one's search text occurs
// exactly once in its file (the check itself is slow and not part of npm test), and its test exists.

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('mutation check table', () => {
  it('names each break once', () => {
    expect(new Set(MUTATIONS.map((m) => m.name)).size).toBe(MUTATIONS.length);
  });

  for (const m of MUTATIONS.filter((x) => x.status === 'active')) {
    it(`${m.name}: its edits match the code once each, and its test exists`, () => {
      expect(existsSync(path.join(ROOT, m.test)), m.test).toBe(true);
      const texts = new Map<string, string>();
      for (const e of m.edits) {
        const text = texts.get(e.file) ?? readFileSync(path.join(ROOT, e.file), 'utf8');
        expect(text.split(e.search).length - 1, `${e.file}: ${e.search}`).toBe(1);
        texts.set(e.file, text.replace(e.search, () => e.replace));
      }
    });
  }
});
