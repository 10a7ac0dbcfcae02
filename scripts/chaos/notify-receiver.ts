import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The test receiver of notifications (NOTIFY_WEBHOOK_URL): answers 200 to every POST and appends one JSON line per
 * delivery to `logPath` — {idempotencyKey, eventId, channel, eventType, bookingId} — for the `notifications-once`
 * invariant to count.
 */
export async function startNotifyReceiver(logPath: string): Promise<{ url: string; deliveries: () => number; close: () => Promise<void> }> {
  writeFileSync(logPath, '');
  let deliveries = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // counted with what the headers say
      }
      const key = req.headers['idempotency-key'];
      const line = {
        idempotencyKey: typeof key === 'string' ? key : null,
        eventId: body.eventId, channel: body.channel, eventType: body.eventType, bookingId: body.bookingId,
      };
      appendFileSync(logPath, `${JSON.stringify(line)}\n`);
      deliveries++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notify`;
  return {
    url,
    deliveries: () => deliveries,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
