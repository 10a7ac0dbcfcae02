import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { codeOf } from '../helpers/http.js';
import { newCustomerId } from '../helpers/customers.js';
import { addDays, withStayHarness, type StayApi } from '../helpers/stays.js';

let h: Harness;
let api: StayApi;
withStayHarness((f) => ({ h, api } = f));

describe('GET /hotels/availability', () => {
  it('lists a room type only when every night has ≥ rooms free; available is the min over nights', async () => {
    const city = 'Hue';
    const hotel = await api.hotel({ city, name: 'Availability Hotel' });
    const other = await api.hotel({ city: 'Elsewhere' });
    const d0 = '2027-10-01', d = (i: number) => addDays(d0, i);
    const a = await api.roomType(hotel.id, 400_000, 'A');
    const b = await api.roomType(hotel.id, 600_000, 'B');
    const c = await api.roomType(hotel.id, 100_000, 'C'); // night 1 missing
    const z = await api.roomType(hotel.id, 100_000, 'Z'); // night 1 sold out
    const far = await api.roomType(other.id, 100_000, 'Far');
    await api.setInventory(a.id, d(0), d(3), 3);
    await api.setInventory(a.id, d(1), d(2), 1);
    await api.setInventory(b.id, d(0), d(3), 2);
    await api.setInventory(c.id, d(0), d(1), 9);
    await api.setInventory(c.id, d(2), d(3), 9);
    await api.setInventory(z.id, d(0), d(3), 1);
    await api.setInventory(far.id, d(0), d(3), 9);
    expect((await api.hold(newCustomerId(), z.id, d(1), d(2))).status).toBe(201);

    const search = async (checkIn: string, checkOut: string, rooms?: number) => {
      const r = await h.req('GET', `/hotels/availability?city=${city}&checkIn=${checkIn}&checkOut=${checkOut}${rooms ? `&rooms=${rooms}` : ''}`);
      expect(r.status, r.text).toBe(200);
      return (r.json.roomTypes as { roomTypeId: number; available: number }[]).map((x) => [x.roomTypeId, x.available]);
    };
    const sorted = (xs: number[][]) => [...xs].sort((p, q) => p[0]! - q[0]!);
    expect(sorted(await search(d(0), d(3)))).toEqual([[a.id, 1], [b.id, 2]]);
    expect(sorted(await search(d(0), d(3), 2))).toEqual([[b.id, 2]]);
    expect(await search(d(0), d(3), 3)).toEqual([]);
    expect(sorted(await search(d(0), d(1)))).toEqual([[a.id, 3], [b.id, 2], [c.id, 9], [z.id, 1]]);
    expect(sorted(await search(d(2), d(3), 3))).toEqual([[a.id, 3], [c.id, 9]]);
    expect(sorted(await search(d(2), d(4)))).toEqual([]); // d(3) exists nowhere
    // Full shape of one entry.
    const full = await h.req('GET', `/hotels/availability?city=${city}&checkIn=${d(0)}&checkOut=${d(3)}&rooms=2`);
    expect(full.json.roomTypes).toEqual([
      { roomTypeId: b.id, hotelId: hotel.id, hotelName: 'Availability Hotel', name: 'B', available: 2, depositAmount: 600_000, currency: 'VND' },
    ]);

    // A hold takes the last free room of A's night 1 → A disappears; a hold on B lowers its minimum.
    expect((await api.hold(newCustomerId(), a.id, d(1), d(2))).status).toBe(201);
    expect((await api.hold(newCustomerId(), b.id, d(2), d(3))).status).toBe(201);
    expect(sorted(await search(d(0), d(3)))).toEqual([[b.id, 1]]);
    expect(sorted(await search(d(0), d(1)))).toEqual([[a.id, 3], [b.id, 2], [c.id, 9], [z.id, 1]]);
    // Whatever search lists with `rooms` can be held right away; what it omits is SOLD_OUT.
    const listed = await search(d(0), d(3), 1);
    for (const rt of [a, b, c, z]) {
      const r = await api.hold(newCustomerId(), rt.id, d(0), d(3), 1);
      expect(codeOf(r), rt.name).toBe(listed.some(([id]) => id === rt.id) ? '201' : '409 SOLD_OUT');
    }
    // Validation.
    for (const q of [`city=${city}&checkIn=${d(3)}&checkOut=${d(3)}`, `city=${city}&checkIn=${d(0)}&checkOut=${d(40)}`,
      `city=${city}&checkIn=${d(0)}&checkOut=${d(1)}&rooms=0`, `checkIn=${d(0)}&checkOut=${d(1)}`]) {
      expect(codeOf(await h.req('GET', `/hotels/availability?${q}`)), q).toBe('400 VALIDATION');
    }
  });
});
