import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhookSignature } from '../../shared/psp/signature.js';

const secret = 'whsec_test';
const body = JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', data: { amount: 100 } });
const t = 1_700_000_000;
const hmac = (s: string, payload: string) => createHmac('sha256', s).update(payload).digest('hex');

describe('signWebhook', () => {
  it('produces t=<t>,v1=<HMAC-SHA256(secret, "t.body")>', () => {
    expect(signWebhook(secret, body, t)).toBe(`t=${t},v1=${hmac(secret, `${t}.${body}`)}`);
  });
});

describe('verifyWebhookSignature', () => {
  const header = signWebhook(secret, body, t);

  it('accepts a valid signature', () => {
    expect(verifyWebhookSignature(secret, header, body, t)).toBe(true);
  });

  it('rejects a wrong secret', () => {
    expect(verifyWebhookSignature('other', header, body, t)).toBe(false);
  });

  it('rejects a tampered body', () => {
    expect(verifyWebhookSignature(secret, header, body.replace('100', '101'), t)).toBe(false);
    expect(verifyWebhookSignature(secret, header, body + ' ', t)).toBe(false);
  });

  it('rejects a tampered timestamp', () => {
    const v1 = header.split('v1=')[1];
    expect(verifyWebhookSignature(secret, `t=${t + 1},v1=${v1}`, body, t)).toBe(false);
  });

  it('accepts |now - t| = 300 s and rejects 301 s, in both directions', () => {
    expect(verifyWebhookSignature(secret, header, body, t + 300)).toBe(true);
    expect(verifyWebhookSignature(secret, header, body, t - 300)).toBe(true);
    expect(verifyWebhookSignature(secret, header, body, t + 301)).toBe(false);
    expect(verifyWebhookSignature(secret, header, body, t - 301)).toBe(false);
  });

  it('honours a custom tolerance', () => {
    expect(verifyWebhookSignature(secret, header, body, t + 10, 5)).toBe(false);
    expect(verifyWebhookSignature(secret, header, body, t + 5, 5)).toBe(true);
  });

  it('rejects a missing or empty header', () => {
    expect(verifyWebhookSignature(secret, undefined, body, t)).toBe(false);
    expect(verifyWebhookSignature(secret, '', body, t)).toBe(false);
  });

  it.each([
    'garbage',
    't=,v1=',
    `t=${t}`,
    `v1=${hmac(secret, `${t}.${body}`)}`,
    `t=abc,v1=${hmac(secret, `${t}.${body}`)}`,
    `t=${t},v1=zz`,
    `t=${t},v1=${hmac(secret, `${t}.${body}`).slice(0, 63)}`,
    `t=${t},v1=${hmac(secret, `${t}.${body}`)}00`,
    `t=${t},t=${t + 1},v1=${hmac(secret, `${t}.${body}`)}`,
  ])('rejects a garbled header: %s', (h) => {
    expect(verifyWebhookSignature(secret, h, body, t)).toBe(false);
  });

  it('parses parts in any order, with spaces and unknown parts', () => {
    const v1 = hmac(secret, `${t}.${body}`);
    expect(verifyWebhookSignature(secret, `v1=${v1},t=${t}`, body, t)).toBe(true);
    expect(verifyWebhookSignature(secret, ` v0=abc , t=${t} , v1=${v1.toUpperCase()}, x`, body, t)).toBe(true);
  });

  it('accepts when any of several v1 matches, and rejects when none does', () => {
    const good = hmac(secret, `${t}.${body}`);
    const bad = hmac('old-secret', `${t}.${body}`);
    expect(verifyWebhookSignature(secret, `t=${t},v1=${bad},v1=${good}`, body, t)).toBe(true);
    expect(verifyWebhookSignature(secret, `t=${t},v1=${good},v1=${bad}`, body, t)).toBe(true);
    expect(verifyWebhookSignature(secret, `t=${t},v1=${bad},v1=${bad}`, body, t)).toBe(false);
  });
});
