import { dirname } from 'node:path';

/**
 * What an operator reads when a file the server makes or reads cannot be: the
 * path, what is wrong in words, and what to do, instead of Node's
 * `ENOENT: no such file or directory, open '…'`.
 */
export function fileProblem(err: unknown, path: string, doing: 'create' | 'read'): string {
  const code = (err as { code?: unknown }).code;
  const what = `cannot ${doing} ${path}`;
  switch (code) {
    case 'ENOENT':
      return doing === 'create'
        ? `${what}: the folder ${dirname(path)} does not exist (create it first, or choose another path)`
        : `${what}: there is no such file`;
    case 'EACCES':
    case 'EPERM':
      return `${what}: permission denied (run as a user who may ${doing === 'create' ? 'write' : 'read'} there, or choose another path)`;
    case 'ENOTDIR':
      return `${what}: a part of the path is a file, not a folder`;
    case 'EEXIST':
      return `${what}: something of that name is already there`;
    case 'EISDIR':
      return `${what}: it is a folder; name a file`;
    case 'EROFS':
      return `${what}: the file system is read-only`;
    case 'ENOSPC':
      return `${what}: no space left on the device`;
    default:
      return `${what}: ${(err as Error).message}`;
  }
}
