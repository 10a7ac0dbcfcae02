import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncodedRequests, HttpPool, encodeRequest, type HttpError, type HttpRequest } from '../../bench/peak/http-client.js';
import { openLoop } from '../../bench/peak/loadgen.js';
import { rngFor } from '../../bench/dataset/generate.js';

interface Answer { err: HttpError | null; status: number; body: string }

const ask = (pool: HttpPool, req: HttpRequest, keepBodyFrom = 0) => new Promise<Answer>((resolve) => {
  pool.request(pool.encode(req), keepBodyFrom, (err, status, body) => resolve({ err, status, body }));
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** ~6 KB of JSON, with multi-byte characters so a body split across packets must be decoded whole. */
const BIG = JSON.stringify({ cars: Array.from({ length: 60 }, (_, i) => ({ id: i, model: `Toyota Vios ${i}`, city: 'Hồ Chí Minh', price: 1000 + i })) });

// The server under test: one route per behaviour.
let server: http.Server;
let origin: string;
const connections = new Set<net.Socket>();
let connectionCount = 0;
let active = 0;
let maxActive = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      switch (url.pathname) {
        case '/json':
          res.setHeader('content-type', 'application/json');
          res.end(BIG); // one write: Node sets content-length
          return;
        case '/chunked': {
          // No content-length, several writes, a trailer: chunked; pieces split across packets.
          res.setHeader('content-type', 'application/json');
          res.setHeader('trailer', 'x-sum');
          const pieces = [BIG.slice(0, 1000), BIG.slice(1000, 1001), BIG.slice(1001, 4000), BIG.slice(4000)];
          let k = 0;
          const next = () => {
            if (k < pieces.length) {
              res.write(pieces[k++]);
              setTimeout(next, 2);
            } else {
              res.addTrailers({ 'x-sum': String(BIG.length) });
              res.end();
            }
          };
          next();
          return;
        }
        case '/error':
          res.statusCode = Number(url.searchParams.get('status') ?? 409);
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ error: { code: 'CAR_UNAVAILABLE', message: 'já reservado' } }));
          return;
        case '/empty':
          res.statusCode = 204;
          res.end();
          return;
        case '/close':
          res.setHeader('connection', 'close');
          res.end(`closing ${url.searchParams.get('i')}`);
          return;
        case '/midway':
          // Announces 6 KB, sends 100 bytes, then the server goes away.
          res.setHeader('content-length', String(Buffer.byteLength(BIG)));
          res.flushHeaders();
          res.write(BIG.slice(0, 100), () => setTimeout(() => res.socket?.destroy(), 10));
          return;
        case '/stall-body':
          res.setHeader('content-length', '1000');
          res.write('x'.repeat(10)); // then nothing
          return;
        case '/never':
          return; // no answer at all
        case '/slow':
          active++;
          maxActive = Math.max(maxActive, active);
          setTimeout(() => {
            active--;
            res.end(`slow ${url.searchParams.get('i')}`);
          }, Number(url.searchParams.get('ms') ?? 20));
          return;
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body }));
          return;
        default:
          res.statusCode = 404;
          res.end();
      }
    });
  });
  server.on('connection', (s: net.Socket) => {
    connectionCount++;
    connections.add(s);
    s.on('close', () => connections.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of connections) s.destroy();
  await new Promise((r) => server.close(r));
});

/** A raw TCP server answering every request with `answer(socket)` (for answers node:http would not write). */
async function rawServer(answer: (s: net.Socket) => void): Promise<{ origin: string; close(): Promise<void> }> {
  const socks = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    socks.add(s);
    s.on('error', () => {});
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        got = '';
        answer(s);
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of socks) s.destroy();
      await new Promise((r) => srv.close(r));
    },
  };
}

