import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config.js';

// Issue 8, item 9: PSP_SANDBOX=true in production is allowed by the contract (a deployment where no money moves),
// but the sandbox's /sandbox/* routes confirm payments without money: there it may listen on loopback only.

const production = {
  NODE_ENV: 'production', JWT_SECRET: 'j'.repeat(40), PAYMENT_WEBHOOK_SECRET: 'w'.repeat(40), PSP_API_KEY: 'k', DASHBOARD_PASSWORD: 'p',
  PSP_SANDBOX: 'true', NOTIFY_WEBHOOK_URL: 'none',
};

describe('the sandbox provider in a production configuration', () => {
  it('is accepted on 127.0.0.1 (the default) or another loopback address', () => {
    expect(parseConfig(production).PSP_SANDBOX).toBe(true);
    for (const host of ['127.0.0.1', '127.0.0.53', '::1', 'localhost']) expect(parseConfig({ ...production, PSP_HOST: host }).PSP_HOST).toBe(host);
  });

  it('refuses to start when it would listen beyond loopback, naming PSP_HOST', () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'psp.internal']) {
      expect(() => parseConfig({ ...production, PSP_HOST: host }), host).toThrow(/PSP_HOST: must be a loopback address/);
    }
  });

  it('development keeps the documented escape hatch (compose runs the sandbox as PSP_URL on a private network)', () => {
    expect(parseConfig({ PSP_HOST: '0.0.0.0' }).PSP_HOST).toBe('0.0.0.0');
    expect(parseConfig({ ...production, PSP_SANDBOX: 'false', PSP_URL: 'http://psp:4000', PSP_HOST: '0.0.0.0' }).PSP_HOST).toBe('0.0.0.0');
  });
});
