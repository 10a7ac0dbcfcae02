import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Metric } from 'prom-client';
import { createMetrics } from '../../api/metrics.js';
import { registerOpsGauges } from '../../api/ops-gauges.js';
import { collectProcessMetrics, processRegistry } from '../../shared/metrics/registry.js';
import '../../shared/metrics/work.js';
import type { DatabasePool } from '../../shared/db/pool.js';

// Every query of the Grafana dashboards and every alert rule names metrics (and selector labels) that the
// code exports: the metrics are collected from the registries the processes serve, not from a list.

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');
/** Series Prometheus makes itself, not the code. */
const PROMETHEUS_OWN = new Map([['up', new Set<string>()]]);
/** Labels Prometheus adds to every scraped series (job, instance) and the scrape config's own (process). */
const TARGET_LABELS = ['job', 'instance', 'process'];

/** Exported series names, each with the labels it may carry (histograms: _bucket with le, _sum, _count). */
const exported = new Map<string, Set<string>>();
beforeAll(() => {
  const metrics = createMetrics();
  registerOpsGauges(metrics, {} as DatabasePool, null);
  collectProcessMetrics('test');
  const all = [...metrics.registry.getMetricsAsArray(), ...metrics.ops.getMetricsAsArray(), ...processRegistry.getMetricsAsArray()] as unknown as (Metric & { type: string; name: string; labelNames?: string[] })[];
  for (const m of all) {
    const labels = new Set([...(m.labelNames ?? []), 'proc']);
    const series = m.type === 'histogram' ? ['_bucket', '_sum', '_count'] : m.type === 'summary' ? ['', '_sum', '_count'] : [''];
    for (const s of series) exported.set(`${m.name}${s}`, s === '_bucket' ? new Set([...labels, 'le']) : m.type === 'summary' && s === '' ? new Set([...labels, 'quantile']) : labels);
  }
});

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);

/** The metric names of a PromQL expression, with the labels each selector matches on. */
export function metricsOf(expr: string): { name: string; labels: string[] }[] {
  let e = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // string literals (label values, quantile args stay numbers)
    .replace(/\[[^\]]*\]/g, '') // range and subquery brackets, Grafana's $__rate_interval included
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // grouping label lists
  const found: { name: string; labels: string[] }[] = [];
  e = e.replace(/([a-zA-Z_:][\w:]*)?\s*\{([^}]*)\}/g, (_, name: string | undefined, matchers: string) => {
    found.push({ name: name ?? '', labels: [...matchers.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]!) });
    return ' ';
  });
  e = e.replace(/\b\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*\b/g, ' '); // durations (offset 5m)
  e = e.replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi, ' '); // numbers
  for (const m of e.matchAll(/[a-zA-Z_:][\w:]*/g)) {
    const after = e.slice(m.index! + m[0].length);
    if (/^\s*\(/.test(after) || KEYWORDS.has(m[0].toLowerCase())) continue; // a function or an operator
    found.push({ name: m[0], labels: [] });
  }
  return found;
}

const dashboardFiles = fs.readdirSync(path.join(ROOT, 'dashboards/grafana/dashboards')).filter((f) => f.endsWith('.json'));
const dashboards = dashboardFiles.map((f) => ({ file: f, json: JSON.parse(read(`dashboards/grafana/dashboards/${f}`)) }));
const panelsOf = (d: { panels?: any[] }): any[] => (d.panels ?? []).flatMap((p) => [p, ...panelsOf(p)]);
const rules = (parse(read('dashboards/prometheus/alerts.yml')).groups as { rules: { alert: string; expr: string; labels?: Record<string, string> }[] }[])
  .flatMap((g) => g.rules);

function unknown(expr: string): string[] {
  return metricsOf(expr).flatMap(({ name, labels }) => {
    const known = exported.get(name) ?? PROMETHEUS_OWN.get(name);
    if (!known) return [`metric ${name || '(none)'}`];
    return labels.filter((l) => !known.has(l) && !TARGET_LABELS.includes(l)).map((l) => `label ${name}{${l}}`);
  });
}

describe('dashboards and alert rules', () => {
  it('the tokenizer finds metrics and skips functions, keywords, grouping labels, ranges and numbers', () => {
    expect(metricsOf('histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{status=~"5.."}[$__rate_interval])))'))
      .toEqual([{ name: 'http_request_duration_seconds_bucket', labels: ['status'] }]);
    expect(metricsOf('sum(a_total) / clamp_min(sum without (x) (b_total offset 5m), 1e-9) > 0.01 and on (job) up == 0').map((m) => m.name))
      .toEqual(['a_total', 'b_total', 'up']);
    expect(unknown('rate(no_such_metric_total[5m])')).toEqual(['metric no_such_metric_total']);
    expect(unknown('sum(queue_depth{colour="red"})')).toEqual(['label queue_depth{colour}']);
    expect(exported.has('outbox_oldest_unpublished_age_seconds') && exported.has('process_cpu_seconds_total')).toBe(true);
  });

  it('every dashboard panel query names exported metrics and labels; panels use the provisioned data source', () => {
    expect(dashboards.length).toBeGreaterThan(0);
    for (const { file, json } of dashboards) {
      expect(json.uid, file).toBeTruthy();
      const panels = panelsOf(json).filter((p) => p.type !== 'row');
      expect(panels.length, file).toBeGreaterThan(10);
      for (const p of panels) {
        expect(p.datasource, `${file}: ${p.title}`).toEqual({ type: 'prometheus', uid: 'prometheus' });
        expect(p.targets?.length, `${file}: ${p.title}`).toBeGreaterThan(0);
        for (const t of p.targets) expect(unknown(t.expr), `${file}: ${p.title}: ${t.expr}`).toEqual([]);
      }
    }
  });

  it('every alert rule names exported metrics and labels and has a severity', () => {
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining([
      'OutboxEventsNotPublished', 'RefundsPendingOverOneHour', 'ExpiryLagHigh', 'HighServerErrorRate', 'JobsFailing',
    ]));
    for (const r of rules) {
      expect(unknown(r.expr), `${r.alert}: ${r.expr}`).toEqual([]);
      expect(['critical', 'warning'], r.alert).toContain(r.labels?.severity);
    }
  });

  it('the dashboards and the rules between them watch every metric the code exports', () => {
    const used = new Set([...dashboards.flatMap(({ json }) => panelsOf(json).flatMap((p) => (p.targets ?? []).map((t: any) => t.expr))), ...rules.map((r) => r.expr)]
      .flatMap((e) => metricsOf(e).map((m) => m.name.replace(/_(bucket|sum|count)$/, ''))));
    const mine = [...exported.keys()].filter((n) => !/^(process_|nodejs_)/.test(n)).map((n) => n.replace(/_(bucket|sum|count)$/, ''));
    expect([...new Set(mine)].filter((n) => !used.has(n))).toEqual([]);
  });
});
