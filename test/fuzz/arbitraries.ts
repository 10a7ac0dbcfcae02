import fc from 'fast-check';

// Hostile values for the endpoint fuzz. JSON bodies are written by `jsonText`, which can say what
// JSON.stringify cannot: numbers out of double range (1e400), -0, duplicate keys, deep nesting.

/** JSON text written as is (a number JSON.stringify cannot produce, a deep nest). */
export class RawJson {
  constructor(readonly text: string) {}
}
/** An object written with these entries in order, duplicate keys included. */
export class Entries {
  constructor(readonly entries: [string, unknown][]) {}
}

export function jsonText(v: unknown): string {
  if (v instanceof RawJson) return v.text;
  if (v instanceof Entries) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v) ?? 'null';
}

const deep = (n: number, open: string, close: string) => new RawJson(open.repeat(n) + '1' + close.repeat(n));

/**
 * Amounts at the money bound (10^15 minor units, CONTRACT.md "Conventions") and at the totals derived from it: a
 * price a few days of which pass it, a deposit a few rooms of which do, and the exact-integer edge beyond.
 */
export const boundaryAmount: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(1e15, 1e15 - 1, 1e15 + 1, 5e14, 5e14 + 1, 333_333_333_333_333, 333_333_333_333_334, 1e13, 1e12 + 1, 2 ** 53 - 1, 9_007_199_254_740_991),
  fc.tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: -1, max: 1 })).map(([k, d]) => Math.floor(1e15 / k) + d),
);

/** Numbers at and beyond every boundary the service has: ids, int4/int8, safe integers, doubles. */
export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(0, -1, 1.5, 0.1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 2 ** 64, -(2 ** 63), 1e21, 1e308, -1e308, 5e-324),
  boundaryAmount,
  fc.constantFrom('1e400', '-1e400', '-0', '-0.0', '1E2', '1.0', '9223372036854775808', '99999999999999999999999', '1e-400', '0.00000000000000000001')
    .map((t) => new RawJson(t)),
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((b) => new RawJson(b.toString())),
);

/** Strings with what breaks parsers, logs and databases: NUL and control characters, lone surrogates, RTL marks, huge lengths. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 10 }),
  fc.constantFrom(
    '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff\ud800', '\u202e\u202d', '\ufeff', '🚗🏨', 'ǅ', 'İ', 'ß', '\r\n', '\\', '"', "'; DROP TABLE booking; --",
    '%00', '%', '%zz', '../../etc/passwd', 'null', 'undefined', 'NaN', 'Infinity', '-0', '0x10', '1e3', ' 1', '1 ', '+1', '01', '١٢٣',
    'x'.repeat(256), 'x'.repeat(10_000), '\u0000'.repeat(1000), '__proto__', 'constructor', 'toString',
  ),
);

const pad = (n: number, w: number) => String(n).padStart(w, '0');
/** Years, months, days and times at and beyond the calendar's edges. */
const year = fc.oneof(fc.integer({ min: 2026, max: 2035 }), fc.constantFrom(0, 1, 1969, 1970, 1999, 2038, 9999));
const month = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 13, 99));
const day = fc.oneof(fc.integer({ min: 1, max: 28 }), fc.constantFrom(0, 29, 30, 31, 32, 99));
/** Offsets: real ones, impossible ones (+99:99 was a 500), and spellings that are not offsets. */
export const offset = fc.oneof(
  fc.constantFrom('Z', '+07:00', '-05:00', '+00:00', '-00:00', '+14:00', '-12:00', '+05:45'),
  fc.constantFrom('+99:99', '+24:00', '-23:59', '+23:60', '+14:01', '-99:00', '+0700', '+07', 'z', '', ' UTC', '+07:00:00', 'Z+07:00', '+٠٧:٠٠', '+07:0'),
  fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 })).map(([s, h, m]) => `${s}${pad(h, 2)}:${pad(m, 2)}`),
);

/** ISO-8601 instants, well and badly formed: impossible dates and times, offsets, 5-digit and signed years. */
export const hostileInstant: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(year, month, day, fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }),
    fc.constantFrom('', '.5', '.123456789', '.'), offset)
    .map(([y, mo, d, h, mi, s, f, o]) => `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${f}${o}`),
  fc.constantFrom(
    '+275760-09-13T00:00:00Z', '+275760-09-13T00:00:00.001Z', '-271821-04-20T00:00:00Z', '+010000-01-01T00:00:00Z', '10000-01-01T00:00:00Z',
    '2030-02-29T10:00:00Z', '2028-02-29T10:00:00+07:00', '2030-01-01T24:00:00Z', '2030-01-01T23:59:60Z', '2030-01-01 10:00:00+07:00',
    '2030-01-01T10:00:00', '2030-01-01', '2030-W01-1T10:00:00Z', '20300101T100000Z', 'now', 'tomorrow', '0', '1893456000',
    '2030-01-01T10:00:00+07:00[Asia/Ho_Chi_Minh]', '2030-01-01T10:00:00 Asia/Ho_Chi_Minh', '0000-00-00T00:00:00Z', '9999-12-31T23:59:59.999Z',
    '2030-01-01T10:00:00.1234567890123456789Z',
  ),
);

