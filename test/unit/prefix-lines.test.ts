import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { prefixLines } from '../../scripts/prefix-lines.js';

/** What the supervisor printed before: every line (split on \n) prefixed, a last unterminated line too. */
function lineByLine(prefix: string, text: string): string {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l) => `${prefix}${l}\n`).join('');
}

describe('prefixLines (npm start forwarding a child output)', () => {
  it('one write per chunk with whole lines; a partial line waits; end flushes it', () => {
    const writes: string[] = [];
    const p = prefixLines('api | ', (t) => writes.push(t));
    p.push(Buffer.from('a\nb\nc'));
    p.push(Buffer.from('d\n'));
    p.push(Buffer.from('e'));
    p.end();
    expect(writes).toEqual(['api | a\napi | b\n', 'api | cd\n', 'api | e\n']);
  });

  it('property: any text cut into any chunks prints as prefixed lines, UTF-8 split across chunks intact', () => {
    fc.assert(fc.property(
      fc.array(fc.oneof(fc.constantFrom('\n', '\r\n', 'é', '€', '𝄞', ' '), fc.string({ maxLength: 6 })), { maxLength: 30 }),
      fc.array(fc.nat(), { maxLength: 10 }),
      (pieces, cuts) => {
        const text = pieces.join('');
        const bytes = Buffer.from(text);
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        let out = '';
        const p = prefixLines('w| ', (t) => (out += t));
        let from = 0;
        for (const c of [...at, bytes.length]) {
          p.push(bytes.subarray(from, c));
          from = c;
        }
        p.end();
        expect(out).toBe(lineByLine('w| ', text));
      },
    ));
  });
});
