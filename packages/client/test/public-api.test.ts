import { describe, expect, it } from 'vitest';
import { AuthcliError } from '../src/errors.js';
import { getToken, signIn, signOut, status } from '../src/index.js';
import { inProcessLock } from '../src/storage/memory.js';
import { errorInToolWords, inToolWords } from '../src/voice.js';

const words = { name: 'deploy', signInAgain: 'run `deploy login`' };

describe("@authcli/client's public functions without a server", () => {
  it('refuse bad options with a usage or config AuthcliError, before any request', async () => {
    const target = { issuer: 'https://id.example.com', clientId: 'tool', storage: 'memory' as const };
    await expect(getToken({ ...target, clientId: '' })).rejects.toMatchObject({ code: 'usage' });
    await expect(getToken({ ...target, issuer: 'id.example.com' })).rejects.toMatchObject({ code: 'config' });
    await expect(status({ ...target, profile: '../x' })).rejects.toMatchObject({ code: 'usage' });
    await expect(status({ ...target, storage: 'disk' as never })).rejects.toMatchObject({ code: 'usage' });
    await expect(getToken({ ...target, minValidity: -1 })).rejects.toMatchObject({ code: 'usage' });
    await expect(signIn({ ...target, flow: 'carrier-pigeon' as never })).rejects.toMatchObject({ code: 'usage' });
    await expect(getToken({ ...target, directory: '' })).rejects.toMatchObject({ code: 'usage' });
  });

  it('answer for a profile with no sign-in: status signed out, getToken signed_out in the tool words, signOut false', async () => {
    const target = { issuer: 'https://id.example.com', clientId: 'tool', storage: 'memory' as const, profile: 'nobody', appName: 'deploy' };
    expect(await status(target)).toEqual({
      signedIn: false,
      issuer: 'https://id.example.com',
      profile: 'nobody',
      storedIn: 'memory (this process)',
    });
    const err = await getToken({ ...target, signInAgain: 'run `deploy login`' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthcliError);
    expect(err).toMatchObject({
      code: 'signed_out',
      message: 'not signed in to https://id.example.com (profile nobody); run `deploy login`',
    });
    expect(await signOut(target)).toBe(false);
  });
});

describe('the library in the tool words (voice.ts)', () => {
  it("replaces authcli's commands and name, and leaves other sentences alone", () => {
    expect(inToolWords('not signed in to X; run `authcli login --profile work`', words)).toBe('not signed in to X; run `deploy login`');
    expect(inToolWords('Waiting for another authcli process (pid 4) that is refreshing', words)).toBe(
      'Waiting for another deploy process (pid 4) that is refreshing',
    );
    expect(inToolWords('X does not offer the device flow; try `authcli login --browser`', words)).toBe(
      'X does not offer the device flow; try the browser flow',
    );
    expect(inToolWords('the ID token did not verify: "exp" claim timestamp check failed', words)).toBe(
      'the ID token did not verify: "exp" claim timestamp check failed',
    );
  });

  it('an AuthcliError is said again in place (its class and fields stay); a hint naming an authcli command is dropped; other errors pass', () => {
    const original = new AuthcliError('signed_out', 'not signed in to X; run `authcli login`', { hint: 'See `authcli login --help`.' });
    const said = errorInToolWords(original, words) as AuthcliError;
    expect(said).toBe(original);
    expect(said).toMatchObject({ code: 'signed_out', message: 'not signed in to X; run `deploy login`', hint: undefined });
    expect(said.stack).toContain('run `deploy login`');
    const plain = new AuthcliError('network', 'cannot reach X', { hint: 'Is the server running?' });
    expect(errorInToolWords(plain, words)).toMatchObject({ message: 'cannot reach X', hint: 'Is the server running?' });
    const bug = new TypeError('x');
    expect(errorInToolWords(bug, words)).toBe(bug);
  });

  it('the expired code, flags and `$` in the tool words', () => {
    const expired = 'the code expired before the sign-in was approved; run `authcli login` again';
    expect(inToolWords(expired, { name: 'deploy', signInAgain: 'sign in again' })).toBe(
      'the code expired before the sign-in was approved; sign in again',
    );
    expect(inToolWords('port 80 on 127.0.0.1 is in use; pick another with --port', words)).toBe(
      'port 80 on 127.0.0.1 is in use; pick another port',
    );
    expect(inToolWords('Ask without admin: --scope "openid profile" (or ask the operator)', words)).toBe(
      'Ask without admin: ask for "openid profile" (or ask the operator)',
    );
    expect(inToolWords('not signed in; run `authcli login`', { name: 'x', signInAgain: 'run `pay $1 login`' })).toBe(
      'not signed in; run `pay $1 login`',
    );
  });
});

describe('the in-process lock of memory storage', () => {
  it('runs the holders of one key one at a time, in order, and a failure lets the next in', async () => {
    const events: string[] = [];
    const hold = (name: string, fail = false) =>
      inProcessLock('slot', async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 5));
        events.push(`${name} out`);
        if (fail) throw new Error(name);
      });
    const results = await Promise.allSettled([
      hold('a'),
      hold('b', true),
      hold('c'),
      inProcessLock('other', async () => events.push('other')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(events.filter((e) => e !== 'other')).toEqual(['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
    // Another key does not wait for this one.
    expect(events.indexOf('other')).toBeLessThan(events.indexOf('a out'));
  });
});
