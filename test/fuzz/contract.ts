import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Harness } from '../helpers/harness.js';
import type { RawReply, RawRequest } from './raw-http.js';

// The endpoint fuzz's oracle, outside the code under test: CONTRACT.md's error table written out here, and the
// served OpenAPI document (what each operation answers, with which codes, and what requests it accepts). A refusal
// must be in the error shape, with a code whose status the contract gives and the document lists for the
// operation; a success must validate against its documented schema, and so must the request it accepted: a
// hostile value answered 2xx where the document (and so the contract) demands a refusal fails here.

/** CONTRACT.md "Errors": the status of each code (VALIDATION is 413 when the body is too large). */
export const CONTRACT_STATUS: Record<string, readonly number[]> = {
  VALIDATION: [400, 413], UNAUTHENTICATED: [401], INVALID_SIGNATURE: [401], FORBIDDEN: [403], NOT_FOUND: [404],
  CAR_UNAVAILABLE: [409], SOLD_OUT: [409], INVALID_STATE: [409], IDEMPOTENCY_IN_PROGRESS: [409], ALREADY_EXISTS: [409],
  INVENTORY_BELOW_COMMITTED: [409], STAY_RESTRICTED: [409], PRICE_CHANGED: [409], QUOTE_EXPIRED: [409], DEPOSIT_INCREASE: [409],
  IDEMPOTENCY_KEY_REUSED: [422], RATE_LIMITED: [429], INTERNAL: [500], UNAVAILABLE: [503],
};

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** RFC 3339 date-time with an offset (what "ISO-8601 with an offset" accepts at most): a real date and time. */
export function isInstant(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/.exec(s);
  if (!m) return false;
  const [y, mo, d, hh, mi, ss] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const dim = mo === 2 && !leap ? 28 : DAYS[mo - 1];
  if (!dim || d < 1 || d > dim || hh > 23 || mi > 59 || ss > 59) return false;
  return m[8] === 'Z' || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

interface Parameter { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: object }

/** The request parts the fuzz sent, as the server reads them. */
function partsOf(req: RawRequest, template: string) {
  const [path, query = ''] = req.path.split(/\?(.*)/s, 2) as [string, string?];
  const names = [...template.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!);
  const match = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '([^/]*)')}$`).exec(path);
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  const params = match ? Object.fromEntries(names.map((n, i) => [n, decode(match[i + 1]!)])) : null;
  const q: Record<string, string | string[]> = {};
  for (const pair of query.split('&').filter(Boolean)) {
    const [k, v = ''] = pair.split(/=(.*)/s, 2) as [string, string?];
    const key = decode(k);
    const prev = q[key];
    q[key] = prev === undefined ? decode(v) : [...(Array.isArray(prev) ? prev : [prev]), decode(v)];
  }
  return { params, query: q };
}

export type Contract = ReturnType<typeof contractOf>;

/** The oracle for a served OpenAPI document `doc`. */
export function contractOf(doc: any) {
  const formats = { 'date-time': isInstant, uri: true as const };
  const strict = new Ajv2020({ strict: false, allErrors: true, formats });
  strict.addSchema({ ...doc, $id: 'doc' });
  // Path, query and header values are text: "10" is the integer 10, as the routes' schemas coerce it.
  const coercing = new Ajv2020({ strict: false, allErrors: true, coerceTypes: true, formats });
  const compiled = new Map<string, ValidateFunction>();
  const cached = (key: string, make: () => ValidateFunction) => compiled.get(key) ?? compiled.set(key, make()).get(key)!;
  const schemaAt = (...parts: string[]) => cached(parts.join(' '), () => strict.getSchema(`doc#/${pointer(...parts)}`)!);
  const errorsOf = (v: ValidateFunction) => JSON.stringify(v.errors?.slice(0, 3));

  function operation(method: string, path: string) {
    const op = doc.paths[path]?.[method];
    if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the served document`);
    const success = Number(Object.keys(op.responses).find((s) => /^[23]/.test(s)));
    const params = ((op.parameters ?? []) as (Parameter | { $ref: string })[]).filter((p): p is Parameter => !('$ref' in p));
    const paramsOf = (where: Parameter['in']) => cached(`${method} ${path} ${where}`, () => coercing.compile({
      type: 'object',
      properties: Object.fromEntries(params.filter((p) => p.in === where).map((p) => [where === 'header' ? p.name.toLowerCase() : p.name, p.schema])),
      required: params.filter((p) => p.in === where && p.required).map((p) => (where === 'header' ? p.name.toLowerCase() : p.name)),
    }));

    /** What is wrong with an answer, if anything. */
    function answerProblems(reply: RawReply): string[] {
      const response = op.responses[String(reply.status)];
      if (!response) return [`${reply.status} is not a status the document lists (${Object.keys(op.responses).join(', ')})`];
      const problems: string[] = [];
      let body: any;
      if (response.content?.['application/json']) {
        try {
          body = JSON.parse(reply.text);
        } catch {
          return [`${reply.status}: the body is not JSON`];
        }
        const validate = schemaAt('paths', path, method, 'responses', String(reply.status), 'content', 'application/json', 'schema');
        if (!validate(body)) problems.push(`the ${reply.status} body does not validate against the document: ${errorsOf(validate)}`);
      }
      if (reply.status >= 400) {
        const code = body?.error?.code;
        if (!body || Object.keys(body).join() !== 'error') problems.push('a refusal whose body is not {"error": {...}} alone');
        if (!CONTRACT_STATUS[code]?.includes(reply.status)) problems.push(`code ${code} is not a ${reply.status} in the contract's table`);
        const listed = [...String(response.description).matchAll(/`([A-Z_]+)`/g)].map((x) => x[1]);
        if (!listed.includes(code)) problems.push(`code ${code} is not one the document lists for ${reply.status} (${listed.join(', ')})`);
      }
      return problems;
    }

    /** What the document says is wrong with a request the service accepted (2xx), if anything. */
    function requestProblems(req: RawRequest): string[] {
      const { params: pathParams, query } = partsOf(req, path);
      if (!pathParams) return ['the path does not match the operation'];
      const problems: string[] = [];
      for (const [where, value] of [['path', pathParams], ['query', query], ['header', req.headers]] as const) {
        const validate = paramsOf(where);
        if (!validate(structuredClone(value))) problems.push(`${where}: ${errorsOf(validate)}`);
      }
      const media = op.requestBody?.content?.['application/json'];
      if (media) {
        // A UTF-8 byte order mark may be ignored (RFC 8259 §8.1), as the service does.
        const text = (typeof req.body === 'string' ? req.body : (req.body?.toString('utf8') ?? '')).replace(/^\ufeff/, '');
        if (text.trim() === '') {
          if (op.requestBody.required) problems.push('body: required, and none was sent');
        } else {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            return [...problems, 'body: not JSON'];
          }
          const validate = schemaAt('paths', path, method, 'requestBody', 'content', 'application/json', 'schema');
          if (!validate(body)) problems.push(`body: ${errorsOf(validate)}`);
        }
      }
      return problems;
    }
    return { success, answerProblems, requestProblems };
  }
  return { operation };
}

