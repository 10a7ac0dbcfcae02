import { describe, expect, it } from 'vitest';
import { bearerVerifier, verifyBearer } from '../../api/middleware/auth.js';
import { token } from '../helpers/http.js';

// fast-jwt's cache of verified tokens (api/middleware/auth.ts): a remembered token is still refused once it expires,
// and a refusal is never remembered as a success.
describe('the bearer verifier\'s cache', () => {
  const secret = 'x'.repeat(32);

  it('a token verified before its exp is refused after it, cached or not', async () => {
    const verify = bearerVerifier(secret);
    const t = token(secret, { sub: '7', role: 'customer' }, 2); // exp 1–2 s ahead (whole seconds)
    expect(verifyBearer(verify, `Bearer ${t}`)).toEqual({ id: 7, role: 'customer' });
    expect(verifyBearer(verify, `Bearer ${t}`)).toEqual({ id: 7, role: 'customer' }); // from the cache
    await new Promise((r) => setTimeout(r, 2_100));
    expect(() => verifyBearer(verify, `Bearer ${t}`)).toThrow(/invalid or expired/);
  });

  it('a refusal is not remembered: a token refused before its nbf is accepted after it', async () => {
    const verify = bearerVerifier(secret);
    const nbf = Math.floor(Date.now() / 1000) + 2;
    const t = token(secret, { sub: '8', role: 'host', nbf });
    expect(() => verifyBearer(verify, `Bearer ${t}`)).toThrow(/invalid or expired/);
    await new Promise((r) => setTimeout(r, nbf * 1000 - Date.now() + 50));
    expect(verifyBearer(verify, `Bearer ${t}`)).toEqual({ id: 8, role: 'host' });
  });
});
