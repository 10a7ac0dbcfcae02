// The deliberate breaks of `npm run check:mutations` (scripts/mutation-check.ts): each one breaks the implementation
// under a mended test, and that test must then fail (and pass again without the break). A break is a list of
// exact search → replace edits, each search found exactly once in its file (test/unit/mutations.test.ts checks the
// active ones still match the code). `retarget`: the code or test it aims at was rewritten; point `edits` and `test`
// at the new code, then make it active.
// `weakAt`: a commit whose version of the test files passed with the break in place (the defect that was mended);
// `--baseline` runs those versions too, for the record.

export interface Edit {
  file: string;
  search: string;
  replace: string;
}

export interface Mutation {
  name: string;
  status: 'active' | 'retarget';
  edits: Edit[];
  /** The mended test: a file, and a name filter (vitest -t) when the file has more than the test. */
  test: string;
  filter?: string;
  env?: Record<string, string>;
  weakAt?: string;
  why: string;
}

/** The branch point of the tests branch: every test as it was before issue 20's mending. */
const BEFORE = '322b545';

export const MUTATIONS: Mutation[] = [
  {
    name: 'no cancel',
    status: 'active',
    why: 'every cancellation is refused INVALID_STATE; the mixed workload must see cancels succeed',
    edits: [{
      file: 'shared/usecases/bookings.ts',
      search: "if (!nextStatus(b.status, 'cancel')) throw invalidState(b.status, 'cancel');",
      replace: "if (b.status) throw invalidState(b.status, 'cancel');",
    }],
    test: 'test/integration/rates-concurrency.test.ts', filter: 'mixed workload', weakAt: BEFORE,
  },
  {
    name: 'a flush of the wrong Redis',
    status: 'active',
    why: "the flush reaches none of the data the processes under test use (here: it flushes nothing); the mended test counts their connections and job keys before the flush and the keys gone after it",
    edits: [{
      file: 'test/integration/jobs-redis-loss.test.ts',
      search: "    expect(await redis.client.multi().flushall().dbsize().exec()).toEqual([[null, 'OK'], [null, 0]]);",
      replace: "    expect(await redis.client.multi().ping().dbsize().exec()).toEqual([[null, 'PONG'], [null, 0]]);",
    }],
    test: 'test/integration/jobs-redis-loss.test.ts', filter: 'FLUSHALL mid-run',
  },
  {
    name: 'no intent cancel',
    status: 'active',
    why: 'an intent is reported cancelled without asking the provider; the cancellation tests must see the intent still payable at the provider',
    edits: [{
      file: 'shared/usecases/intent-cancellations.ts',
      search: '    return await deps.psp.cancelIntent(id);',
      replace: "    return typeof item === 'string' ? null : { ...item, status: 'canceled' };",
    }],
    test: 'test/integration/intent-cancellation.test.ts',
  },
  {
    name: 'a route that accepts a hostile value',
    status: 'active',
    why: 'POST /bookings takes any Idempotency-Key (2,000 characters, say) instead of 1–255; the fuzz must see a 201 the document refuses',
    edits: [{
      file: 'api/routes/bookings.ts',
      search: "const input = holdInput(jsonBody(ctx.state));\n    const idempotencyKey = parseHeader(ctx, 'Idempotency-Key', idempotencyKeyHeader);",
      replace: "const input = holdInput(jsonBody(ctx.state));\n    const idempotencyKey = ctx.get('idempotency-key') || undefined;",
    }],
    test: 'test/fuzz/endpoints.test.ts', filter: 'holdBooking', env: { FUZZ_RUNS: '300', FUZZ_SEED: '20' }, weakAt: BEFORE,
  },
  {
    name: 'a wrong role declaration',
    status: 'active',
    why: 'GET /bookings/{id}/pay declares and lets hosts through (the contract: the owner only, a host gets 403)',
    edits: [
      {
        file: 'api/routes/bookings.ts',
        search: "router.get('/bookings/:id/pay', authenticate(deps.config.JWT_SECRET, ['customer'])",
        replace: "router.get('/bookings/:id/pay', authenticate(deps.config.JWT_SECRET, ['customer', 'host'])",
      },
      { file: 'api/routes/bookings.ts', search: "path: '/bookings/{id}/pay', tag: 'bookings', auth: ['customer']", replace: "path: '/bookings/{id}/pay', tag: 'bookings', auth: ['customer', 'host']" },
    ],
    test: 'test/integration/auth-matrix.test.ts', weakAt: BEFORE,
  },
  {
    name: 'a 429 never sent',
    status: 'active',
    why: "the sandbox provider never answers its injected 429s; the refund test must notice its fault did not fire",
    edits: [{
      file: 'sandbox/v1-api.ts',
      search: '    else if (injected) {',
      replace: '    else if (injected && injected.answer !== 429) {',
    }],
    test: 'test/regressions/known-bugs.test.ts', filter: '429', weakAt: BEFORE,
  },
  {
    name: 'a refusal that writes',
    status: 'active',
    why: "GET /bookings/{id} bumps the booking's version before refusing another tenant (404): same row count, other content",
    edits: [{
      file: 'shared/usecases/bookings.ts',
      search: '  const b = visibleTo(actor, await findBooking(deps.db, id));\n',
      replace: '  const found = await findBooking(deps.db, id);\n  if (found && actor.role === \'customer\' && found.customerId !== actor.id) await transition(deps.db, found, found.status);\n'
        + '  const b = visibleTo(actor, found);\n',
    }],
    test: 'test/fuzz/endpoints.test.ts', filter: 'getBooking', env: { FUZZ_RUNS: '200', FUZZ_SEED: '20' }, weakAt: BEFORE,
  },
  {
    name: 'a search index that never answers',
    status: 'active',
    why: 'the in-memory car index is never fresh, so every search falls back to SQL; the comparison must not be SQL with itself',
    edits: [{
      file: 'shared/search/indexes.ts',
      search: '    return this.fresh(this.carFeed, now);',
      replace: '    return now < 0 ? this.fresh(this.carFeed, now) : null;',
    }],
    test: 'test/integration/search-index.test.ts', filter: 'answers exactly what the SQL search answers', weakAt: BEFORE,
  },
];
