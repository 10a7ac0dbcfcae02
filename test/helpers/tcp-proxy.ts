import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to `target` that can freeze the connections it carries: their bytes stop in both directions and no
 * socket closes, as when a peer vanishes without a reset (a failed-over host, a dropped route). Connections opened
 * after a freeze flow.
 */
export interface TcpProxy {
  port: number;
  /** Freezes every connection open now; returns how many. */
  freeze(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const frozen: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    freeze() {
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
        frozen.push(client, upstream);
      }
      const n = pairs.size;
      pairs.clear(); // frozen for good: never resumed, destroyed on close
      return n;
    },
    async close() {
      for (const { client, upstream } of pairs) frozen.push(client, upstream);
      for (const socket of frozen) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