describe('bench http client: answers', () => {
  it('reads a content-length answer and keeps its body when asked', async () => {
    const pool = new HttpPool(origin, { connections: 2, timeoutMs: 2000 });
    try {
      const a = await ask(pool, { method: 'GET', path: '/json' });
      expect(a.err).toBeNull();
      expect(a.status).toBe(200);
      expect(a.body).toBe(BIG);
    } finally { pool.close(); }
  });

  it('reads a chunked answer (pieces across packets, a trailer) and keeps its body when asked', async () => {
    const pool = new HttpPool(origin, { connections: 1, timeoutMs: 2000 });
    try {
      const a = await ask(pool, { method: 'GET', path: '/chunked' });
      expect(a.err).toBeNull();
      expect(a.status).toBe(200);
      expect(a.body).toBe(BIG);
      // The same connection is still in step afterwards.
      const b = await ask(pool, { method: 'GET', path: '/json' });
      expect(b.body).toBe(BIG);
      expect(pool.connectionsOpened).toBe(1);
    } finally { pool.close(); }
  });

  it('skips a body not needed (content-length and chunked), keeps an error body, and stays in step', async () => {
    const pool = new HttpPool(origin, { connections: 1, timeoutMs: 2000 });
    try {
      // keepBodyFrom 300, as the generator asks when not sampling.
      for (const path of ['/json', '/chunked', '/json', '/empty', '/chunked']) {
        const a = await ask(pool, { method: 'GET', path }, 300);
        expect(a.err).toBeNull();
        expect(a.status).toBe(path === '/empty' ? 204 : 200);
        expect(a.body).toBe('');
      }
      const e = await ask(pool, { method: 'GET', path: '/error?status=409' }, 300);
      expect(e.status).toBe(409);
      expect(JSON.parse(e.body)).toEqual({ error: { code: 'CAR_UNAVAILABLE', message: 'já reservado' } });
      const last = await ask(pool, { method: 'GET', path: '/json' }, 0);
      expect(last.body).toBe(BIG);
      expect(pool.connectionsOpened).toBe(1);
    } finally { pool.close(); }
  });

  it('reads heads, bodies and chunk sizes split into tiny packets, after whole answers, and a body that ends with the connection', async () => {
    // Whole answers first fill the read buffer with heads and line ends; answers split into 3-byte packets then
    // must not be read past what arrived.
    const answers = [
      'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nX-Other: a:b\r\n\r\nhello world',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n chunk\r\n0\r\n\r\n',
    ];
    let k = 0;
    const split = await rawServer((s) => {
      s.setNoDelay(true);
      const answer = answers[Math.floor(k / 2) % 2]!;
      if (k++ % 2 === 0) {
        s.write(answer);
        return;
      }
      let at = 0;
      const next = () => {
        if (at < answer.length) {
          s.write(answer.slice(at, at + 3));
          at += 3;
          setTimeout(next, 1);
        }
      };
      next();
    });
    const eof = await rawServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end'));
    const p1 = new HttpPool(split.origin, { connections: 1, timeoutMs: 2000 });
    const p2 = new HttpPool(eof.origin, { connections: 1, timeoutMs: 2000 });
    try {
      for (const body of ['hello world', 'hello world', 'hello chunk', 'hello chunk', 'hello world', 'hello world']) {
        expect(await ask(p1, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body });
      }
      expect(p1.connectionsOpened).toBe(1);
      expect(await ask(p2, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body: 'until the end' });
      expect(await ask(p2, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body: 'until the end' });
      expect(p2.connectionsOpened).toBe(2);
    } finally {
      p1.close();
      p2.close();
      await split.close();
      await eof.close();
    }
  });
});

