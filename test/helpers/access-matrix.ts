// Who may call what, written out from CONTRACT.md — never taken from the routes' own declarations, so a route that
// declares (and enforces) the wrong roles fails against it. Used by test/integration/auth-matrix.test.ts (every
// cell tried against a live service) and by the endpoint fuzz (which callers it fuzzes each route as).
//
// To add a route: one row here (its success status and one verdict per caller), and its request in the auth
// matrix's REQUESTS. A row with `pending` names a route another branch brings: its cells are skipped, visibly and
// counted, only while /openapi.json does not list it, and run as soon as it does.

/** The callers of a cell. "owner" owns the booking (and the quote) under test; "carHost" hosts the booking's car. */
export const CALLERS = ['anonymous', 'owner', 'otherCustomer', 'carHost', 'otherHost', 'operator'] as const;
export type Caller = (typeof CALLERS)[number];
export type Role = 'customer' | 'host' | 'operator';

/** allowed: carried out, answering the row's success status; else refused with that status. */
export type Verdict = 'allowed' | 401 | 403 | 404;

export interface AccessRow {
  /** The documented success of the route. */
  ok: 200 | 201 | 303;
  verdicts: Record<Caller, Verdict>;
  /** Why the route may be absent from /openapi.json (it lands from another branch); its cells are skipped until then. */
  pending?: string;
  /** The refusal's code for 401 (the webhook knows only its signature). */
  unauthenticated?: 'UNAUTHENTICATED' | 'INVALID_SIGNATURE';
}

const A = 'allowed' as const;
const row = (ok: AccessRow['ok'], v: [Verdict, Verdict, Verdict, Verdict, Verdict, Verdict], extra: Partial<AccessRow> = {}): AccessRow => ({
  ok, verdicts: Object.fromEntries(CALLERS.map((c, i) => [c, v[i]!])) as Record<Caller, Verdict>, ...extra,
});


export const ACCESS: Record<string, AccessRow> = {
  //                                                    anonymous owner otherCustomer carHost otherHost operator
  // "Search, health, readiness and metrics are public"; so are the OpenAPI document and its page.
  'GET /health':                                row(200, [A,   A,   A,   A,   A,   A]),
  'GET /ready':                                 row(200, [A,   A,   A,   A,   A,   A]),
  'GET /metrics':                               row(200, [A,   A,   A,   A,   A,   A]),
  'GET /openapi.json':                          row(200, [A,   A,   A,   A,   A,   A]),
  'GET /docs':                                  row(200, [A,   A,   A,   A,   A,   A]),
  'GET /docs/{asset}':                          row(200, [A,   A,   A,   A,   A,   A]),
  'GET /cars':                                  row(200, [A,   A,   A,   A,   A,   A]),
  'GET /hotels/availability':                   row(200, [A,   A,   A,   A,   A,   A]),
  // "the webhook is authenticated by its signature only": a bearer token is no signature.
  'POST /payments/webhook':                     row(200, [401, 401, 401, 401, 401, 401], { unauthenticated: 'INVALID_SIGNATURE' }),
  // Catalogue: "host (owner = own sub) or operator"; hotels, room types, inventory, rate plans: operator.
  'POST /cars':                                 row(201, [401, 403, 403, A,   A,   A]),
  'POST /hotels':                               row(201, [401, 403, 403, 403, 403, A]),
  'POST /hotels/{hotelId}/room-types':          row(201, [401, 403, 403, 403, 403, A]),
  'PUT /room-types/{roomTypeId}/inventory':     row(200, [401, 403, 403, 403, 403, A]),
  'GET /room-types/{roomTypeId}/inventory':     row(200, [401, 403, 403, 403, 403, A]),
  'GET /room-types/{roomTypeId}/inventory/audit': row(200, [401, 403, 403, 403, 403, A]),
  'POST /room-types/{roomTypeId}/rate-plans':   row(201, [401, 403, 403, 403, 403, A]),
  'PUT /rate-plans/{ratePlanId}/calendar':      row(200, [401, 403, 403, 403, 403, A]),
  'GET /rate-plans/{ratePlanId}/calendar':      row(200, [401, 403, 403, 403, 403, A]),
  // Quotes: "customer"; "A quote is visible only to its customer" (another customer: 404, never a leak).
  'POST /quotes':                               row(200, [401, A,   A,   403, 403, 403]),
  'GET /quotes/{quoteId}':                      row(200, [401, A,   404, 403, 403, 403]),
  // Bookings: "customer unless stated"; "a booking that is not yours" is 404.
  'POST /bookings':                             row(201, [401, A,   A,   403, 403, 403]),
  'GET /bookings/{id}':                         row(200, [401, A,   404, A,   404, A]),
  'GET /bookings/{id}/pay':                     row(303, [401, A,   404, 403, 403, 403]),
  'POST /bookings/{id}/cancel':                 row(200, [401, A,   404, A,   404, A]),
  // "host of the car or operator; a customer gets 403".
  'POST /bookings/{id}/pickup':                 row(200, [401, 403, 403, A,   404, A]),
  'POST /bookings/{id}/return':                 row(200, [401, 403, 403, A,   404, A]),
  // "the owner, the car's host, or operator".
  'POST /bookings/{id}/change':                 row(200, [401, A,   404, A,   404, A]),
  'GET /bookings/{id}/timeline':                row(200, [401, A,   404, A,   404, A]),
};

/** `METHOD /path` of an OpenAPI operation, the key of ACCESS. */
export const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

/** The callers a route lets through (none for the webhook, whose callers carry a signature, not a role). */
export const allowedCallers = (key: string): Caller[] => CALLERS.filter((c) => ACCESS[key]?.verdicts[c] === 'allowed');

/** Callers refused with `status` (403: a role that may not call; 404: another tenant's resource). */
export const callersRefused = (key: string, status: 401 | 403 | 404): Caller[] => CALLERS.filter((c) => ACCESS[key]?.verdicts[c] === status);

/** The role each caller signs in with (anonymous: none). */
export const ROLE_OF: Record<Exclude<Caller, 'anonymous'>, Role> = {
  owner: 'customer', otherCustomer: 'customer', carHost: 'host', otherHost: 'host', operator: 'operator',
};
