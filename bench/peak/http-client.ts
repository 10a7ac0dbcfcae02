/**
 * A minimal HTTP/1.1 keep-alive client over node:net, for the load generator (loadgen.ts). The generator shares
 * the machine's cores with the system under test, so every microsecond it spends per request is taken from what
 * it measures; this client does only what the generator needs and nothing per request that can be done before t0.
 *
 * - A fixed pool of `connections` sockets, opened on demand; one request in flight per socket (no pipelining);
 *   requests wait FIFO when every socket is busy. An idle socket is reused most-recently-idle first.
 * - Requests are bytes encoded beforehand (EncodedRequests: one Buffer for a whole stream), so sending one is a
 *   single socket write. The request line and headers are those undici writes (host, connection: keep-alive, the
 *   caller's headers, content-length), so the server sees the same requests as before.
 * - Answers are read with net's `onread` into one reused buffer, parsed in place (no stream 'data' events, no
 *   Buffer per read): status line and headers (Content-Length, Transfer-Encoding: chunked, Connection,
 *   Keep-Alive), then the body by length, by chunks or until EOF; it is copied out and decoded (UTF-8) only when
 *   the status is at least the request's `keepBodyFrom`, otherwise just counted past. `Connection: close` (or
 *   HTTP/1.0) closes the socket after the answer and the next request opens a new one; a broken socket is
 *   replaced the same way.
 * - Errors carry the codes undici gives for the same events, so the generator's outcome labels stay the same:
 *   UND_ERR_HEADERS_TIMEOUT (no complete head `timeoutMs` after the write, or after the connect when the request
 *   waited for it), UND_ERR_BODY_TIMEOUT (no body bytes for `timeoutMs`), UND_ERR_CONNECT_TIMEOUT, UND_ERR_SOCKET
 *   (the server closed before the answer was complete), UND_ERR_RES_CONTENT_LENGTH_MISMATCH (it closed early after
 *   announcing `Connection: close`), the socket's own code (ECONNREFUSED, ECONNRESET, …), none for a malformed
 *   answer. Timeouts are checked by one timer per pool every timeoutMs / 10 (at most 250 ms), not one per request.
 * - close() destroys every socket; requests still queued or in flight are abandoned (their callbacks never run).
 */
import net from 'node:net';

export interface HttpRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface HttpError extends Error {
  code?: string;
}

/** One answer: err, or the status and the body (the body is '' unless status >= keepBodyFrom). */
export type Done = (err: HttpError | null, status: number, body: string) => void;

export interface HttpPoolOptions {
  connections: number;
  /** Headers timeout and body (idle) timeout, like undici's headersTimeout and bodyTimeout. */
  timeoutMs: number;
  /** An idle socket is closed after this long (default 60 s), or the server's Keep-Alive hint minus 2 s (as undici). */
  keepAliveMs?: number;
}

const CR = 13;
const LF = 10;
const CRLF2 = Buffer.from('\r\n\r\n');
const HEAD_MAX = 64 * 1024;
const LINE_MAX = 8 * 1024;
/** Methods that send `content-length: 0` without a body (undici: the methods that expect a payload). */
const PAYLOAD_METHODS = new Set(['POST', 'PUT', 'PATCH', 'QUERY']);
const RESERVED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'expect', 'upgrade', 'keep-alive']);

const error = (code: string | undefined, message: string): HttpError => {
  const e: HttpError = new Error(message);
  if (code !== undefined) e.code = code;
  return e;
};
const PROTOCOL = 'Response does not match the HTTP/1.1 protocol';

/** The request's bytes: request line, host, connection: keep-alive, the caller's headers, content-length, body. */
export function encodeRequest(host: string, req: HttpRequest): Buffer {
  // A HEAD answer has a length but no body, CONNECT turns the socket into a tunnel: neither is read here.
  if (req.method === 'HEAD' || req.method === 'CONNECT') throw new Error(`encodeRequest: ${req.method} is not supported`);
  let head = `${req.method} ${req.path} HTTP/1.1\r\nhost: ${host}\r\nconnection: keep-alive\r\n`;
  if (req.headers) {
    for (const k in req.headers) {
      if (RESERVED.has(k.toLowerCase())) throw new Error(`encodeRequest: header ${k} is set by the client`);
      head += `${k}: ${req.headers[k]}\r\n`;
    }
  }
  const bodyLength = req.body ? Buffer.byteLength(req.body) : 0;
  if (bodyLength > 0 || PAYLOAD_METHODS.has(req.method)) head += `content-length: ${bodyLength}\r\n`;
  head += '\r\n';
  const headLength = Buffer.byteLength(head, 'latin1');
  const out = Buffer.allocUnsafe(headLength + bodyLength);
  out.write(head, 0, 'latin1');
  if (bodyLength > 0) out.write(req.body!, headLength, 'utf8');
  return out;
}

