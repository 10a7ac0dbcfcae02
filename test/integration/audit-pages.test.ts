import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { addDays, stayApi } from '../helpers/stays.js';

// Issue 8, item 10: GET /room-types/{id}/inventory/audit is paged oldest first (`limit` ≤ 5000, `cursor`,
// `nextCursor` null on the last page), and the pages leave no gap even while changes are committing.

let h: Harness;
let api: ReturnType<typeof stayApi>;
const D0 = '2031-03-01';

beforeAll(async () => {
  h = await startHarness();
  api = stayApi(h);
});
afterAll(async () => h?.close());

type Entry = { at: string; date: string; actor: string; reason: string; before: { sellable: number } };

async function page(rt: number, q: string) {
  const r = await h.req('GET', `/room-types/${rt}/inventory/audit?from=${D0}&to=${addDays(D0, 10)}${q}`, { token: api.operator });
  expect(r.status, r.text).toBe(200);
  return r.json as { entries: Entry[]; nextCursor: string | null };
}

async function allPages(rt: number, limit: number): Promise<{ entries: Entry[]; pages: number }> {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p = await page(rt, `&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(p.entries.length).toBeLessThanOrEqual(limit);
    entries.push(...p.entries);
    cursor = p.nextCursor;
    pages += 1;
  } while (cursor);
  return { entries, pages };
}

describe('audit pages', () => {
  it('pages of `limit` entries, oldest first, read back the whole ledger; the last page says nextCursor: null', async () => {
    const rt = (await api.roomType((await api.hotel()).id)).id;
    for (let i = 0; i < 4; i++) await api.setInventory(rt, D0, addDays(D0, 3), 5 + i); // 12 entries
    const whole = await page(rt, '');
    expect(whole.entries).toHaveLength(12);
    expect(whole.nextCursor).toBeNull();
    for (const limit of [1, 5, 12, 13]) {
      const { entries, pages } = await allPages(rt, limit);
      expect(entries).toEqual(whole.entries);
      expect(pages).toBe(Math.ceil(12 / limit));
    }
  });

  it('refuses a limit outside 1..5000 and a cursor it did not give (400 VALIDATION)', async () => {
    const rt = (await api.roomType((await api.hotel()).id)).id;
    for (const q of ['&limit=0', '&limit=5001', '&limit=1.5', '&cursor=abc', `&cursor=${Buffer.from('{"a":1}').toString('base64url')}`, '&cursor=%00']) {
      const r = await h.req('GET', `/room-types/${rt}/inventory/audit?from=${D0}&to=${addDays(D0, 3)}${q}`, { token: api.operator });
      expect([r.status, r.json.error.code], q).toEqual([400, 'VALIDATION']);
    }
  });

  it('no gap: an entry of a change that commits after a page was read, with a smaller id, comes on a later page', async () => {
    const rt = (await api.roomType((await api.hotel()).id)).id;
    await api.setInventory(rt, D0, addDays(D0, 2), 5); // 2 entries, committed
    // A change in flight: its ledger row draws its id now, and commits only after the first page is read.
    const slow = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      await slow.query(`SELECT set_config('booking.actor', 'operator:1', true), set_config('booking.reason', 'slow change', true)`);
      await slow.query(`UPDATE room_night SET sellable = sellable + 1 WHERE room_type_id = $1 AND night = $2`, [rt, D0]);
      await api.setInventory(rt, addDays(D0, 5), addDays(D0, 7), 4); // 2 entries with larger ids, committed
      const first = await page(rt, '&limit=3');
      expect(first.entries.map((e) => e.reason)).not.toContain('slow change');
      expect(first.nextCursor).not.toBeNull();
      await slow.query('COMMIT');
      const second = await page(rt, `&limit=3&cursor=${encodeURIComponent(first.nextCursor!)}`);
      const all = [...first.entries, ...second.entries];
      expect(all).toHaveLength(5);
      expect(all.filter((e) => e.reason === 'slow change')).toHaveLength(1);
      expect(second.nextCursor).toBeNull();
    } finally {
      await slow.end();
    }
  });
});
