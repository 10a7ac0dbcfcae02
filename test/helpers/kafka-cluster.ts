import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const SCRIPT = path.resolve(import.meta.dirname, '../../scripts/kafka-cluster.sh');
const exec = promisify(execFile);

/**
 * scripts/kafka-cluster.sh with its own directory and ports: start, kill a node, start it again, destroy. Run
 * asynchronously: the test's API serves its requests meanwhile (a blocked event loop would break kept-alive sockets).
 */
export function kafkaCluster(dir: string, basePort: number) {
  const env = { ...process.env, KAFKA_CLUSTER_DIR: dir, KAFKA_CLUSTER_PORT: String(basePort) };
  const run = async (...args: string[]) => (await exec('bash', [SCRIPT, ...args], { env, encoding: 'utf8', timeout: 180_000 })).stdout;
  return {
    brokers: [0, 1, 2].map((i) => `127.0.0.1:${basePort + i}`),
    start: () => run('start'),
    /** SIGKILL of node n (1-3): a crash. */
    kill: (n: number) => run('kill', String(n)),
    startNode: (n: number) => run('start-node', String(n)),
    destroy: () => run('destroy'),
  };
}
