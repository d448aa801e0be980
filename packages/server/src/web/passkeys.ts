import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WEBAUTHN_CHALLENGE_TTL_MS } from '../config/defaults.js';
import { clientAddress } from '../http/client-ip.js';
import { pageForm } from '../http/form.js';
import { amrOf, meetsAcr, PHISHING_RESISTANT_ACR } from '../oauth/acr.js';
import { CredentialChangeRefused, credentialChangeOf } from '../oauth/credential-change.js';
import { randomToken, sha256Hex } from '../util/crypto.js';
import type { WebContext } from './context.js';
import { type Continuation, reauthFor } from './continuation.js';
import { unnamedPasskeyName } from './passkey-name.js';
import type { CurrentSession } from './session.js';
import {
  authenticationOptions,
  finishAuthentication,
  finishRegistration,
  PasskeyError,
  type RelyingParty,
  registrationOptions,
  relyingParty,
} from './webauthn.js';

const ACCOUNT: Continuation = { kind: 'page', page: 'account' };
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The passkey endpoints the pages' script (/assets/passkey.js, web/passkey/main.ts) calls: the options of a
 * ceremony, then its answer, each a CSRF-protected form POST answered with JSON (`{ error }` with a 4xx when
 * refused). Adding and removing passkeys needs a signed-in session; signing in with one needs nothing but
 * the passkey. A ceremony is bound to the browser that started it by a cookie of its own.
 *
 * Adding or removing a passkey needs a recent sign-in, and a passkey sign-in once the account has a passkey
 * (oauth/credential-change.ts): checked when a ceremony starts, again when it ends (the session may have changed
 * meanwhile), and, for a session without a passkey sign-in, once more as the passkey is stored (only a first one).
 * Refused, the answer names where to sign in again (`location`), and the script goes there.
 */
