/**
 * A password-hashing thread (see password-pool.ts). It runs scrypt
 * synchronously on its own thread: the asynchronous scrypt would queue on
 * libuv's pool, which the whole process shares with RS256 signing.
 */
import { hashPasswordSync, type ScryptParams, verifyPasswordSync } from './password.js';

export type PasswordTask = { op: 'hash'; password: string; params: ScryptParams } | { op: 'verify'; password: string; stored: string };

export default function run(task: PasswordTask): string | boolean {
  return task.op === 'hash' ? hashPasswordSync(task.password, task.params) : verifyPasswordSync(task.password, task.stored);
}
