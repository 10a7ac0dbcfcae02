import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { readProcfile } from '../../scripts/procfile.js';

// No Docker engine here: the compose file is checked against the official Compose Specification JSON
// schema (compose-spec's compose-spec.json, shipped in the `dclint` package as schemas/compose.schema.json,
// MIT-licensed package; the schema is compose-spec's, Apache-2.0) plus what this project promises of it.
const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');
const schemaFile = path.join(path.dirname(createRequire(import.meta.url).resolve('dclint/package.json')), 'schemas/compose.schema.json');
// `merge: true`: YAML merge keys (`<<: *app`), as compose reads them.
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Record<string, any>>;
  volumes: Record<string, unknown>;
};
const services = compose.services;
const APP = ['migrate', 'api', 'expiry', 'refunds', 'notifications', 'maintenance', 'pump', 'dashboard', 'psp'];
const seconds = (d: string) => Number(d.match(/^(\d+)s$/)?.[1] ?? NaN);

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    // Its $schema names draft-07 by an https URL Ajv does not alias; Ajv's default draft is draft-07.
    const { $schema, ...schema } = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));
    expect($schema).toMatch(/draft-07/);
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(ok).toBe(true);
    // The check has teeth: a misspelt key is refused.
    expect(validate({ services: { api: { image: 'x', healthcheck: { tset: ['CMD', 'true'] } } } })).toBe(false);
  });

  it('runs every Procfile line in one image, with the Procfile command', () => {
    const procfile = readProcfile(path.join(ROOT, 'Procfile'));
    const byName = { ...Object.fromEntries(procfile.map((p) => [p.name, [p.command, ...p.args]])) };
    expect(Object.keys(byName).sort()).toEqual(['release', ...APP.filter((s) => s !== 'migrate')].sort());
    for (const name of APP) {
      expect(services[name]!.image, name).toBe('booking-engine:local');
      expect(services[name]!.command, name).toEqual(byName[name === 'migrate' ? 'release' : name]);
    }
    expect(services.migrate!.build).toBe('.');
    expect(APP.filter((s) => services[s]!.build)).toEqual(['migrate']);
    expect(read('Dockerfile')).toMatch(/^FROM node:24-/m);
  });

  it('has healthchecks, a stop grace period longer than the drain, production secrets without defaults', () => {
    for (const name of ['api', 'dashboard', 'psp', 'postgres', 'redis', 'kafka']) expect(services[name]!.healthcheck?.test, name).toBeDefined();
    for (const name of APP) {
      // The app forces its own exit 25 s after SIGTERM (shared/process.ts onShutdown).
      expect(seconds(services[name]!.stop_grace_period), name).toBeGreaterThan(25);
      const env = services[name]!.environment;
      expect(env.NODE_ENV).toBe('production');
      for (const secret of ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD']) {
        expect(env[secret], `${name} ${secret}`).toMatch(new RegExp(`^\\$\\{${secret}:\\?`));
      }
    }
    // Only the sandbox binds beyond 127.0.0.1 (compose's private network).
    expect(APP.filter((s) => services[s]!.environment.PSP_HOST)).toEqual(['psp']);
  });

  it('publishes distinct host ports on 127.0.0.1 only; Kafka has an internal and a host listener and a volume', () => {
    const ports = Object.values(services).flatMap((s) => (s.ports ?? []) as string[]);
    for (const p of ports) expect(p).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    const host = ports.map((p) => p.split(':')[1]);
    expect(new Set(host).size).toBe(host.length);
    for (const local of ['3000', '3001', '4000', '5432', '6379', '9092', '9090']) expect(host).not.toContain(local);
    const k = services.kafka!;
    expect(k.environment.KAFKA_ADVERTISED_LISTENERS).toMatch(/INTERNAL:\/\/kafka:9092/);
    expect(k.environment.KAFKA_ADVERTISED_LISTENERS).toMatch(/HOST:\/\/localhost:19092/);
    expect(k.volumes).toEqual(['kafkadata:/var/lib/kafka/data']);
  });

  it('mounts the Prometheus and Grafana provisioning, which scrape every process', () => {
    for (const name of ['prometheus', 'grafana']) {
      for (const v of services[name]!.volumes as string[]) {
        const [source] = v.split(':');
        if (source!.startsWith('./')) expect(fs.existsSync(path.join(ROOT, source!)), v).toBe(true);
      }
    }
    const prom = parse(read('dashboards/prometheus/prometheus.yml'));
    const targets = prom.scrape_configs.flatMap((j: any) => j.static_configs.flatMap((s: any) => s.targets));
    expect(targets.sort()).toEqual(['api:3000', 'dashboard:3001', 'pump:9104', 'expiry:9101', 'notifications:9103', 'refunds:9102', 'maintenance:9106'].sort());
    expect(prom.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    expect(parse(read('dashboards/prometheus/alerts.yml')).groups).toBeInstanceOf(Array);
    const ds = parse(read('dashboards/grafana/provisioning/datasources/prometheus.yml'));
    expect(ds.datasources[0]).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090', uid: 'prometheus' });
    const provider = parse(read('dashboards/grafana/provisioning/dashboards/booking.yml'));
    expect(provider.providers[0].options.path).toBe('/var/lib/grafana/dashboards');
  });

  it('.env.example names every variable compose requires, with no value', () => {
    const required = [...read('docker-compose.yml').matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]!);
    const example = Object.fromEntries(read('.env.example').split('\n').filter((l) => /^\w+=/.test(l)).map((l) => l.split('=', 2) as [string, string]));
    for (const name of new Set(required)) expect(example[name], name).toBe('');
  });
});
