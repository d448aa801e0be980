// The background checkpointer's thread (see checkpointer.ts): its own connection to the same file, a PASSIVE
// checkpoint (it never blocks readers or writers, and does what it can when they are busy) every interval,
// including the fsyncs. Its own bundle entry (dist/checkpoint-worker.js): a worker thread loads it by file name.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** What the store hands the thread. */
export interface CheckpointWorkerData {
  /** The database file. */
  path: string;
  /** How often to checkpoint. */
  intervalMs: number;
}

const { path, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(path);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), intervalMs);
// Any message means stop: after the checkpoint in progress, if any (the thread is single-threaded JavaScript).
parentPort?.on('message', () => {
  clearInterval(timer);
  db.close();
  process.exit(0);
});