/** Many requests encoded into one Buffer (no per-request objects kept); at(i) is request i's bytes. */
export class EncodedRequests {
  private constructor(private readonly bytes: Buffer, private readonly ends: Float64Array) {}

  static of(host: string, reqs: readonly HttpRequest[]): EncodedRequests {
    const parts = reqs.map((r) => encodeRequest(host, r));
    const ends = new Float64Array(parts.length);
    let total = 0;
    for (let i = 0; i < parts.length; i++) ends[i] = total += parts[i]!.length;
    return new EncodedRequests(Buffer.concat(parts, total), ends);
  }

  get length(): number {
    return this.ends.length;
  }

  at(i: number): Buffer {
    return this.bytes.subarray(i > 0 ? this.ends[i - 1]! : 0, this.ends[i]!);
  }
}

interface Pending {
  bytes: Buffer;
  keepBodyFrom: number;
  done: Done;
}

// Where a connection is in reading the answer to its request.
const IDLE = 0;
const HEAD = 1;
const LENGTH = 2;
const CHUNK_SIZE = 3;
const CHUNK_DATA = 4;
const CHUNK_END = 5;
const TRAILERS = 6;
const UNTIL_EOF = 7;
const DONE = 8;

class Connection {
  readonly socket: net.Socket;
  cur: Pending | null = null;
  connected = false;
  retired = false;
  /** performance.now() by which the request must progress (head complete, or more body bytes). */
  deadline = 0;
  idleUntil = 0;
  private keepAliveMs: number;
  private phase = IDLE;
  private partial: Buffer | null = null;
  private line = '';
  private status = 0;
  private keepAlive = true;
  private remaining = 0;
  private chunks: Buffer[] | null = null;

  constructor(private readonly pool: HttpPool) {
    this.keepAliveMs = pool.keepAliveMs;
    // Reads land in the pool's one read buffer and come to onData directly, without the stream machinery (no
    // Buffer allocated per read, no 'data' events); whatever must outlive the call is copied out.
    const s = net.connect({
      host: pool.hostname, port: pool.port,
      onread: { buffer: pool.readBuffer, callback: (n: number, b: Uint8Array) => { this.onData(b as Buffer, n); return true; } },
    });
    s.setNoDelay(true);
    s.on('connect', () => {
      this.connected = true;
      if (this.cur) this.deadline = performance.now() + this.pool.timeoutMs;
    });
    s.on('end', () => this.onEnd());
    s.on('error', (e: NodeJS.ErrnoException) => this.onError(e));
    s.on('close', () => this.onClose());
    this.socket = s;
  }

  send(p: Pending): void {
    this.cur = p;
    this.phase = HEAD;
    this.partial = null;
    this.line = '';
    this.status = 0;
    this.keepAlive = true;
    this.deadline = performance.now() + this.pool.timeoutMs;
    this.socket.write(p.bytes);
  }

  /** Takes the connection out of the pool and closes it (once); a request waiting for a connection gets a new one. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.socket.destroy();
    this.pool.retired(this);
  }

  /** Fails the request in flight (if any) and retires the connection. */
  fail(err: HttpError): void {
    const p = this.cur;
    this.cur = null;
    this.phase = IDLE;
    this.chunks = null;
    this.retire();
    if (p) p.done(err, 0, '');
  }

  timedOut(): void {
    if (!this.connected) this.fail(error('UND_ERR_CONNECT_TIMEOUT', 'Connect Timeout Error'));
    else if (this.phase === HEAD) this.fail(error('UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'));
    else this.fail(error('UND_ERR_BODY_TIMEOUT', 'Body Timeout Error'));
  }

  private complete(extra: boolean): void {
    const p = this.cur!;
    const status = this.status;
    const chunks = this.chunks;
    this.cur = null;
    this.phase = IDLE;
    this.chunks = null;
    // Bytes beyond the answer were not asked for (no pipelining): the connection is not trusted further.
    if (extra || !this.keepAlive) this.retire();
    else this.pool.release(this);
    const body = chunks === null || chunks.length === 0 ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
    p.done(null, status, body);
  }

