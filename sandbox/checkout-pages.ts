import { Router } from '@koa/router';
import type { Transitions } from './payments.js';
import type { SandboxState } from './state.js';
import { notFound } from './http.js';
import { findIntent } from './v1-api.js';

// The checkout a customer is sent to (an intent's checkoutUrl): plain HTML with Pay / Fail buttons.

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body style="font-family:sans-serif;max-width:32rem;margin:3rem auto"><h1>${esc(title)}</h1>${body}</body></html>`;
}

export function checkoutPages(state: SandboxState, transitions: Transitions) {
  const pages = new Router();
  pages.get('/checkout/:id', (ctx) => {
    const intent = findIntent(state, ctx.params.id!);
    const base = `/checkout/${encodeURIComponent(intent.id)}`;
    ctx.type = 'html';
    ctx.body = page(
      'Checkout',
      `<p>Pay <b>${esc(String(intent.amount))} ${esc(intent.currency)}</b> for booking <b>${esc(intent.reference)}</b></p>
<p>Status: ${esc(intent.status)}</p>
<form method="post" action="${base}/pay"><button type="submit">Pay</button></form>
<form method="post" action="${base}/fail"><button type="submit">Fail payment</button></form>`,
    );
  });
  pages.post('/checkout/:id/:action', (ctx) => {
    const intent = findIntent(state, ctx.params.id!);
    const action = ctx.params.action;
    if (action !== 'pay' && action !== 'fail') throw notFound('unknown action');
    const allowed = action === 'pay' ? ['requires_payment', 'failed'] : ['requires_payment'];
    ctx.type = 'html';
    if (!allowed.includes(intent.status)) {
      ctx.status = 409;
      ctx.body = page('Nothing to do', `<p>This payment is already ${esc(intent.status)}.</p>`);
      return;
    }
    if (action === 'pay') transitions.succeed(intent);
    else transitions.fail(intent);
    ctx.body = page('Payment ' + intent.status, `<p>Payment for booking ${esc(intent.reference)}: ${esc(intent.status)}.</p>`);
  });
  return pages;
}
