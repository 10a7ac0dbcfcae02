// The whole topology on one host, in the foreground: a PostgreSQL primary and its streaming replica, a Redis Cluster
// (3 masters, 3 replicas), a 3-broker Kafka, the workers, N API processes behind HAProxy (scripts/topology/topology.ts).
// Ctrl-C (or SIGTERM) brings it all down again and deletes its data; `npm run topology -- down` cleans up after a
// run that was killed.
//   npm run topology      TOPOLOGY_DIR (/tmp/booking-topology), TOPOLOGY_APIS (3), TOPOLOGY_PORT (8080),
//                         TOPOLOGY_KAFKA_PORT (29092), PG_PRIMARY_PORT (55432), PG_REPLICA_PORT (55433)
import { destroyTopology, startTopology, type Topology } from './topology.js';

const DIR = process.env.TOPOLOGY_DIR ?? '/tmp/booking-topology';
const log = (m: string) => console.error(`[topology] ${m}`);

async function up(): Promise<void> {
  let topo: Topology | undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    log('bringing the topology down');
    if (topo) await topo.stop();
    else destroyTopology(DIR);
    log('down');
    process.exit(code);
  };
  // Signals during start-up wait for it to finish (or fail), then bring down what it started.
  let starting: Promise<unknown> = Promise.resolve();
  process.on('SIGINT', () => void starting.catch(() => {}).then(() => stopAll(0)));
  process.on('SIGTERM', () => void starting.catch(() => {}).then(() => stopAll(0)));
  try {
    starting = startTopology({
      dir: DIR, apis: Number(process.env.TOPOLOGY_APIS ?? 3), port: Number(process.env.TOPOLOGY_PORT ?? 8080),
      kafkaPort: Number(process.env.TOPOLOGY_KAFKA_PORT ?? 29092), log,
    }).then((t) => (topo = t));
    await starting;
  } catch {
    process.exit(1);
  }
  log(`up: the API behind HAProxy at ${topo!.url} (${topo!.apis.length} processes), its environment in ${topo!.envFile}`);
  console.log(`API=${topo!.url}`);
  for (const a of topo!.apis) a.child.once('exit', (c, s) => { if (!stopping) log(`${a.name} exited (${c ?? s})`); });
}

if (process.argv[2] === 'down') destroyTopology(DIR);
else await up();
