import type { BookingView } from '../shared/usecases/bookings.js';
import type { TimelinePage } from '../shared/usecases/timeline.js';
import type { FoundBooking } from '../shared/db/booking-search.js';
import type { BookingJob } from './booking-jobs.js';

// The operator page's HTML: plain, server-rendered, no script. Every value written into it passes through `esc`.

export const esc = (v: unknown): string => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;color:#222}
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:1.5rem}nav a{margin-right:1rem}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}code{font-size:12px;white-space:pre-wrap;word-break:break-all}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
#timeline td:first-child{white-space:nowrap}dt{font-weight:600}.status{font-weight:700}form{margin:1rem 0}input{margin-right:.5rem}.empty{color:#777}`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title><meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style></head>
<body><nav><a href="/admin/bookings">Bookings</a><a href="/admin/queues">Queues (bull-board)</a></nav>
<h1>${esc(title)}</h1>
${body}
</body></html>
`;
}

function searchForm(q: Record<string, string | undefined>): string {
  const input = (name: string, label: string) =>
    `<label>${esc(label)} <input name="${name}" value="${esc(q[name])}" size="12"></label>`;
  return `<form method="get" action="/admin/bookings">${input('booking', 'Booking id')}${input('customer', 'Customer id')}${input('car', 'Car id or plate')}<button type="submit">Search</button></form>`;
}

const period = (b: { from: string | null; to: string | null; checkIn: string | null; checkOut: string | null }) =>
  b.from ? `${b.from} → ${b.to}` : `${b.checkIn} → ${b.checkOut}`;

export function searchPage(q: Record<string, string | undefined>, results: readonly FoundBooking[] | null, error?: string): string {
  let body = searchForm(q);
  if (error) body += `<p class="error">${esc(error)}</p>`;
  if (results && results.length === 0) body += '<p class="empty">No booking matches.</p>';
  if (results && results.length) {
    body += `<table id="results"><tr><th>Booking</th><th>Status</th><th>Kind</th><th>Customer</th><th>Car / room type</th><th>Period</th><th>Deposit</th><th>Created</th></tr>
${results.map((b) => `<tr><td><a href="/admin/bookings/${esc(b.id)}">${esc(b.id)}</a></td><td class="status">${esc(b.status)}</td><td>${esc(b.kind)}</td>
<td><a href="/admin/bookings?customer=${esc(b.customerId)}">${esc(b.customerId)}</a></td>
<td>${b.carId ? `car <a href="/admin/bookings?car=${esc(b.carId)}">${esc(b.carId)}</a> ${esc(b.plate)}` : `room type ${esc(b.roomTypeId)}`}</td>
<td>${esc(period(b))}</td><td>${esc(b.depositAmount)} ${esc(b.currency)}</td><td>${esc(b.createdAt)}</td></tr>`).join('\n')}</table>`;
  }
  return layout('Bookings', body);
}

export function bookingPage(b: BookingView, timeline: TimelinePage, jobs: readonly BookingJob[] | null, thisUrl: string): string {
  const field = (name: string, value: unknown) => `<dt>${esc(name)}</dt><dd>${esc(value ?? '—')}</dd>`;
  const summary = `<dl id="booking">${[
    field('Status', b.status), field('Kind', b.kind), field('Customer', b.customerId),
    b.kind === 'car' ? field('Car', b.carId) : field('Room type', b.roomTypeId),
    field('Period', period(b)), b.kind === 'stay' ? field('Rooms, guests', `${b.rooms}, ${b.guests}`) : '',
    field('Deposit', `${b.depositAmount} ${b.currency}`), field('Total', b.totalAmount === null ? null : `${b.totalAmount} ${b.currency}`),
    field('Hold expires', b.holdExpiresAt), field('Payment', b.payment && `${b.payment.status} ${b.payment.amount}`),
    field('Refund', b.refund && `${b.refund.status} ${b.refund.amount}`),
  ].join('')}</dl>`;
  const rows = timeline.entries.map((e) => `<tr data-kind="${esc(e.kind)}"><td>${esc(e.at)}</td><td>${esc(e.kind)}</td><td>${esc(e.type)}</td>
<td><code>${esc(JSON.stringify(e.detail))}</code></td></tr>`).join('\n');
  const story = timeline.entries.length
    ? `<table id="timeline"><tr><th>At (UTC)</th><th>Kind</th><th>Type</th><th>Detail</th></tr>\n${rows}</table>`
    : '<p class="empty">Nothing recorded yet.</p>';
  const more = timeline.nextCursor ? `<p><a id="more" href="${esc(`${thisUrl}?cursor=${encodeURIComponent(timeline.nextCursor)}`)}">Later entries →</a></p>` : '';
  const jobList = jobs === null
    ? '<p class="empty">The queues could not be asked (Redis unreachable).</p>'
    : jobs.length === 0
      ? '<p class="empty">No job in the registered queues names this booking.</p>'
      : `<table id="jobs"><tr><th>Queue</th><th>Job</th><th>Name</th><th>State</th><th>Attempts</th></tr>
${jobs.map((j) => `<tr><td>${esc(j.queue)}</td><td><a href="${esc(j.url)}">${esc(j.id)}</a></td><td>${esc(j.name)}</td><td>${esc(j.state)}</td><td>${esc(j.attemptsMade)}</td></tr>`).join('\n')}</table>`;
  return layout(`Booking ${b.bookingId}`, `${summary}<h2>Story</h2>${story}${more}<h2>Jobs in bull-board</h2>${jobList}`);
}

export const notFoundPage = (what: string) => layout('Not found', `<p>${esc(what)}</p>${searchForm({})}`);