/**
 * Checksums of every table's content (all columns of all rows, order-free): an UPDATE shows, not only an INSERT.
 * Summing every row's hash on every request is the fuzz's main cost, so each table's checksum is kept and redone
 * only when the table was written: its row count or its newest row version (xmin) moved, which any INSERT, UPDATE
 * or DELETE does (xids only grow here: no vacuum freezes a test database).
 */
export function tableContents(h: Harness, tables: readonly string[]) {
  const list = (f: (t: string) => string, of: readonly string[]) => `SELECT ${of.map((t) => `(${f(t)}) AS "${t}"`).join(', ')}`;
  const printSql = list((t) => `SELECT count(*) || ':' || coalesce(max(xmin::text::bigint), 0) FROM "${t}"`, tables);
  const content = (of: readonly string[]) => list((t) => `SELECT count(*) || ':' || coalesce(sum(hashtextextended(x::text, 0)::numeric), 0) FROM "${t}" x`, of);
  let prints: Record<string, string> = {};
  const contents: Record<string, string> = {};
  return async (): Promise<Record<string, string>> => {
    const now: Record<string, string> = (await h.sql(printSql)).rows[0];
    const written = tables.filter((t) => now[t] !== prints[t]);
    if (written.length) Object.assign(contents, (await h.sql(content(written))).rows[0]);
    prints = now;
    return { ...contents };
  };
}

/** The tables whose content changed between two checksums. */
export const changedTables = (before: Record<string, string>, after: Record<string, string>) =>
  Object.keys(after).filter((t) => before[t] !== after[t]);
