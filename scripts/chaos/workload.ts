import { randomUUID } from 'node:crypto';
import type { Rng } from './rng.js';
import type { ApiCall, Stats } from './http.js';

// The seeded workload over HTTP: car and stay holds (some with an Idempotency-Key and a replay), payments through
// the sandbox's checkout (paid, failed, abandoned; paid late, after expiry or cancellation), cancellations by the
// customer, the host and an operator, pickups and returns, operator inventory adjustments, reads and searches.
// Webhook duplication, loss, delay and reordering, `processing` and the provider's error answers come from the
// fault schedule (faults.ts), which steers the sandbox provider.

const HOST = 900;
const OPERATOR = 1;
const CUSTOMERS = 40;
const CITY = 'ChaosCity';

interface Tracked {
  id: number;
  kind: 'car' | 'stay';
  customer: number;
  status: string;
  intentId?: string;
  /** What it books now (the body of its hold, then of its last change). */
  terms: Record<string, unknown>;
}

export interface WorkloadContext {
  rng: Rng;
  call: ApiCall;
  stats: Stats;
  apiUrls: string[];
  pspUrl: string;
  token: (sub: number, role: 'customer' | 'host' | 'operator') => string;
}

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
const hourFromNow = (h: number) => new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + h * 3_600_000).toISOString();

export async function setupCatalogue(c: WorkloadContext) {
  const base = c.apiUrls[0]!;
  const cars: number[] = [];
  for (let i = 0; i < 12; i++) {
    const body = {
      plate: `CH-${randomUUID().slice(0, 8)}`, model: 'Chaos', city: CITY, dailyPrice: c.rng.int(1, 20) * 50_000,
      depositAmount: c.rng.int(1, 10) * 100_000, turnaroundMinutes: c.rng.pick([0, 60, 120]),
    };
    const r = await c.call(base, 'setup', 'POST', '/cars', { token: c.token(HOST, 'host'), body });
    if (r?.status !== 201) throw new Error(`setup: POST /cars answered ${r?.status}`);
    cars.push(r.json.id);
  }
  const roomTypes: number[] = [];
  for (let i = 0; i < 2; i++) {
    const op = c.token(OPERATOR, 'operator');
    const hotel = await c.call(base, 'setup', 'POST', '/hotels', { token: op, body: { name: `Chaos ${i}`, city: CITY, timezone: 'Asia/Ho_Chi_Minh' } });
    if (hotel?.status !== 201) throw new Error(`setup: POST /hotels answered ${hotel?.status}`);
    for (let j = 0; j < 2; j++) {
      const rt = await c.call(base, 'setup', 'POST', `/hotels/${hotel.json.id}/room-types`, { token: op, body: { name: `R${j}`, depositAmount: c.rng.int(1, 5) * 100_000 } });
      if (rt?.status !== 201) throw new Error(`setup: POST room-types answered ${rt?.status}`);
      const inv = await c.call(base, 'setup', 'PUT', `/room-types/${rt.json.id}/inventory`, { token: op, body: { from: day(2), to: day(40), sellable: c.rng.int(3, 6), reason: 'chaos setup' } });
      if (inv?.status !== 200) throw new Error(`setup: PUT inventory answered ${inv?.status}`);
      roomTypes.push(rt.json.id);
    }
  }
  return { cars, roomTypes };
}

