import { CHECKPOINT_INTERVAL_MS } from '../config/defaults.js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerData } from './checkpoint-worker.js';

// The thread is its own bundle entry (dist/checkpoint-worker.js, next to the bundle that loads it). Tests run
// this module from src/store/, two folders below the package's dist/; `pnpm test` builds first.
const here = import.meta.url;
const WORKER = fileURLToPath(new URL(here.endsWith('.ts') ? '../../dist/checkpoint-worker.js' : './checkpoint-worker.js', here));

/**
 * Checkpoints the embedded store's write-ahead log from a thread of its own,
 * so that the event loop never copies pages into the database file or waits
 * for its fsync: with SQLite's automatic checkpoint the commit that crosses
 * the WAL threshold does all of that on the request path. While this runs
 * the caller raises the automatic checkpoint to a bound the log should never
 * reach (see WAL_LIMIT_PAGES in config/defaults.ts), and lowers it back to SQLite's
 * default (`onFailure`) if the thread ever stops unasked.
 */
export class BackgroundCheckpointer {
  private readonly worker: Worker;
  private stopping = false;

  constructor(path: string, onFailure: () => void, intervalMs = CHECKPOINT_INTERVAL_MS) {
    if (!existsSync(WORKER)) throw new Error(`checkpoint worker ${WORKER} is missing: build the server first (pnpm build)`);
    const workerData: CheckpointWorkerData = { path, intervalMs };
    this.worker = new Worker(WORKER, { workerData });
    this.worker.unref();
    const failed = () => {
      if (!this.stopping) onFailure();
    };
    this.worker.on('error', failed);
    this.worker.on('exit', failed);
  }

  /** Stops the thread (after a checkpoint in progress, if any) and closes its connection. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    // The thread is unreferenced so that it never holds the process open by itself; while it stops, it must,
    // or a process with nothing else left to run (a start that refuses) exits mid-close with the wrong status.
    this.worker.ref();
    const exited = new Promise<void>((res) => this.worker.once('exit', () => res()));
    this.worker.postMessage('stop');
    await Promise.race([exited, new Promise<void>((res) => setTimeout(res, 2000).unref())]);
    await this.worker.terminate();
  }
}
