import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

export const LOCAL_BROKER = '127.0.0.1:9092';

/** True when something accepts a TCP connection on host:port within `timeoutMs`. */
export const answers = (host: string, port: number, timeoutMs = 1000) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true)).once('error', () => done(false));
  });

const onPath = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/**
 * KAFKA_BROKERS unset or empty: use the local broker on 127.0.0.1:9092, starting the project's own
 * (scripts/kafka.sh, the one `npm test` uses; it outlives `npm start`) when none answers and Java is
 * there. This never blocks start-up: the pump keeps reconnecting until a broker answers, and events
 * wait in the outbox meanwhile. Returns the kafka.sh process while it runs, for the supervisor to end.
 */
export async function ensureLocalKafka(root: string, say: (line: string) => void): Promise<ChildProcess | null> {
  if (await answers('127.0.0.1', 9092)) {
    say(`using the Kafka broker on ${LOCAL_BROKER}`);
    return null;
  }
  if (!onPath('java')) {
    say(`no Kafka on ${LOCAL_BROKER} and no Java to start one: events wait in the outbox until a broker answers there`);
    return null;
  }
  say(`no Kafka on ${LOCAL_BROKER}: starting the project's broker (scripts/kafka.sh; \`npm run kafka:stop\` stops it)`);
  const child = spawn('bash', [path.join(root, 'scripts/kafka.sh'), 'start'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  child.on('exit', (code) => {
    if (code !== 0) say(`kafka.sh could not start a broker (exit ${code}): events wait in the outbox until one answers on ${LOCAL_BROKER}`);
  });
  return child;
}