export function createWorkload(c: WorkloadContext, catalogue: { cars: number[]; roomTypes: number[] }) {
  const bookings: Tracked[] = [];
  const api = () => c.rng.pick(c.apiUrls);
  const customer = () => 10_000 + c.rng.int(1, CUSTOMERS);
  const withStatus = (...s: string[]) => bookings.filter((b) => s.includes(b.status));

  async function hold(kind: 'car' | 'stay') {
    const who = customer();
    const body = kind === 'car'
      ? (() => {
          const start = c.rng.int(24, 24 * 30);
          return { carId: c.rng.pick(catalogue.cars), from: hourFromNow(start), to: hourFromNow(start + c.rng.int(2, 72)) };
        })()
      : (() => {
          const start = c.rng.int(3, 35);
          return { roomTypeId: c.rng.pick(catalogue.roomTypes), checkIn: day(start), checkOut: day(start + c.rng.int(1, 4)), rooms: c.rng.int(1, 2) };
        })();
    const key = c.rng.chance(0.3) ? randomUUID() : undefined;
    const headers = key ? { 'idempotency-key': key } : undefined;
    const r = await c.call(api(), `hold.${kind}`, 'POST', '/bookings', { token: c.token(who, 'customer'), body, headers });
    if (r?.status === 201) bookings.push({ id: r.json.bookingId, kind, customer: who, status: 'HOLD', terms: body });
    // A client retrying with its key (a lost answer): the same answer, nothing new created.
    if (key && r && r.status < 500) await c.call(api(), 'hold.replay', 'POST', '/bookings', { token: c.token(who, 'customer'), body, headers });
  }

  async function pay() {
    const b = c.rng.pick(withStatus('HOLD').slice(-30));
    if (!b) return;
    const r = await c.call(api(), 'pay', 'GET', `/bookings/${b.id}/pay`, { token: c.token(b.customer, 'customer') });
    const location = r?.status === 303 ? r.headers.get('location') : null;
    if (!location) return refresh(b);
    b.intentId = location.split('/').pop();
    const what = c.rng.weighted({ pay: 60, fail: 10, abandon: 30 });
    if (what === 'abandon') return;
    await checkout(b, what);
  }

  async function checkout(b: Tracked, action: 'pay' | 'fail') {
    try {
      const res = await fetch(`${c.pspUrl}/checkout/${b.intentId}/${action}`, { method: 'POST', signal: AbortSignal.timeout(10_000) });
      c.stats.answer(`checkout.${action}`, res.status);
      await res.arrayBuffer();
    } catch {
      c.stats.transportError();
    }
  }

  /** Pays an intent of a booking that already left HOLD (expired or cancelled): must be refused or refunded. */
  async function payLate() {
    const b = c.rng.pick(bookings.filter((x) => x.intentId && ['EXPIRED', 'CANCELLED'].includes(x.status)).slice(-30));
    if (b) await checkout(b, 'pay');
  }

  async function cancel() {
    const b = c.rng.pick(withStatus('HOLD', 'CONFIRMED').slice(-40));
    if (!b) return;
    const by = c.rng.weighted({ customer: 60, host: b.kind === 'car' ? 20 : 0, operator: 20 });
    const token = by === 'customer' ? c.token(b.customer, 'customer') : by === 'host' ? c.token(HOST, 'host') : c.token(OPERATOR, 'operator');
    const r = await c.call(api(), `cancel.${by}`, 'POST', `/bookings/${b.id}/cancel`, { token, body: { reason: 'chaos' } });
    if (r?.status === 200) b.status = 'CANCELLED';
    else await refresh(b);
  }

  async function trip() {
    const b = c.rng.pick(withStatus('CONFIRMED', 'ON_TRIP').slice(-40));
    if (!b) return;
    const token = b.kind === 'car' ? c.token(HOST, 'host') : c.token(OPERATOR, 'operator');
    const step = b.status === 'CONFIRMED' ? 'pickup' : 'return';
    const r = await c.call(api(), step, 'POST', `/bookings/${b.id}/${step}`, { token });
    if (r?.status === 200) b.status = step === 'pickup' ? 'ON_TRIP' : 'COMPLETED';
    else await refresh(b);
  }

  /** The terms a change asks for: near the current ones, sometimes another car or room type of the same hotel. */
  function changedTerms(b: Tracked): Record<string, unknown> {
    const t = b.terms;
    if (b.kind === 'car') {
      const from = Date.parse(String(t.from));
      if (b.status === 'ON_TRIP') return { to: new Date(Math.max(from, Date.now()) + c.rng.int(1, 72) * 3_600_000).toISOString() };
      const shift = c.rng.int(-12, 24) * 3_600_000;
      const what = c.rng.weighted({ to: 40, move: 30, car: 30 });
      if (what === 'car') return { carId: c.rng.pick(catalogue.cars) };
      if (what === 'to') return { to: new Date(from + c.rng.int(2, 96) * 3_600_000).toISOString() };
      return { from: new Date(Math.max(from + shift, Date.now() + 3_600_000)).toISOString(), to: new Date(Math.max(from + shift, Date.now() + 3_600_000) + c.rng.int(2, 72) * 3_600_000).toISOString() };
    }
    const start = Math.round((Date.parse(`${String(t.checkIn)}T00:00:00Z`) - Date.parse(`${day(0)}T00:00:00Z`)) / 86_400_000);
    if (b.status === 'ON_TRIP') return { checkOut: day(start + c.rng.int(1, 4)) };
    const what = c.rng.weighted({ shift: 40, rooms: 30, roomType: 30 });
    if (what === 'rooms') return { rooms: c.rng.int(1, 3) };
    if (what === 'roomType') {
      const i = catalogue.roomTypes.indexOf(Number(t.roomTypeId));
      return { roomTypeId: catalogue.roomTypes[i ^ 1] ?? t.roomTypeId };
    }
    const checkIn = Math.min(37, Math.max(3, start + c.rng.int(-2, 2)));
    return { checkIn: day(checkIn), checkOut: day(Math.min(40, checkIn + c.rng.int(1, 4))) };
  }

  async function change() {
    const b = c.rng.pick(withStatus('HOLD', 'CONFIRMED', 'ON_TRIP').slice(-40));
    if (!b) return;
    const by = c.rng.weighted({ customer: 70, host: b.kind === 'car' ? 10 : 0, operator: 20 });
    const token = by === 'customer' ? c.token(b.customer, 'customer') : by === 'host' ? c.token(HOST, 'host') : c.token(OPERATOR, 'operator');
    const body = changedTerms(b);
    const headers = c.rng.chance(0.3) ? { 'idempotency-key': randomUUID() } : undefined;
    const r = await c.call(api(), `change.${b.kind}`, 'POST', `/bookings/${b.id}/change`, { token, body, headers });
    if (headers && r && r.status < 500) await c.call(api(), 'change.replay', 'POST', `/bookings/${b.id}/change`, { token, body, headers });
    if (r?.status !== 200) return refresh(b);
    b.status = r.json.status;
    b.terms = b.kind === 'car'
      ? { carId: r.json.carId, from: r.json.from, to: r.json.to }
      : { roomTypeId: r.json.roomTypeId, checkIn: r.json.checkIn, checkOut: r.json.checkOut, rooms: r.json.rooms };
    // The old deposit's intent, paid after all: the payment must be refunded in full (the hold stays a HOLD).
    if (b.status === 'HOLD' && r.json.change.depositDelta !== 0 && b.intentId) {
      if (c.rng.chance(0.3)) await checkout(b, 'pay');
      b.intentId = undefined;
    }
  }

  async function adjust() {
    const start = c.rng.int(2, 38);
    const body = { from: day(start), to: day(Math.min(40, start + c.rng.int(1, 5))), sellable: c.rng.int(0, 8), reason: 'chaos adjustment' };
    await c.call(api(), 'adjust', 'PUT', `/room-types/${c.rng.pick(catalogue.roomTypes)}/inventory`, { token: c.token(OPERATOR, 'operator'), body });
  }

  async function refresh(b?: Tracked) {
    const t = b ?? c.rng.pick(bookings.slice(-60));
    if (!t) return;
    const r = await c.call(api(), 'get', 'GET', `/bookings/${t.id}`, { token: c.token(t.customer, 'customer') });
    if (r?.status === 200) t.status = r.json.status;
  }

  async function search() {
    const start = c.rng.int(2, 30);
    if (c.rng.chance(0.5)) await c.call(api(), 'search.cars', 'GET', `/cars?city=${CITY}&from=${encodeURIComponent(hourFromNow(start * 24))}&to=${encodeURIComponent(hourFromNow(start * 24 + 48))}`);
    else await c.call(api(), 'search.hotels', 'GET', `/hotels/availability?city=${CITY}&checkIn=${day(start)}&checkOut=${day(start + 2)}`);
  }

  const ops = {
    'hold.car': () => hold('car'), 'hold.stay': () => hold('stay'), pay, payLate, cancel, trip, change, adjust, get: () => refresh(), search,
  } as const;
  const weights: Record<keyof typeof ops, number> = {
    'hold.car': 18, 'hold.stay': 14, pay: 24, payLate: 5, cancel: 9, trip: 5, change: 10, adjust: 5, get: 12, search: 8,
  };

  return {
    bookings,
    /** One seeded operation. */
    async step() {
      const name = c.rng.weighted(weights);
      c.stats.op(name);
      await ops[name]();
    },
  };
}
