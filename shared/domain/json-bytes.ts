// Search answers joined from pieces of JSON encoded (UTF-8) once per catalogue change, into one Buffer per answer.
// The API writes that Buffer as it is: no string of up to 30 KB is built, measured for Content-Length and encoded
// again on every request (for a 200-room-type answer that was a third of the request's CPU).

/** The bytes around an answer's array: `{"<key>":[` and `]}`. */
export interface Envelope {
  open: Uint8Array;
  close: Uint8Array;
}

export const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');

export const envelope = (key: string): Envelope => ({ open: utf8(`{${JSON.stringify(key)}:[`), close: utf8(']}') });

const COMMA = 0x2c;
const ZERO = 0x30;

/** Digits of a non-negative safe integer. */
export function digitCount(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes into one Buffer of a size known beforehand (the caller adds up its pieces first). */
export class JsonBytes {
  private readonly buf: Buffer;
  private at = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  bytes(b: Uint8Array): void {
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  comma(): void {
    this.buf[this.at++] = COMMA;
  }

  /** A non-negative safe integer, `digits` long (digitCount). */
  int(n: number, digits: number): void {
    for (let k = this.at + digits - 1; k >= this.at; k--) {
      this.buf[k] = ZERO + (n % 10);
      n = Math.floor(n / 10);
    }
    this.at += digits;
  }

  /** The answer; every byte of it written (a size added up wrongly is a bug, not a shorter answer). */
  done(): Buffer {
    if (this.at !== this.buf.length) throw new Error(`JsonBytes: wrote ${this.at} of ${this.buf.length} bytes`);
    return this.buf;
  }
}

/** `open` + the items joined by commas + `close`. */
export function joinJson(env: Envelope, items: readonly Uint8Array[]): Buffer {
  let size = env.open.length + env.close.length + Math.max(0, items.length - 1);
  for (const item of items) size += item.length;
  const out = new JsonBytes(size);
  out.bytes(env.open);
  for (let k = 0; k < items.length; k++) {
    if (k) out.comma();
    out.bytes(items[k]!);
  }
  out.bytes(env.close);
  return out.done();
}