export async function passkeyRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { store, config, limits, sessions, continuations, trustedDevices, flash } = ctx;
  const rp = relyingParty(config.issuer);
  const secure = config.issuer.startsWith('https:');
  const cookieName = secure ? '__Host-authcli_webauthn' : 'authcli_webauthn';

  /** The SHA-256 of this browser's ceremony cookie, made (and set) when it has none. */
  const browserOf = (req: FastifyRequest, reply: FastifyReply): string => {
    const existing = req.cookies[cookieName];
    if (existing && TOKEN.test(existing)) return sha256Hex(existing);
    const raw = randomToken(32);
    reply.setCookie(cookieName, raw, {
      path: '/',
      httpOnly: true,
      sameSite: 'strict',
      secure,
      maxAge: Math.ceil((2 * WEBAUTHN_CHALLENGE_TTL_MS) / 1000),
    });
    return sha256Hex(raw);
  };
  /** The ceremony cookie's hash when the browser sent one; an answer without it matches no challenge. */
  const existingBrowser = (req: FastifyRequest) => {
    const raw = req.cookies[cookieName];
    return raw && TOKEN.test(raw) ? sha256Hex(raw) : '';
  };
  const json = (reply: FastifyReply, body: unknown, status = 200) =>
    reply.code(status).header('cache-control', 'no-store').type('application/json; charset=utf-8').send(JSON.stringify(body));
  const refuse = (reply: FastifyReply, err: unknown) => {
    if (err instanceof PasskeyError) return json(reply, { error: err.message }, 400);
    throw err;
  };
  /** The relying party, or a 409 saying why this server cannot have passkeys. */
  const available = (reply: FastifyReply): RelyingParty | undefined => {
    if ('unavailable' in rp) {
      void json(reply, { error: rp.unavailable }, 409);
      return undefined;
    }
    return rp;
  };
  /** Each ceremony stores a challenge row: counted per client IP first. */
  const admitted = async (req: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    const admission = await limits.webauthnCeremony(clientAddress(req));
    if (admission.admitted) return true;
    reply.header('retry-after', String(admission.retryAfterSeconds));
    await json(reply, { error: 'Too many passkey attempts from this address. Try again later.' }, 429);
    return false;
  };
  /** The signed-in user of a JSON call; a 401 answer without one (the script reloads into the sign-in page). */
  const signedIn = async (req: FastifyRequest, reply: FastifyReply) => {
    const current = await sessions.current(req);
    if (!current) await json(reply, { error: 'Your session has ended: sign in again.' }, 401);
    return current;
  };
  /** Whether this session may change the account's passkeys now; refused, what it needs first. */
  const mayChange = (c: CurrentSession) => credentialChangeOf(store, c, config.now());
  /** A 403 naming the sign-in to make first (the script goes there; it resumes the account page). */
  const reauthenticate = async (req: FastifyRequest, reply: FastifyReply, refused: CredentialChangeRefused) =>
    json(reply, { error: refused.message, location: await continuations.signInUrl(req, reply, reauthFor(refused.needs)) }, 403);

  app.post('/account/passkeys/options', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    const party = c && available(reply);
    if (!c || !party) return reply;
    const change = await mayChange(c);
    if (!change.allowed) return reauthenticate(req, reply, new CredentialChangeRefused(change.needs));
    if (!(await admitted(req, reply))) return reply;
    try {
      const existing = await store.passkeys.listByUser(c.user.id);
      return json(reply, await registrationOptions(store, party, c.user, existing, browserOf(req, reply), config.now()));
    } catch (err) {
      return refuse(reply, err);
    }
  });

  app.post('/account/passkeys', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    const party = c && available(reply);
    if (!c || !party) return reply;
    const change = await mayChange(c);
    if (!change.allowed) return reauthenticate(req, reply, new CredentialChangeRefused(change.needs));
    const form = pageForm(req);
    const from = clientAddress(req);
    try {
      // The passkey and its audit row together.
      const passkey = await store.changes(async () => {
        const added = await finishRegistration(
          store,
          party,
          c.user,
          // Unnamed: after the browser and system adding it, and the day (web/passkey-name.ts).
          { response: form.response, name: form.name?.trim() || unnamedPasskeyName(req.headers['user-agent'], config.now()) },
          existingBrowser(req),
          config.now(),
          { onlyFirst: !meetsAcr(amrOf(c.session.amr), PHISHING_RESISTANT_ACR, c.session.acr), from },
        );
        await store.signInEvents.recordCredential(c.user.id, 'passkey-added', added.name, from, config.now());
        return added;
      });
      flash.put(c.session.id_hash, { kind: 'notice', text: `Added the passkey "${passkey.name}"` });
      return json(reply, { added: passkey.name });
    } catch (err) {
      if (err instanceof CredentialChangeRefused) return reauthenticate(req, reply, err);
      return refuse(reply, err);
    }
  });

  app.post('/account/passkeys/remove', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await sessions.current(req);
    if (!c) return reply.redirect(await continuations.signInUrl(req, reply, ACCOUNT), 303);
    const change = await mayChange(c);
    if (!change.allowed) return reply.redirect(await continuations.signInUrl(req, reply, reauthFor(change.needs)), 303);
    const id = pageForm(req).id ?? '';
    const removed =
      id === ''
        ? undefined
        : await store.changes(async () => {
            const gone = await store.passkeys.delete(c.user.id, id);
            if (gone) await store.signInEvents.recordCredential(c.user.id, 'passkey-removed', gone.name, clientAddress(req), config.now());
            return gone;
          });
    flash.put(c.session.id_hash, {
      kind: 'notice',
      text: removed ? `Removed the passkey "${removed.name}"` : 'That passkey was removed already',
    });
    return reply.redirect('/account', 303);
  });

  app.post('/signin/passkey/options', { preHandler: app.csrfProtection }, async (req, reply) => {
    const party = available(reply);
    if (!party || !(await admitted(req, reply))) return reply;
    return json(reply, await authenticationOptions(store, party, browserOf(req, reply), config.now()));
  });

  app.post('/signin/passkey', { preHandler: app.csrfProtection }, async (req, reply) => {
    const party = available(reply);
    if (!party) return reply;
    const form = pageForm(req);
    try {
      const signIn = await finishAuthentication(store, party, form.response, existingBrowser(req), config.now());
      trustedDevices.issue(reply, signIn.user.username);
      await sessions.start(req, reply, signIn.user, signIn.amr);
      // The account page's "Recent sign-ins".
      await store.signInEvents.record({
        user_id: signIn.user.id,
        at: config.now(),
        kind: 'passkey',
        client_ip: clientAddress(req),
        device_ip: null,
        client_id: null,
      });
      return json(reply, { location: await continuations.resume(req, form.continue) });
    } catch (err) {
      return refuse(reply, err);
    }
  });
}