/** Hotel dates: impossible, out of PostgreSQL's and JavaScript's range, badly spelt. */
export const hostileDate: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(year, month, day).map(([y, m, d]) => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`),
  fc.constantFrom(
    '0000-01-01', '0001-01-01', '9999-12-31', '9999-12-25', '10000-01-01', '+275760-09-13', '2030-02-29', '2028-02-29', '2030-1-1',
    '2030/01/01', '01-01-2030', '2030-01-01T00:00:00Z', '2030-01-01 ', '٢٠٣٠-٠١-٠١', '1970-01-01', '1900-01-01',
  ),
);

/** IANA zone names and what pretends to be one. */
export const hostileTimezone: fc.Arbitrary<string> = fc.constantFrom(
  'Asia/Ho_Chi_Minh', 'UTC', 'Etc/GMT+14', 'Etc/GMT-14', 'Pacific/Kiritimati', 'America/St_Johns', 'Asia/Kathmandu', 'EST5EDT', 'Z',
  'Mars/Olympus_Mons', 'asia/ho_chi_minh', '+07:00', 'GMT+7', 'localtime', '../../etc/passwd', 'Europe/Kyiv', 'America/Argentina/ComodRivadavia',
  'x'.repeat(64), '\u0000', '',
);

/** Any JSON value, a deep nest, a huge string or a collection that is not what was asked. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileNumber },
  { weight: 4, arbitrary: hostileString },
  { weight: 2, arbitrary: hostileInstant },
  { weight: 2, arbitrary: hostileDate },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [1], { a: 1 }, [null]) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(deep(100_000, '[', ']'), deep(33, '[', ']'), deep(32, '[', ']'), new RawJson(`${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`)) },
  { weight: 1, arbitrary: fc.constant(new RawJson(JSON.stringify('y'.repeat(200_000)))) },
);

/** Currency codes: ISO 4217 in every case (`vnd` is `VND`), other codes, and what only looks like one. */
export const hostileCurrency: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('VND', 'vnd', 'Vnd', 'vNd', 'vnD', 'USD', 'usd', 'eur'),
  fc.constantFrom('VN', 'VNDD', 'V N', ' vnd', 'vnd ', 'ＶＮＤ', 'VNĐ', 'v\u0000d', '', 'İSK', 'ǅZD', '123', 'v_d', 'VND\n'),
  fc.stringMatching(/^[A-Za-z]{3}$/),
);

/** A header present but empty or of whitespace only (a header given empty is as malformed as a bad value). */
export const blankHeader: fc.Arbitrary<string> = fc.constantFrom('', ' ', '  ', '\t', ' \t ', '\t\t');

/** Header values Node will put on the wire: Latin-1 (UTF-8 bytes read as Latin-1), no CR/LF. */
export const hostileHeader: fc.Arbitrary<string> = fc.oneof(
  hostileString.map((s) => Buffer.from(s, 'utf8').toString('latin1').replace(/[^\t\x20-\x7e\x80-\xff]/g, '').slice(0, 2_000)),
  fc.constantFrom('', ' ', 'x'.repeat(2_000), 'Bearer', 'Bearer ', 'bearer x.y.z', 'Basic YWRtaW46YWRtaW4=', '00-' + '0'.repeat(32) + '-' + '0'.repeat(16) + '-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '00-zz-yy-01'),
);

/** Path parameters: ids beyond every integer type, signs, spaces, encodings, traversal. */
export const hostilePathParam: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('0', '-1', '1.5', '1e3', '0x10', '01', '+1', '2147483648', '9007199254740993', '9223372036854775808', '99999999999999999999999',
    '%00', '%2F', '%', '%zz', '%E0%A4%A', '%C0%AF', '..', '%2e%2e', 'null', '%20', '1%20', '%F0%9F%9A%97', 'NaN', 'Infinity', 'x'.repeat(2_000)),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
  fc.bigInt({ min: 0n, max: 2n ** 80n }).map(String),
);
