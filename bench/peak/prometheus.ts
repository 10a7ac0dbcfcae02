/**
 * The Grafana dashboard's queries against live data: a Prometheus (the Debian/Ubuntu `prometheus` package, or any
 * binary on PATH / PROMETHEUS_BIN) scrapes every process of the system under test while the bench runs, and at the
 * end each panel query of dashboards/grafana/dashboards/booking-engine.json is evaluated as Grafana would
 * ($__rate_interval → 30s). What a panel would show is then a fact, not a hope: a query that names a metric
 * nobody exports, or a label nobody sets, comes back empty. Grafana itself is not run (no container engine here);
 * the queries and the data are what decide what its panels show.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, sleep } from '../lib.js';
import { METRICS_PORT_OFFSETS } from '../../shared/metrics/server.js';

export interface PanelValue {
  panel: string;
  expr: string;
  series: number;
  /** up to 3 "labels=value" samples */
  sample: string[];
  error?: string;
}

export interface Prometheus {
  url: string;
  panels(): Promise<PanelValue[]>;
  stop(): Promise<void>;
}

export interface ScrapeTargets {
  apiPort: number;
  dashboardPort: number;
  metricsPortBase: number;
}

const DASHBOARD = path.join(ROOT, 'dashboards/grafana/dashboards/booking-engine.json');

function binary(): string | null {
  const bin = process.env.PROMETHEUS_BIN ?? 'prometheus';
  return spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0 ? bin : null;
}

/** The dashboard's panel queries, in panel order. */
export function dashboardQueries(): { panel: string; expr: string }[] {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title?: string; targets?: { expr?: string }[] }[] };
  return d.panels.flatMap((p) => (p.targets ?? []).filter((t) => t.expr).map((t) => ({ panel: p.title ?? '', expr: t.expr! })));
}

/** Starts Prometheus scraping the system every second; null (with the reason logged) when no binary is found. */
export async function startPrometheus(t: ScrapeTargets, port: number, log: (s: string) => void): Promise<Prometheus | null> {
  const bin = binary();
  if (!bin) {
    log('prometheus: not installed (apt-get install prometheus, or PROMETHEUS_BIN): dashboard queries not evaluated');
    return null;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-prom-'));
  const workers = Object.entries(METRICS_PORT_OFFSETS)
    .map(([proc, offset]) => `      - targets: ["127.0.0.1:${t.metricsPortBase + offset}"]\n        labels: { process: ${proc} }`).join('\n');
  writeFileSync(path.join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:
  - job_name: api\n    static_configs:\n      - targets: ["127.0.0.1:${t.apiPort}"]
  - job_name: dashboard\n    static_configs:\n      - targets: ["127.0.0.1:${t.dashboardPort}"]
  - job_name: workers\n    static_configs:\n${workers}\n`);
  const child: ChildProcess = spawn(bin, [
    `--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
  ], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(`${url}/-/ready`).then((r) => r.ok, () => false)) break;
    if (i > 100 || child.exitCode !== null) {
      child.kill('SIGKILL');
      log('prometheus: did not start; dashboard queries not evaluated');
      return null;
    }
    await sleep(100);
  }
  log(`prometheus: ${url} scraping the system every 1 s`);
  return {
    url,
    async panels() {
      const out: PanelValue[] = [];
      for (const { panel, expr } of dashboardQueries()) {
        const q = expr.replaceAll('$__rate_interval', '30s');
        const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}`).then((x) => x.json(), (e: Error) => ({ error: e.message })) as {
          status?: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] };
        };
        const result = r.data?.result ?? [];
        out.push({
          panel, expr, series: result.length, error: r.status === 'success' ? undefined : r.error ?? 'no answer',
          sample: result.slice(0, 3).map((s) => `${Object.entries(s.metric).filter(([k]) => k !== '__name__').map(([k, v]) => `${k}=${v}`).join(',') || '{}'}=${s.value[1]}`),
        });
      }
      return out;
    },
    async stop() {
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      await Promise.race([gone, sleep(5000)]);
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One line per panel query for the console. */
export function printPanels(values: PanelValue[], log: (s: string) => void): void {
  const live = values.filter((v) => v.series > 0);
  log(`dashboard: ${live.length}/${values.length} panel queries return live series`);
  for (const v of values) log(`  ${v.series > 0 ? 'live ' : v.error ? 'ERROR' : 'empty'} ${v.panel}: ${v.error ?? v.sample.join('; ').slice(0, 160)}`);
}
