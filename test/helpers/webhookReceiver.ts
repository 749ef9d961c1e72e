// The app's webhook endpoint in the tests: each delivery verified with standardwebhooks (the
// package apps use) against the endpoint's secret, kept in order, answered 204, then handed on.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface WebhookReceiver {
  /** Where Parley delivers (WEBHOOK_URL). */
  url: string;
  /** Every event received, verified, in order. */
  events: any[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string, onEvent: (event: any) => void = () => {}): Promise<WebhookReceiver> {
  const events: any[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const h = req.headers;
      const event = new Webhook(secret).verify(body, { 'webhook-id': String(h['webhook-id']), 'webhook-timestamp': String(h['webhook-timestamp']), 'webhook-signature': String(h['webhook-signature']) });
      events.push(event);
      res.writeHead(204).end();
      onEvent(event);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    events,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
