import { isEntry } from '../shared/process.js';
import { runWorkerProcess } from './lib/worker-process.js';

// The refunds process: the queues the registry gives it (shared/queues/registry.ts, `process: 'refunds'`) and their reconciler.
if (isEntry(import.meta.url)) await runWorkerProcess('refunds');