describe('bench http client: connections', () => {
  it('reuses one keep-alive connection for many requests', async () => {
    const pool = new HttpPool(origin, { connections: 8, timeoutMs: 2000 });
    const before = connectionCount;
    try {
      for (let i = 0; i < 200; i++) {
        const a = await ask(pool, { method: 'GET', path: i % 2 ? '/json' : '/chunked' }, 300);
        expect(a.status).toBe(200);
      }
      expect(connectionCount - before).toBe(1);
      expect(pool.connectionsOpened).toBe(1);
    } finally { pool.close(); }
  });

  it('honours Connection: close by reconnecting for the next request', async () => {
    const pool = new HttpPool(origin, { connections: 1, timeoutMs: 2000 });
    const before = connectionCount;
    try {
      for (let i = 0; i < 5; i++) expect(await ask(pool, { method: 'GET', path: `/close?i=${i}` })).toEqual({ err: null, status: 200, body: `closing ${i}` });
      expect(await ask(pool, { method: 'GET', path: '/json' }, 300)).toEqual({ err: null, status: 200, body: '' });
      expect(connectionCount - before).toBe(6);
      expect(pool.connectionsOpened).toBe(6);
    } finally { pool.close(); }
  });

  it("keeps an idle connection no longer than the server's Keep-Alive hint minus 2 s (as undici)", async () => {
    const none = await rawServer((s) => s.write('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2\r\ncontent-length: 2\r\n\r\nok'));
    const short = await rawServer((s) => s.write('HTTP/1.1 200 OK\r\nkeep-alive: timeout=3, max=100\r\ncontent-length: 2\r\n\r\nok'));
    const p1 = new HttpPool(none.origin, { connections: 1, timeoutMs: 2000 });
    const p2 = new HttpPool(short.origin, { connections: 1, timeoutMs: 2000 });
    try {
      // timeout=2: nothing left, every answer closes its connection.
      for (let i = 0; i < 3; i++) expect(await ask(p1, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body: 'ok' });
      expect(p1.connectionsOpened).toBe(3);
      // timeout=3: reused within 1 s, replaced after.
      for (let i = 0; i < 3; i++) expect(await ask(p2, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body: 'ok' });
      expect(p2.connectionsOpened).toBe(1);
      await sleep(1100);
      expect(await ask(p2, { method: 'GET', path: '/' })).toEqual({ err: null, status: 200, body: 'ok' });
      expect(p2.connectionsOpened).toBe(2);
    } finally {
      p1.close();
      p2.close();
      await none.close();
      await short.close();
    }
  });

  it('queues requests beyond the pool size (FIFO) and answers them all on at most `connections` sockets', async () => {
    const pool = new HttpPool(origin, { connections: 4, timeoutMs: 5000 });
    const before = connectionCount;
    maxActive = 0;
    try {
      const order: number[] = [];
      const all = Array.from({ length: 40 }, (_, i) => new Promise<Answer>((resolve) => {
        pool.request(pool.encode({ method: 'GET', path: `/slow?ms=40&i=${i}` }), 0, (err, status, body) => {
          order.push(i);
          resolve({ err, status, body });
        });
      }));
      expect(pool.queued).toBe(36);
      const answers = await Promise.all(all);
      answers.forEach((a, i) => expect(a).toEqual({ err: null, status: 200, body: `slow ${i}` }));
      expect(maxActive).toBe(4);
      expect(connectionCount - before).toBe(4);
      expect(pool.connectionsOpened).toBe(4);
      // FIFO: request i was sent in batch ⌊i / 4⌋, so no request finished before one queued a whole batch earlier.
      order.forEach((i, k) => expect(Math.floor(i / 4)).toBe(Math.floor(k / 4)));
    } finally { pool.close(); }
  });

  it('sends POST bodies intact with their headers (the bytes undici sends)', async () => {
    const pool = new HttpPool(origin, { connections: 2, timeoutMs: 2000 });
    try {
      const body = JSON.stringify({ carId: 17, from: '2026-06-01T10:00:00Z', note: 'Đà Lạt ✓', pad: 'x'.repeat(100_000) });
      const a = await ask(pool, { method: 'POST', path: '/echo?a=1&b=%20', headers: { 'content-type': 'application/json', authorization: 'Bearer abc.def.ghi' }, body });
      expect(a.err).toBeNull();
      const seen = JSON.parse(a.body) as { method: string; url: string; headers: Record<string, string>; rawHeaders: string[]; body: string };
      expect(seen.method).toBe('POST');
      expect(seen.url).toBe('/echo?a=1&b=%20');
      expect(seen.body).toBe(body);
      expect(seen.headers['content-type']).toBe('application/json');
      expect(seen.headers.authorization).toBe('Bearer abc.def.ghi');
      expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(body)));
      expect(seen.headers.host).toBe(new URL(origin).host);
      // A POST without a body says so; a GET says nothing.
      const empty = JSON.parse((await ask(pool, { method: 'POST', path: '/echo' })).body) as { headers: Record<string, string>; body: string };
      expect(empty.headers['content-length']).toBe('0');
      expect(empty.body).toBe('');
      const get = JSON.parse((await ask(pool, { method: 'GET', path: '/echo' })).body) as { headers: Record<string, string> };
      expect(get.headers['content-length']).toBeUndefined();
      expect(pool.connectionsOpened).toBe(1);
    } finally { pool.close(); }
  });

  it('encodes requests byte for byte as undici does, and packs many into one buffer', async () => {
    let raw = '';
    const capture = await rawServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    const srv = net.createServer((s) => s.on('data', (d: Buffer) => {
      raw += d.toString('utf8');
      if (raw.endsWith('}')) s.end('HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n');
    }));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const o = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const req: HttpRequest = { method: 'POST', path: '/bookings', headers: { 'content-type': 'application/json', authorization: 'Bearer t' }, body: '{"carId":1,"note":"é"}' };
    const undici = new Pool(o, { connections: 1, pipelining: 1 });
    try {
      await (await undici.request({ method: 'POST', path: req.path, headers: req.headers, body: req.body })).body.dump();
      expect(encodeRequest(new URL(o).host, req).toString('utf8')).toBe(raw);
      const reqs: HttpRequest[] = [{ method: 'GET', path: '/a' }, req, { method: 'GET', path: '/c?x=1' }];
      const packed = EncodedRequests.of('h:1', reqs);
      expect(packed.length).toBe(3);
      reqs.forEach((r, i) => expect(packed.at(i).equals(encodeRequest('h:1', r))).toBe(true));
    } finally {
      await undici.destroy();
      srv.close();
      await capture.close();
    }
  });
});

