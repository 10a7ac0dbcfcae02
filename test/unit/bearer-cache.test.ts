import { describe, expect, it } from 'vitest';
import { bearerVerifier, verifyBearer } from '../../api/middleware/auth.js';
import { token } from '../helpers/http.js';

// fast-jwt's cache of verified tokens (api/middleware/auth.ts): a remembered token is still refused once it expires,
// and a refusal is never remembered as a success.
describe('the bearer verifier\'s cache', () => {
  const secret = 'x'.repeat(32);

  it('a token verified before its exp is refused after it, cached or not', async () => {
    const verify = bearerVerifier(secret);
    const t = token(secret, { sub: '7', role: 'customer' }, 1);
    expect(verifyBearer(verify, `Bearer ${t}`)).toEqual({ id: 7, role: 'customer' });
    expect(verifyBearer(verify, `Bearer ${t}`)).toEqual({ id: 7, role: 'customer' }); // from the cache
    await new Promise((r) => setTimeout(r, 2_100)); // exp has a resolution of 1 s
    expect(() => verifyBearer(verify, `Bearer ${t}`)).toThrow(/invalid or expired/);
  });

  it('a token signed with another secret stays refused, and does not displace a good one', () => {
    const verify = bearerVerifier(secret);
    const good = token(secret, { sub: '8', role: 'host' });
    const forged = token('y'.repeat(32), { sub: '8', role: 'operator' });
    expect(verifyBearer(verify, `Bearer ${good}`)).toEqual({ id: 8, role: 'host' });
    for (let i = 0; i < 3; i++) expect(() => verifyBearer(verify, `Bearer ${forged}`)).toThrow(/invalid or expired/);
    expect(verifyBearer(verify, `Bearer ${good}`)).toEqual({ id: 8, role: 'host' });
  });
});
