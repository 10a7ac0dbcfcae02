// Run by test/unit/car-calendar-shapes.test.ts under `node --allow-natives-syntax --import tsx`: prints how many
// hidden classes the calendar's entries have, built as the search index builds them (upsertCar, then load).
import { CarCalendar, type IndexedCar } from '../../../shared/domain/car-calendar.js';

const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const cal = new CarCalendar();
const now = Date.UTC(2030, 0, 1);
cal.rebase(now);
const cities = ['HCM', 'HN', 'DN'];
for (let id = 1; id <= 300; id++) {
  // Rows as the driver hands them: each its own object literal, some prices beyond a small integer.
  const car: IndexedCar = {
    id, plate: `P-${id}`, model: 'VF8', city: cities[id % 3]!, dailyPrice: id % 7 === 0 ? 2 ** 40 + id : 500_000 + id,
    depositAmount: 1_000_000, currency: 'VND', turnaroundMinutes: id % 5 === 0 ? 0 : 60,
  };
  cal.upsertCar(car);
  cal.load(id, id % 2 ? [[id * 10, now + id * 3_600_000, now + id * 3_600_000 + 7_200_000]] : []);
}
cal.upsertCar({ id: 7, plate: 'P-7b', model: 'VF9', city: 'HN', dailyPrice: 1, depositAmount: 1, currency: 'VND', turnaroundMinutes: 30 });
cal.searchJson('HN', now, now + 86_400_000, 50, { open: Buffer.from('{"cars":['), close: Buffer.from(']}') });
const entries = [...(cal as unknown as { cars: Map<number, object> }).cars.values()];
const maps: object[] = [];
for (const e of entries) if (!maps.some((m) => haveSameMap(m, e))) maps.push(e);
console.log(JSON.stringify({ entries: entries.length, maps: maps.length }));