describe('bench http client: failures', () => {
  it('reports a server that closes mid-answer as UND_ERR_SOCKET and replaces the connection', async () => {
    const pool = new HttpPool(origin, { connections: 1, timeoutMs: 2000 });
    try {
      const a = await ask(pool, { method: 'GET', path: '/midway' });
      expect(a.err?.code).toBe('UND_ERR_SOCKET');
      expect(a.status).toBe(0);
      expect(await ask(pool, { method: 'GET', path: '/json' })).toEqual({ err: null, status: 200, body: BIG });
      expect(pool.connectionsOpened).toBe(2);
    } finally { pool.close(); }
  });

  it('reports a server that never answers as a headers timeout, one that stalls mid-body as a body timeout', async () => {
    const pool = new HttpPool(origin, { connections: 2, timeoutMs: 300 });
    try {
      const t0 = performance.now();
      const [never, stall] = await Promise.all([ask(pool, { method: 'GET', path: '/never' }), ask(pool, { method: 'GET', path: '/stall-body' })]);
      const took = performance.now() - t0;
      expect(never.err?.code).toBe('UND_ERR_HEADERS_TIMEOUT');
      expect(stall.err?.code).toBe('UND_ERR_BODY_TIMEOUT');
      expect(took).toBeGreaterThanOrEqual(295);
      expect(took).toBeLessThan(1000);
      // Both sockets were dropped; the pool goes on with new ones.
      expect(await ask(pool, { method: 'GET', path: '/json' }, 300)).toEqual({ err: null, status: 200, body: '' });
      expect(pool.connectionsOpened).toBe(3);
    } finally { pool.close(); }
  });

  it('reports a refused connection as ECONNREFUSED, for every request queued behind it', async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise((r) => srv.close(r));
    const pool = new HttpPool(`http://127.0.0.1:${port}`, { connections: 2, timeoutMs: 2000 });
    try {
      const answers = await Promise.all(Array.from({ length: 5 }, () => ask(pool, { method: 'GET', path: '/' })));
      for (const a of answers) expect(a.err?.code).toBe('ECONNREFUSED');
    } finally { pool.close(); }
  });

  // The generator's outcome labels come from these codes: the same events must give undici's codes.
  const cases: [string, (s: net.Socket) => void][] = [
    ['close before the answer', (s) => s.end()],
    ['reset before the answer', (s) => s.resetAndDestroy()],
    ['close mid-head', (s) => s.end('HTTP/1.1 200 OK\r\ncontent-le')],
    ['close mid-body (keep-alive)', (s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc')],
    ['close mid-body (connection: close)', (s) => s.end('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 100\r\n\r\nabc')],
    ['close mid-chunks', (s) => s.end('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab')],
    ['close mid-chunks (connection: close)', (s) => s.end('HTTP/1.1 200 OK\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab')],
    ['reset mid-body', (s) => { s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc'); setTimeout(() => s.resetAndDestroy(), 20); }],
    ['reset after a whole answer with connection: close', (s) => { s.write('HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok'); s.resetAndDestroy(); }],
    ['HTTP/1.0 with a length', (s) => s.end('HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok')],
    ['103 Early Hints first', (s) => s.end('HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')],
    ['100 Continue not asked for', (s) => s.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')],
    ['not HTTP', (s) => s.write('FOO\r\n\r\n')],
    ['bad content-length', (s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\nok')],
    ['chunks with extensions and a trailer', (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a=b\r\nok\r\n1\r\n!\r\n0\r\nx-t: 1\r\n\r\n')],
    ['never', () => {}],
    ['headers then a stall', (s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc')],
  ];
  for (const [name, answer] of cases) {
    it(`gives undici's outcome: ${name}`, async () => {
      const srv = await rawServer(answer);
      const ours = new HttpPool(srv.origin, { connections: 1, timeoutMs: 300 });
      const theirs = new Pool(srv.origin, { connections: 1, pipelining: 1, headersTimeout: 300, bodyTimeout: 300 });
      try {
        const a = await ask(ours, { method: 'GET', path: '/' });
        // As the old generator read it: the request, then the body; an error in either is the outcome.
        const b = await (async () => {
          try {
            const r = await theirs.request({ method: 'GET', path: '/' });
            return { code: undefined as string | undefined, status: r.statusCode, body: await r.body.text() };
          } catch (e) {
            return { code: (e as { code?: string }).code, status: 0, body: '' };
          }
        })();
        expect({ code: a.err?.code, status: a.status, body: a.body }).toEqual(b);
      } finally {
        ours.close();
        await theirs.destroy();
        await srv.close();
      }
    });
  }
});

describe('openLoop over the client', () => {
  it('records answers, error codes, samples, timeouts and conn-errors with the same labels', async () => {
    const samples: { path: string; status: number; body: string }[] = [];
    let n = 0;
    const r = await openLoop(origin, [
      { name: 'search', rate: 200, next: () => ({ method: 'GET', path: `/json?i=${n++}` }), sampleEvery: 10, onSample: (req, status, body) => samples.push({ path: req.path, status, body }) },
      { name: 'hold', rate: 100, next: () => ({ method: 'POST', path: '/error?status=409', headers: { 'content-type': 'application/json' }, body: '{}' }) },
      { name: 'never', rate: 20, next: () => ({ method: 'GET', path: '/never' }) },
      { name: 'midway', rate: 20, next: () => ({ method: 'GET', path: '/midway' }) },
    ], 0.5, { connections: 16, timeoutMs: 300, arrivals: 'uniform', rng: rngFor(1, 1), maxInFlight: 10_000 });
    const by = Object.fromEntries(r.streams.map((s) => [s.name, s]));
    const outcomes = (name: string) => [...new Set(by[name]!.outcome.map((o) => by[name]!.labels[o]))];
    for (const s of r.streams) {
      expect(s.dropped).toBe(0);
      expect(s.unanswered).toBe(0);
      expect(s.due.length).toBe(s.sent);
      expect(s.latency.length).toBe(s.sent);
      expect(s.sent).toBeGreaterThanOrEqual(Math.floor(s.rate * 0.5) - 1);
      expect(s.sent).toBeLessThanOrEqual(Math.ceil(s.rate * 0.5) + 1);
    }
    expect(outcomes('search')).toEqual(['200']);
    expect(outcomes('hold')).toEqual(['409 CAR_UNAVAILABLE']);
    expect(outcomes('never')).toEqual(['timeout']);
    expect(outcomes('midway')).toEqual(['conn-error UND_ERR_SOCKET']);
    expect(by.never!.status.every((x) => x === 0)).toBe(true);
    expect(by.never!.latency.every((x) => x >= 290)).toBe(true);
    // Every 10th search is sampled, with its request and its whole body.
    expect(samples.length).toBe(Math.floor(by.search!.sent / 10));
    samples.forEach((s, k) => expect(s).toEqual({ path: `/json?i=${10 * k + 9}`, status: 200, body: BIG }));
    expect(r.generatorCores).toBeGreaterThan(0);
  });
});
