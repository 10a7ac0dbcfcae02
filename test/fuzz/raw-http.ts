import http from 'node:http';

/** A request exactly as the fuzzer wants it on the wire: raw path (with query), raw body, any headers Node lets through. */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** Sends `r` to `baseUrl` with node:http (fetch refuses much of what a hostile client may send). */
export function send(baseUrl: string, r: RawRequest): Promise<RawReply> {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method: r.method, path: r.path, headers: r.headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (r.body !== undefined) req.end(r.body);
    else req.end();
  });
}

export const closeAgent = () => agent.destroy();
