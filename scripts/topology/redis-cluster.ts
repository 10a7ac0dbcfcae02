// A Redis Cluster of six redis-server on 127.0.0.1 (three masters, one replica each), as
// test/integration/redis-cluster.test.ts makes it: `redis-cli --cluster create … --cluster-replicas 1`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface RedisCluster {
  nodes: string[];
  servers: ChildProcess[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });

export async function startRedisCluster(dir: string, ports: number[]): Promise<RedisCluster> {
  fs.mkdirSync(dir, { recursive: true });
  const servers = ports.map((port) => spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
    '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir,
  ], { stdio: 'ignore' }));
  const stop = async () => {
    await Promise.all(servers.map((s) => (s.exitCode !== null || s.signalCode !== null ? null : new Promise((r) => { s.once('exit', r); s.kill('SIGKILL'); }))));
  };
  try {
    for (let t = 0; !ports.every((p) => cli(p, 'ping').stdout.trim() === 'PONG'); t++) {
      if (t > 100) throw new Error('redis-server did not answer');
      await sleep(100);
    }
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8' });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create: ${create.stdout}${create.stderr}`);
    for (let t = 0; !ports.every((p) => /cluster_state:ok/.test(cli(p, 'cluster', 'info').stdout)); t++) {
      if (t > 100) throw new Error('the cluster did not reach cluster_state:ok');
      await sleep(200);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { nodes: ports.map((p) => `127.0.0.1:${p}`), servers, stop };
}
