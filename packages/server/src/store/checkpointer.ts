import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the background thread copies committed WAL pages into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;

// The thread's whole program: its own connection to the same file, a PASSIVE checkpoint (it never blocks
// readers or writers, and does what it can when they are busy) every interval, including the fsyncs.
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.intervalMs);
parentPort.on('message', () => { clearInterval(timer); db.close(); process.exit(0); });
`;

/**
 * Checkpoints the embedded store's write-ahead log from a thread of its own,
 * so that the event loop never copies pages into the database file or waits
 * for its fsync: with SQLite's automatic checkpoint the commit that crosses
 * the WAL threshold does all of that on the request path. While this runs
 * the caller raises the automatic checkpoint to a bound the log should never
 * reach (see WAL_LIMIT_PAGES in open.ts), and lowers it back to SQLite's
 * default (`onFailure`) if the thread ever stops unasked.
 */
export class BackgroundCheckpointer {
  private readonly worker: Worker;
  private stopping = false;

  constructor(path: string, onFailure: () => void, intervalMs = CHECKPOINT_INTERVAL_MS) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(PROGRAM, { eval: true, workerData: { path, driver, intervalMs } });
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
