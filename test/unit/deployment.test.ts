import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { readProcfile } from '../../scripts/procfile.js';
import { closureOf, isRedisClient } from '../helpers/imports.js';
import { freePort } from '../../scripts/free-port.js';
import { createPspSandbox } from '../../sandbox/app.js';
import { allOperations } from '../../api/app.js';
import { METRICS_PORT_OFFSETS, serveMetrics } from '../../shared/metrics/server.js';
import { logger } from '../../shared/logger.js';

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

  it('gives every long-running app service a healthcheck that asks one exact status of a route its process serves', async () => {
    // Regression: the sandbox's check polled /checkout/health (404) and passed because anything under 500 counted;
    // the five workers had none.
    const procfile = Object.fromEntries(readProcfile(path.join(ROOT, 'Procfile')).map((p) => [p.name, p.args[0]!]));
    for (const name of APP.filter((s) => s !== 'migrate')) {
      const test = services[name]!.healthcheck?.test as string[] | undefined;
      expect(test?.slice(0, 3), name).toEqual(['CMD', 'node', '-e']);
      const probe = test![3]!.match(/^fetch\('http:\/\/127\.0\.0\.1:(\d+)(\/[^']*)'\)\.then\(r => process\.exit\(r\.status === (\d{3}) \? 0 : 1\), \(\) => process\.exit\(1\)\)$/);
      expect(probe, `${name}: ${test![3]}`).not.toBeNull();
      const [, port, route, status] = probe!;
      const entry = procfile[name]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      if (name === 'api') {
        expect([port, status]).toEqual(['3000', '200']);
        expect(allOperations().some((o) => o.method === 'get' && o.path === route), route).toBe(true);
      } else if (name === 'dashboard') {
        expect([port, route, status]).toEqual(['3001', '/admin/queues', '401']); // up, and asking for credentials
      } else if (name === 'psp') {
        expect(port).toBe('4000');
        const sandbox = createPspSandbox({ apiKey: 'k', webhookSecret: 's', webhookUrl: 'http://127.0.0.1:9/payments/webhook' });
        const { server, url } = await sandbox.listen(0);
        try {
          expect((await fetch(`${url}${route}`)).status, route).toBe(Number(status));
        } finally {
          await sandbox.close();
          server.close();
        }
      } else {
        // A worker: its metrics server on METRICS_PORT_BASE (9100) + the kind's offset, which answers /metrics.
        expect(Number(port), name).toBe(9100 + METRICS_PORT_OFFSETS[name]!);
        expect([route, status]).toEqual(['/metrics', '200']);
        expect(closureOf(entry).files.has('shared/process.ts'), `${entry} runs under runProcess (which serves /metrics)`).toBe(true);
      }
    }
    const local = await freePort();
    const stop = await serveMetrics(local, logger);
    try {
      expect((await fetch(`http://127.0.0.1:${local}/metrics`)).status).toBe(200);
    } finally {
      await stop();
    }
  });

  it('makes a service wait for Redis exactly when its process uses a Redis client', () => {
    // Regression: the sandbox provider, which never opens Redis, waited for it.
    const procfile = Object.fromEntries(readProcfile(path.join(ROOT, 'Procfile')).map((p) => [p.name, p.args[0]!]));
    for (const name of APP) {
      const entry = procfile[name === 'migrate' ? 'release' : name]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      const usesRedis = [...closureOf(entry).packages].some(isRedisClient);
      const waits = Object.keys(services[name]!.depends_on ?? {}).includes('redis');
      expect(waits, `${name} (${entry}) ${usesRedis ? 'uses' : 'never uses'} Redis`).toBe(usesRedis);
    }
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

  it('has a `scale` profile with the topology of npm run topology: Redis Cluster 3+3, 3 KRaft brokers, a replica, 3 APIs behind HAProxy', () => {
    const scale = Object.entries(services).filter(([, s]) => (s.profiles ?? []).includes('scale')).map(([n]) => n).sort();
    expect(scale).toEqual(['api-2', 'api-3', 'haproxy', 'kafka-1', 'kafka-2', 'kafka-3', 'postgres-replica',
      ...[1, 2, 3, 4, 5, 6].map((n) => `redis-node-${n}`), 'redis-cluster-init'].sort());
    // The default `docker compose up` is unchanged: no service of it is in a profile.
    for (const name of [...APP, 'postgres', 'redis', 'kafka', 'prometheus', 'grafana']) expect(services[name]!.profiles, name).toBeUndefined();
    for (const n of [1, 2, 3, 4, 5, 6]) expect(services[`redis-node-${n}`]!.command.join(' '), `redis-node-${n}`).toMatch(/--cluster-enabled yes/);
    expect(services['redis-cluster-init']!.command[0]).toMatch(/--cluster create .*--cluster-replicas 1/);
    for (const n of [1, 2, 3]) {
      const env = services[`kafka-${n}`]!.environment;
      expect(env.KAFKA_NODE_ID, `kafka-${n}`).toBe(n);
      expect(env.KAFKA_ADVERTISED_LISTENERS).toBe(`INTERNAL://kafka-${n}:9092`);
      expect(env.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe('1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093');
      expect([env.KAFKA_DEFAULT_REPLICATION_FACTOR, env.KAFKA_MIN_INSYNC_REPLICAS, env.KAFKA_PROCESS_ROLES]).toEqual([3, 2, 'broker,controller']);
    }
    expect(new Set([1, 2, 3].map((n) => services[`kafka-${n}`]!.volumes[0])).size).toBe(3);
    expect(services['postgres-replica']!.command[0]).toMatch(/pg_basebackup -h postgres .* -R -X stream/);
    expect(services.postgres!.volumes).toContain('./deploy/postgres/allow-replication.sh:/docker-entrypoint-initdb.d/allow-replication.sh:ro');
    // deploy/scale.env points every app service at them; HAProxy checks the three APIs on /ready.
    const scaleEnv = Object.fromEntries(read('deploy/scale.env').split('\n').filter((l) => /^\w+=/.test(l)).map((l) => l.split('=', 2) as [string, string]));
    expect(scaleEnv.REDIS_CLUSTER_NODES!.split(',').map((h) => h.split(':')[0])).toEqual([1, 2, 3, 4, 5, 6].map((n) => `redis-node-${n}`));
    expect(scaleEnv.KAFKA_BROKERS).toBe('kafka-1:9092,kafka-2:9092,kafka-3:9092');
    expect(scaleEnv.DATABASE_READ_HOST).toBe('postgres-replica');
    for (const name of APP) {
      const env = services[name]!.environment;
      expect([env.REDIS_CLUSTER_NODES, env.KAFKA_BROKERS], name).toEqual(['${REDIS_CLUSTER_NODES:-}', '${KAFKA_BROKERS:-kafka:9092}']);
      expect(env.DATABASE_READ_URL, name).toMatch(/^\$\{DATABASE_READ_HOST:\+postgres:\/\/postgres:\$\{POSTGRES_PASSWORD\}@\$\{DATABASE_READ_HOST\}:5432\/booking\}$/);
    }
    for (const api of ['api-2', 'api-3']) {
      expect(services[api]!.command).toEqual(services.api!.command);
      expect(services[api]!.healthcheck.test).toEqual(services.api!.healthcheck.test);
      expect(services[api]!.depends_on['redis-cluster-init']).toEqual({ condition: 'service_completed_successfully' });
    }
    const cfg = read('deploy/haproxy/haproxy.cfg');
    expect(cfg).toMatch(/option httpchk GET \/ready/);
    expect([...cfg.matchAll(/^\s+server (\S+) (\S+):3000 check$/gm)].map((m) => m[2])).toEqual(['api', 'api-2', 'api-3']);
    expect(services.haproxy!.volumes).toEqual(['./deploy/haproxy:/usr/local/etc/haproxy:ro']);
  });

  it('.env.example names every variable compose requires, with no value', () => {
    const required = [...read('docker-compose.yml').matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]!);
    const example = Object.fromEntries(read('.env.example').split('\n').filter((l) => /^\w+=/.test(l)).map((l) => l.split('=', 2) as [string, string]));
    for (const name of new Set(required)) expect(example[name], name).toBe('');
  });
});
