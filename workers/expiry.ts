import { isEntry } from '../shared/process.js';
import { runWorkerProcess } from './lib/worker-process.js';

// The expiry process: the queues the registry gives it (shared/queues/registry.ts, `process: 'expiry'`) and their reconciler.
if (isEntry(import.meta.url)) await runWorkerProcess('expiry');
