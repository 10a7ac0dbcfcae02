import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the gateway received: the Idempotency-Key and the notification's booking and event type. */
export interface Delivery {
  key: string;
  bookingId: number;
  eventType: string;
}

/**
 * A stand-in for the sms/push gateway (NOTIFY_WEBHOOK_URL): records every delivery; refuses with 503 while
 * `refusing` (nothing recorded), or records and never answers while `hanging` (the sender is then killed mid-send).
 */
export async function startGateway() {
  const g = {
    url: '', refusing: false, refused: 0, hanging: false, hung: [] as ServerResponse[], accepted: [] as Delivery[],
    /** Answers (by destroying) every POST left hanging. */
    release() {
      g.hanging = false;
      for (const res of g.hung.splice(0)) res.destroy();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (g.refusing) {
        g.refused++;
        res.writeHead(503).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      g.accepted.push({ key: String(req.headers['idempotency-key']), bookingId: body.bookingId, eventType: body.eventType });
      if (g.hanging) g.hung.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  g.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notify`;
  return g;
}
export type Gateway = Awaited<ReturnType<typeof startGateway>>;