  /** buf[0, n) was read; buf is the pool's read buffer, reused by the next read. */
  private onData(buf: Buffer, n: number): void {
    if (this.cur === null) {
      this.retire(); // bytes nobody asked for
      return;
    }
    let i = 0;
    for (;;) {
      if (this.phase === DONE) {
        this.complete(i < n);
        return;
      }
      if (i >= n) break;
      switch (this.phase) {
        case HEAD:
          i = this.readHead(buf, i, n);
          if (i < 0) return;
          break;
        case LENGTH:
        case CHUNK_DATA: {
          const take = Math.min(this.remaining, n - i);
          if (this.chunks) this.chunks.push(Buffer.from(buf.subarray(i, i + take)));
          this.remaining -= take;
          i += take;
          if (this.remaining === 0) this.phase = this.phase === LENGTH ? DONE : CHUNK_END;
          break;
        }
        case UNTIL_EOF:
          if (this.chunks) this.chunks.push(Buffer.from(buf.subarray(i, n)));
          i = n;
          break;
        case CHUNK_END: {
          const lf = lineEnd(buf, i, n);
          if (lf < 0) i = n;
          else {
            i = lf + 1;
            this.phase = CHUNK_SIZE;
          }
          break;
        }
        case CHUNK_SIZE:
        case TRAILERS: {
          const lf = lineEnd(buf, i, n);
          this.line += buf.toString('latin1', i, lf < 0 ? n : lf);
          if (lf < 0) {
            if (this.line.length > LINE_MAX) return this.fail(error(undefined, `${PROTOCOL} (line too long)`));
            i = n;
            break;
          }
          i = lf + 1;
          const line = this.line.charCodeAt(this.line.length - 1) === CR ? this.line.slice(0, -1) : this.line;
          this.line = '';
          if (this.phase === TRAILERS) {
            if (line === '') this.phase = DONE;
            break;
          }
          const semi = line.indexOf(';');
          const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
          if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) return this.fail(error(undefined, `${PROTOCOL} (Invalid character in chunk size)`));
          const size = parseInt(hex, 16);
          if (!(size >= 0)) return this.fail(error(undefined, `${PROTOCOL} (Invalid character in chunk size)`));
          if (size === 0) this.phase = TRAILERS;
          else {
            this.remaining = size;
            this.phase = CHUNK_DATA;
          }
          break;
        }
      }
    }
    // Body timeout: time between body bytes (the head has its own deadline, set at the write).
    if (this.phase !== HEAD) this.deadline = performance.now() + this.pool.timeoutMs;
  }

  /** Reads the head from buf[i, n); returns the offset after it, or -1 (more bytes needed, or failed). */
  private readHead(buf: Buffer, i: number, n: number): number {
    let b = buf;
    let start = i;
    let from = i;
    let before = 0; // bytes of b that came from earlier reads
    if (this.partial) {
      before = this.partial.length;
      b = Buffer.concat([this.partial, buf.subarray(i, n)]);
      start = 0;
      from = Math.max(0, before - 3);
      this.partial = null;
    }
    const limit = b === buf ? n : b.length;
    let end = b.indexOf(CRLF2, from);
    if (end + 4 > limit) end = -1; // beyond this read: old bytes of the read buffer
    if (end < 0) {
      if (limit - start > HEAD_MAX) this.fail(error('UND_ERR_HEADERS_OVERFLOW', 'Headers Overflow Error'));
      else this.partial = b === buf ? Buffer.from(buf.subarray(start, n)) : b;
      return -1;
    }
    const next = i + (end + 4 - start - before);
    // Status line: HTTP/1.x NNN …
    if (end - start < 12 || b[start] !== 0x48 || b[start + 1] !== 0x54 || b[start + 2] !== 0x54 || b[start + 3] !== 0x50
      || b[start + 4] !== 0x2f || b[start + 5] !== 0x31 || b[start + 6] !== 0x2e || b[start + 8] !== 0x20) {
      this.fail(error(undefined, `${PROTOCOL} (Expected HTTP/)`));
      return -1;
    }
    const d0 = b[start + 9]! - 48;
    const d1 = b[start + 10]! - 48;
    const d2 = b[start + 11]! - 48;
    if (d0 < 1 || d0 > 5 || d1 < 0 || d1 > 9 || d2 < 0 || d2 > 9) {
      this.fail(error(undefined, `${PROTOCOL} (Invalid status code)`));
      return -1;
    }
    const status = d0 * 100 + d1 * 10 + d2;
    let keepAlive = b[start + 7] === 0x31; // HTTP/1.1 keeps alive unless told otherwise, HTTP/1.0 the reverse
    let contentLength = -1;
    let chunked = false;
    let hintS = -1;
    let pos = b.indexOf(LF, start) + 1;
    while (pos < end + 2) {
      let lf = b.indexOf(LF, pos);
      if (lf < 0 || lf > end + 1) lf = end + 1;
      const le = b[lf - 1] === CR ? lf - 1 : lf;
      const colon = b.indexOf(58, pos);
      if (colon < 0 || colon > le) {
        this.fail(error(undefined, `${PROTOCOL} (Invalid header)`));
        return -1;
      }
      const len = colon - pos;
      if (len === 14 || len === 17 || len === 10) {
        let vs = colon + 1;
        let ve = le;
        while (vs < ve && (b[vs] === 0x20 || b[vs] === 0x09)) vs++;
        while (ve > vs && (b[ve - 1] === 0x20 || b[ve - 1] === 0x09)) ve--;
        if (len === 14 && named(b, pos, 'content-length')) {
          let v = 0;
          for (let k = vs; k < ve; k++) {
            const c = b[k]! - 48;
            if (c < 0 || c > 9 || v > 1e15) {
              this.fail(error(undefined, `${PROTOCOL} (Invalid character in Content-Length)`));
              return -1;
            }
            v = v * 10 + c;
          }
          if (vs === ve) {
            this.fail(error(undefined, `${PROTOCOL} (Invalid character in Content-Length)`));
            return -1;
          }
          contentLength = v;
        } else if (len === 17 && named(b, pos, 'transfer-encoding')) {
          chunked = /(?:^|,)\s*chunked\s*$/i.test(b.toString('latin1', vs, ve));
        } else if (len === 10 && named(b, pos, 'connection')) {
          const v = b.toString('latin1', vs, ve).toLowerCase();
          if (/(?:^|,)\s*close\s*(?:,|$)/.test(v)) keepAlive = false;
          else if (/(?:^|,)\s*keep-alive\s*(?:,|$)/.test(v)) keepAlive = true;
        } else if (len === 10 && named(b, pos, 'keep-alive')) {
          const m = /timeout\s*=\s*(\d+)/i.exec(b.toString('latin1', vs, ve));
          if (m) hintS = Number(m[1]);
        }
      }
      pos = lf + 1;
    }
    if (status < 200) {
      // 100 Continue was not asked for (undici calls it a bad response); other 1xx heads precede the answer.
      if (status === 100 || status === 101) {
        this.fail(error('UND_ERR_SOCKET', 'bad response'));
        return -1;
      }
      return next;
    }
    this.status = status;
    if (keepAlive && hintS >= 0) {
      const ms = Math.min(hintS * 1000 - 2000, 600_000);
      if (ms <= 0) keepAlive = false;
      else this.keepAliveMs = ms;
    }
    this.keepAlive = keepAlive;
    this.chunks = status >= this.cur!.keepBodyFrom ? [] : null;
    if (status === 204 || status === 304) this.phase = DONE;
    else if (chunked) this.phase = CHUNK_SIZE;
    else if (contentLength >= 0) {
      this.remaining = contentLength;
      this.phase = contentLength === 0 ? DONE : LENGTH;
    } else {
      this.keepAlive = false; // the body ends with the connection
      this.phase = UNTIL_EOF;
    }
    this.line = '';
    return next;
  }

  /** The answer said it would close: EOF ends it, complete or not (undici: llhttp_finish). */
  private finishAtEof(): void {
    if (this.phase === UNTIL_EOF || this.phase === DONE) this.complete(false);
    else if (this.phase === LENGTH) this.fail(error('UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'Response body length does not match content-length header'));
    else this.fail(error(undefined, `${PROTOCOL} (Invalid EOF state)`));
  }

  private onEnd(): void {
    if (this.cur && this.status && !this.keepAlive) this.finishAtEof();
    else this.fail(error('UND_ERR_SOCKET', 'other side closed'));
  }

  private onError(e: NodeJS.ErrnoException): void {
    if (e.code === 'ECONNRESET' && this.cur && this.status && !this.keepAlive) this.finishAtEof();
    else this.fail(error(e.code, e.message));
  }

  private onClose(): void {
    if (!this.retired) this.fail(error('UND_ERR_SOCKET', 'closed'));
  }

  idle(now: number): void {
    this.idleUntil = now + this.keepAliveMs;
  }
}

/** The offset of the next LF in b[i, n), or -1. */
function lineEnd(b: Buffer, i: number, n: number): number {
  const lf = b.indexOf(LF, i);
  return lf < n ? lf : -1;
}

/** Whether the header name at b[pos…] is `lower` (ASCII, case-insensitive; the length was checked). */
function named(b: Buffer, pos: number, lower: string): boolean {
  for (let k = 0; k < lower.length; k++) if ((b[pos + k]! | 0x20) !== lower.charCodeAt(k)) return false;
  return true;
}

export class HttpPool {
  readonly host: string;
  readonly hostname: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly keepAliveMs: number;
  /** Where every connection's reads land (one read is consumed before the next). */
  readonly readBuffer = Buffer.allocUnsafe(64 * 1024);
  /** Sockets opened so far (for tests and reports). */
  connectionsOpened = 0;
  private readonly max: number;
  private readonly open = new Set<Connection>();
  private readonly idleStack: Connection[] = [];
  private queue: Pending[] = [];
  private queueHead = 0;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(origin: string, o: HttpPoolOptions) {
    const url = new URL(origin);
    if (url.protocol !== 'http:') throw new Error(`HttpPool: only http: origins (${origin})`);
    this.host = url.host; // hostname[:port], as undici's host header
    this.hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = url.port ? Number(url.port) : 80;
    if (!(o.connections >= 1)) throw new Error('HttpPool: connections must be at least 1');
    this.max = o.connections;
    this.timeoutMs = o.timeoutMs;
    this.keepAliveMs = o.keepAliveMs ?? 60_000;
    this.sweeper = setInterval(() => this.sweep(), Math.min(250, Math.max(5, o.timeoutMs / 10)));
    this.sweeper.unref();
  }

  encode(req: HttpRequest): Buffer {
    return encodeRequest(this.host, req);
  }

  encodeAll(reqs: readonly HttpRequest[]): EncodedRequests {
    return EncodedRequests.of(this.host, reqs);
  }

  /** Sends `bytes` (one encoded request) now or when a connection is free; `done` is called once with the answer. */
  request(bytes: Buffer, keepBodyFrom: number, done: Done): void {
    if (this.closed) throw new Error('HttpPool: closed');
    const p: Pending = { bytes, keepBodyFrom, done };
    const c = this.takeIdle();
    if (c) c.send(p);
    else if (this.open.size < this.max) this.connect().send(p);
    else this.queue.push(p);
  }

  /** Requests waiting for a connection. */
  get queued(): number {
    return this.queue.length - this.queueHead;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    this.queue = [];
    this.queueHead = 0;
    for (const c of [...this.open]) {
      c.cur = null; // abandoned: no callback
      c.retire();
    }
    this.idleStack.length = 0;
  }

  /** @internal A connection finished its answer and stays open. */
  release(c: Connection): void {
    const next = this.dequeue();
    if (next) c.send(next);
    else {
      c.idle(performance.now());
      this.idleStack.push(c);
    }
  }

  /** @internal A connection is gone: a waiting request gets a new one. */
  retired(c: Connection): void {
    this.open.delete(c);
    const k = this.idleStack.lastIndexOf(c);
    if (k >= 0) this.idleStack.splice(k, 1);
    if (this.closed) return;
    const next = this.dequeue();
    if (next) this.connect().send(next);
  }

  private connect(): Connection {
    const c = new Connection(this);
    this.open.add(c);
    this.connectionsOpened++;
    return c;
  }

  private takeIdle(): Connection | null {
    if (this.idleStack.length === 0) return null;
    const now = performance.now();
    for (;;) {
      const c = this.idleStack.pop();
      if (!c) return null;
      if (c.idleUntil > now) return c;
      c.retire(); // kept idle too long: the server may be closing it
    }
  }

  private dequeue(): Pending | undefined {
    if (this.queueHead >= this.queue.length) return undefined;
    const p = this.queue[this.queueHead]!;
    this.queue[this.queueHead++] = undefined as unknown as Pending;
    if (this.queueHead === this.queue.length) {
      this.queue.length = 0;
      this.queueHead = 0;
    } else if (this.queueHead >= 4096 && this.queueHead * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    return p;
  }

  private sweep(): void {
    const now = performance.now();
    for (const c of this.open) {
      if (c.cur) {
        if (now > c.deadline) c.timedOut();
      } else if (c.idleUntil <= now && c.idleUntil > 0) c.retire();
    }
  }
}
