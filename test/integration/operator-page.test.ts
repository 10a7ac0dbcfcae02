import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { drained, statusOf } from '../helpers/bookings.js';
import { sandbox } from '../helpers/sandbox.js';
import { ROOT } from '../helpers/processes.js';
import { createDashboard } from '../../dashboards/server.js';
import { QUEUES } from '../../shared/queues/registry.js';

const REFUNDS_QUEUE = QUEUES.refunds.name;

// The operator page on the dashboard port (/admin/bookings, /admin/bookings/{id}): through HTTP, and in a real
// browser (Debian's chromium driven by playwright-core), whose screenshot is kept under test/output/ (git-ignored,
// a CI artifact).

const CHROMIUM = '/usr/bin/chromium';
// Without the networking flags chromium's own connections (updates, sync, …) are refused on CI machines and it stalls.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const OUTPUT = path.join(ROOT, 'test/output');

let h: Harness;
let server: Server;
let closeDashboard: () => Promise<void>;
let base: string;
let auth: string;
let story: Hold;
let jobId: string;

/** The system browser; installed from Debian's packages when missing (as .ci/run does), so a clean machine runs this. */
function ensureChromium() {
  if (fs.existsSync(CHROMIUM)) return;
  execFileSync('bash', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null'], { stdio: 'inherit', timeout: 600_000 });
}

beforeAll(async () => {
  ensureChromium();
  h = await startHarness({ workers: true });
  const dashboard = await createDashboard(h.config);
  closeDashboard = dashboard.close;
  server = dashboard.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  auth = `Basic ${Buffer.from(`${h.config.DASHBOARD_USER}:${h.config.DASHBOARD_PASSWORD}`).toString('base64')}`;

  // A story: held, paid, confirmed, cancelled with a reason that is markup, refunded, notified.
  story = await holdCar(h);
  const intent = await requestPay(h, story);
  await sandbox(h).post(`/intents/${intent}/succeed`);
  await waitFor(async () => (await statusOf(h, story.id)) === 'CONFIRMED', 10_000);
  const c = await h.req('POST', `/bookings/${story.id}/cancel`, { token: story.token, body: { reason: '<script>alert(1)</script>' } });
  expect(c.status, c.text).toBe(200);
  await waitFor(async () => (await h.sql(`SELECT 1 FROM refund WHERE booking_id = $1 AND status = 'SUCCEEDED'`, [story.id])).rowCount === 1, 15_000);
  await drained(h);
  // The booking's refund job (completed, retained), by its computed id: the page must link to it.
  const refund = (await h.sql(`SELECT id, job_gen FROM refund WHERE booking_id = $1`, [story.id])).rows[0];
  jobId = `refund-${refund.id}-g${refund.job_gen}`;
  expect(await h.queues.refunds.getJob(jobId)).toBeTruthy();
}, 120_000);
afterAll(async () => {
  server?.close();
  await closeDashboard?.();
  await h?.close();
});

const get = (p: string, headers: Record<string, string> = { authorization: auth }) => fetch(`${base}${p}`, { headers, redirect: 'manual' });

describe('operator page over HTTP', () => {
  it('asks for the dashboard credentials', async () => {
    for (const p of ['/admin/bookings', `/admin/bookings/${story.id}`]) {
      expect((await get(p, {})).status, p).toBe(401);
      expect((await get(p, { authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` })).status, p).toBe(401);
    }
  });

  it('shows the booking, its whole story with everything escaped, and links to its jobs in bull-board', async () => {
    const r = await get(`/admin/bookings/${story.id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    const page = await r.text();
    expect(page).toContain('CANCELLED');
    for (const t of ['booking.held', 'booking.confirmed', 'booking.cancelled', 'refund.succeeded', 'received', 'requested', 'sms', 'push']) {
      expect(page, t).toContain(`>${t}<`);
    }
    expect(page).not.toContain('<script>');
    expect(page).toContain('&#60;script&#62;');
    const link = `/admin/queues/queue/${encodeURIComponent(REFUNDS_QUEUE)}/${encodeURIComponent(jobId)}`;
    expect(page).toContain(`href="${link.replace(/&/g, '&#38;')}"`);
    expect((await get(link)).status).toBe(200); // bull-board's own page of the job
    for (const n of ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD'] as const) expect(page).not.toContain(h.config[n]);
  });

  it('searches by booking id (straight to it), customer, car id and plate; refuses a malformed id; 404 for none', async () => {
    const toIt = await get(`/admin/bookings?booking=${story.id}`);
    expect([toIt.status, toIt.headers.get('location')]).toEqual([302, `/admin/bookings/${story.id}`]);
    const plate = (await h.sql('SELECT plate FROM car WHERE id = $1', [story.carId])).rows[0].plate as string;
    for (const q of [`customer=${story.customerId}`, `car=${story.carId}`, `car=${encodeURIComponent(plate)}`]) {
      const r = await get(`/admin/bookings?${q}`);
      expect(r.status, q).toBe(200);
      expect(await r.text(), q).toContain(`href="/admin/bookings/${story.id}"`);
    }
    expect(await (await get('/admin/bookings?customer=987654321')).text()).toContain('No booking matches');
    expect((await get('/admin/bookings?customer=-1')).status).toBe(400);
    expect((await get('/admin/bookings/999999999')).status).toBe(404);
    expect((await get('/admin/bookings/abc')).status).toBe(404);
    expect((await get(`/admin/bookings/${story.id}?cursor=nope`)).status).toBe(400);
  });

  it('changes nothing: other methods are refused, cross-site ones before anything else', async () => {
    const post = (headers: Record<string, string>) => fetch(`${base}/admin/bookings/${story.id}`, { method: 'POST', headers: { authorization: auth, ...headers } });
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'same-origin' })).status).toBe(405);
  });
});

describe('operator page in a browser (chromium)', () => {
  let context: BrowserContext;
  let profile: string;
  beforeAll(async () => {
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true,
      httpCredentials: { username: h.config.DASHBOARD_USER, password: h.config.DASHBOARD_PASSWORD },
      viewport: { width: 1280, height: 1000 },
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    fs.rmSync(profile, { recursive: true, force: true });
  });

  it('finds the booking by its customer, opens its story and its job, and keeps a screenshot', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/admin/bookings`);
    await page.fill('input[name=customer]', String(story.customerId));
    await page.click('button[type=submit]');
    await page.click(`#results a[href="/admin/bookings/${story.id}"]`);
    await page.waitForURL(`${base}/admin/bookings/${story.id}`);
    expect(await page.textContent('h1')).toBe(`Booking ${story.id}`);
    expect(await page.locator('#timeline tr[data-kind=event]').count()).toBeGreaterThanOrEqual(5);
    expect(await page.locator('#timeline tr[data-kind=notification]').count()).toBe(6);
    expect(await page.locator('#timeline tr[data-kind=payment]').count()).toBe(1);
    expect(await page.locator('#timeline tr[data-kind=refund]').count()).toBe(1);
    // The markup in the reason is text on the page, never a script that ran.
    expect(await page.locator('#timeline').textContent()).toContain('<script>alert(1)</script>');
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'operator-page.png'), fullPage: true });
    expect(fs.statSync(path.join(OUTPUT, 'operator-page.png')).size).toBeGreaterThan(10_000);
    await page.click(`#jobs a:has-text("${jobId}")`);
    await page.waitForURL(/\/admin\/queues\/queue\//);
    expect(decodeURIComponent(new URL(page.url()).pathname)).toBe(`/admin/queues/queue/${REFUNDS_QUEUE}/${jobId}`);
  }, 60_000);
});
