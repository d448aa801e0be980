/**
 * A password-hashing thread (see password-pool.ts). It runs Argon2id
 * synchronously on its own thread: the asynchronous form would queue on
 * libuv's pool, which the whole process shares with RS256 signing.
 */
import { hashPasswordSync, type PasswordHashParams, verifyPasswordSync } from './password.js';

export type PasswordTask =
  | { op: 'hash'; password: string; params: PasswordHashParams }
  | { op: 'verify'; password: string; stored: string };

export default function run(task: PasswordTask): string | boolean {
  return task.op === 'hash' ? hashPasswordSync(task.password, task.params) : verifyPasswordSync(task.password, task.stored);
}
