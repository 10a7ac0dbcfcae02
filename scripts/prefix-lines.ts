import { StringDecoder } from 'node:string_decoder';

/**
 * Prefixes each line of a child's output, handing on whole lines only: one `write` per chunk read, however many
 * lines it holds. At info the API logs a line per request; writing them one by one cost the supervisor a write
 * (and its reader a wake) per request. A partial last line waits for the rest; `end()` hands it on with a newline.
 * `\r\n` is kept as the child wrote it. UTF-8 split across chunks is decoded whole.
 */
export function prefixLines(prefix: string, write: (text: string) => void) {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  return {
    push(chunk: Buffer): void {
      const text = partial + decoder.write(chunk);
      const last = text.lastIndexOf('\n');
      if (last < 0) {
        partial = text;
        return;
      }
      partial = text.slice(last + 1);
      write(prefix + text.slice(0, last + 1).replaceAll('\n', `\n${prefix}`).slice(0, -prefix.length));
    },
    end(): void {
      const rest = partial + decoder.end();
      partial = '';
      if (rest) write(`${prefix}${rest}\n`);
    },
  };
}
