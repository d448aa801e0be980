import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { accessTokenTtl, spokenDuration } from '../oauth/lifetimes.js';
import { MIN_PASSWORD_LENGTH, SIGNIN_PASSWORD_MAX } from '../config/defaults.js';
import { clientAddress } from '../http/client-ip.js';
import { pageForm } from '../http/form.js';
import { changedFields } from '../admin/context.js';
import { applyClaimsPatch, checkClaim, PROFILE_CLAIMS, type ClaimsPatch } from '../oauth/claims.js';
import { claimsOf, type GrantHolder, type Passkey } from '../store/store.js';
import { InputError } from '../util/input-error.js';
import { PasswordHasherBusy } from '../util/password-pool.js';
import type { WebContext } from './context.js';
import type { Continuation } from './continuation.js';
import { PASSKEY_SCRIPT, PasskeysCard } from './passkey-views.js';
import { FIELDS, type ProfileClaim, type ProfileValues, valuesOf } from './profile-fields.js';
import { ConnectorsCard } from './connector-views.js';
import { passkeyAvailability } from './webauthn.js';
import { type RecentSignIn, RecentSignIns, recentSignInsOf } from './recent-signins.js';
import { sendPage, viewerOf } from './render.js';
import { retryAfterText } from './retry-after.js';
import { requireSignIn, type CurrentSession } from './session.js';
import { Alert, Layout, Notice, ScopeList, type Viewer } from './views.js';

const ACCOUNT: Continuation = { kind: 'page', page: 'account' };

/** An application with access to the user's account: approved on the consent page, or holding working tokens. */
interface ConnectedApplication {
  clientId: string;
  name: string;
  scopes: string[];
  /** Its sign-ins whose tokens still work. */
  signIns: number;
  /** When tokens were last issued to it (epoch ms). */
  lastIssued: number | undefined;
  /** When the user first approved it on the consent page (epoch ms). */
  approvedSince: number | undefined;
  /** How long its access tokens live (seconds): its own lifetime or the server's. */
  accessTtlSeconds: number;
}

/** "1 application sign-in", "3 application sign-ins". */
const signInsText = (n: number) => `${n} application sign-in${n === 1 ? '' : 's'}`;

/** A day, in UTC and saying so: the server does not know the reader's time zone. */
const day = (ms: number) => `${new Date(ms).toISOString().slice(0, 10)} (UTC)`;

function usage(a: ConnectedApplication): string {
  if (a.signIns === 0) return a.approvedSince === undefined ? 'Not signed in.' : `Approved on ${day(a.approvedSince)}; not signed in.`;
  const count = a.signIns === 1 ? 'One active sign-in' : `${a.signIns} active sign-ins`;
  return `${count}; tokens last issued on ${day(a.lastIssued!)}.`;
}

function Applications(props: { viewer: Viewer; applications: ConnectedApplication[]; accessTtl: string }) {
  return (
    <div class="card">
      <h2 id="applications">Applications</h2>
      <p class="muted">
        {`Applications you allowed to use your account. Removing one ends its access here at once, and it must ask you again; a service that checks its access tokens by itself may accept them for up to ${props.accessTtl} more.`}
      </p>
      {props.applications.length === 0 ? (
        <p class="muted">No application has access to your account.</p>
      ) : (
        <ul class="applications">
          {props.applications.map((a) => (
            <li>
              <strong>{a.name}</strong> <code>{a.clientId}</code>
              <p class="muted">{usage(a)}</p>
              <ScopeList scopes={a.scopes} />
              <form method="post" action="/account/applications/remove">
                <input type="hidden" name="_csrf" value={props.viewer.csrf} />
                <input type="hidden" name="client_id" value={a.clientId} />
                <button type="submit" class="danger" aria-label={`Remove the access of ${a.name}`}>
                  Remove access
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function AccountPage(props: {
  viewer: Viewer;
  values: ProfileValues;
  applications: ConnectedApplication[];
  accessTtl: string;
  recentSignIns: RecentSignIn[];
  now: number;
  /** The password form's "end every application's access" box, as last submitted (checked unless cleared). */
  signOutApps?: boolean;
  errors?: Partial<Record<ProfileClaim, string>>;
  notice?: string | undefined;
  passwordError?: string | undefined;
  passkeys: readonly Passkey[];
  connectors: readonly { id: string; name: string; type: string; linked: boolean }[];
  /** Why this server cannot have passkeys, when it cannot. */
  passkeysUnavailable?: string | undefined;
}) {
  const errors = props.errors ?? {};
  const failed = Object.keys(errors).length;
  return (
    <Layout title="Account" viewer={props.viewer} wide scripts={props.passkeysUnavailable ? undefined : [PASSKEY_SCRIPT]}>
      <h1>Account</h1>
      <Notice text={props.notice} />
      <div class="columns">
        <div>
          <div class="card">
            <h2>Profile</h2>
            <p class="muted">The applications you allow to read your profile see these details. Leave a field empty to remove it.</p>
            <Alert message={failed ? `Check the ${failed === 1 ? 'field' : `${failed} fields`} marked below.` : undefined} />
            <form method="post" action="/account" novalidate>
              <input type="hidden" name="_csrf" value={props.viewer.csrf} />
              {PROFILE_CLAIMS.map((claim) => {
                const f = FIELDS[claim];
                const error = errors[claim];
                const described = [f.hint && `${claim}-hint`, error && `${claim}-error`].filter(Boolean).join(' ');
                return (
                  <>
                    <label for={claim}>{f.label}</label>
                    <input
                      id={claim}
                      name={claim}
                      type={f.type}
                      value={props.values[claim]}
                      autocomplete={f.autocomplete}
                      spellcheck={f.type === 'url' ? false : undefined}
                      aria-invalid={error ? 'true' : undefined}
                      aria-describedby={described || undefined}
                    />
                    {f.hint && (
                      <p id={`${claim}-hint`} class="muted">
                        {f.hint}
                      </p>
                    )}
                    {error && (
                      <p id={`${claim}-error`} class="field-error">
                        {error}
                      </p>
                    )}
                  </>
                );
              })}
              <div class="actions">
                <button type="submit">Save profile</button>
              </div>
            </form>
          </div>
        </div>
        <div>
          <PasskeysCard viewer={props.viewer} passkeys={props.passkeys} unavailable={props.passkeysUnavailable} />
          <div class="card">
            <h2 id="password-heading">Change password</h2>
            <p class="muted">Your other browsers are signed out; this one stays signed in.</p>
            <Alert message={props.passwordError} />
            <form method="post" action="/account/password" aria-labelledby="password-heading">
              <input type="hidden" name="_csrf" value={props.viewer.csrf} />
              <input type="text" name="username" autocomplete="username" value={props.viewer.username} hidden />
              <label for="current_password">Current password</label>
              <input id="current_password" name="current_password" type="password" autocomplete="current-password" required />
              <label for="new_password">New password</label>
              <input
                id="new_password"
                name="new_password"
                type="password"
                autocomplete="new-password"
                minLength={MIN_PASSWORD_LENGTH}
                required
                aria-describedby="new-password-hint"
              />
              <p id="new-password-hint" class="muted">{`At least ${MIN_PASSWORD_LENGTH} characters.`}</p>
              <label for="new_password_again">New password, again</label>
              <input id="new_password_again" name="new_password_again" type="password" autocomplete="new-password" required />
              <label>
                <input type="checkbox" name="sign_out_apps" value="on" checked={props.signOutApps ?? true} /> Also end every application's
                access: their tokens stop working, and each must be signed in to again
              </label>
              <div class="actions">
                <button type="submit">Change password</button>
              </div>
            </form>
          </div>
          <Applications viewer={props.viewer} applications={props.applications} accessTtl={props.accessTtl} />
          <ConnectorsCard csrf={props.viewer.csrf} connectors={props.connectors} />
          <RecentSignIns signIns={props.recentSignIns} now={props.now} />
        </div>
      </div>
    </Layout>
  );
}

/**
 * /account: a signed-in user's own profile claims (OIDC Core §5.1, the
 * profile scope's) and password. The email address and phone number, whose
 * verified flags only the operator can vouch for, are set with
 * `authcli-server users update`.
 *
 * Both forms answer 303 to GET /account with a one-time notice (flash.ts),
 * so a reload repeats nothing; a refused form comes back as it was typed,
 * with the problem next to its field.
 */
export async function accountRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { store, config, limits, passwords, trustedDevices, backchannel, flash } = ctx;
  const passkeys = passkeyAvailability(config.issuer);
  /** An audit row of the person's own change to their account (docs/audit.md). */
  const recordSelf = (req: FastifyRequest, c: CurrentSession, action: string, detail: Record<string, unknown>) => {
    const me = { type: 'user', id: c.user.id, name: c.user.username };
    return store.audit.append({
      at: config.now(),
      actor: { ...me, type: 'user' },
      action,
      target: me,
      address: clientAddress(req),
      detail,
    });
  };
  const signedIn = (req: FastifyRequest, reply: FastifyReply) => requireSignIn(ctx, req, reply, ACCOUNT);
  /**
   * Back-channel logout after sign-ins ended: the browser sessions `sids` that ended and, with `revoked`, the
   * holders of the grants just revoked. Queued in the background; the person's page never waits for, or fails
   * with, the telling (logged when it cannot be done).
   */
  const tellEnded = async (userId: string, sids: readonly string[], revoked?: readonly GrantHolder[]): Promise<void> => {
    try {
      await (revoked ? backchannel.accessEnded(userId, revoked, sids) : backchannel.sessionsEnded(userId, sids));
    } catch (err) {
      app.log.warn({ reason: (err as Error).message }, 'back-channel logout of ended sign-ins failed');
    }
  };
  /** The applications with access to the user's account, by name: consented to, or holding working tokens. */
  const applicationsOf = async (userId: string): Promise<ConnectedApplication[]> => {
    const [consents, live] = await Promise.all([
      store.consents.forUser(userId),
      store.grants.liveByClient(userId, config.now(), config.accessTokenTtlSeconds * 1000),
    ]);
    const ids = [...new Set([...consents.map((c) => c.clientId), ...live.map((g) => g.clientId)])];
    const found = await Promise.all(ids.map(async (id) => [id, await store.applications.get(id)] as const));
    return found
      .filter(([, app]) => app !== undefined)
      .map(([id, app]) => {
        const g = live.find((l) => l.clientId === id);
        const consent = consents.find((c) => c.clientId === id);
        const scopes = [...new Set([...(consent?.scopes ?? []), ...(g?.scopes ?? [])])].sort();
        return {
          clientId: id,
          name: app!.name,
          scopes,
          signIns: g?.grants ?? 0,
          lastIssued: g?.lastIssued,
          approvedSince: consent?.since,
          accessTtlSeconds: accessTokenTtl(app!, config),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name) || a.clientId.localeCompare(b.clientId));
  };
  /** The connectors, each with whether this user is linked through it. */
  const connectorsOf = async (userId: string) => {
    const linked = new Set((await store.connectors.linksOf(userId)).map((l) => l.connectorId));
    return (await store.connectors.list()).map((r) => ({ id: r.id, name: r.name, type: r.type, linked: linked.has(r.id) }));
  };
  const page = async (reply: FastifyReply, c: CurrentSession, props: Partial<Parameters<typeof AccountPage>[0]>, status = 200) => {
    const applications = await applicationsOf(c.user.id);
    // What the page says a removal leaves working: the longest lifetime of the applications listed.
    const longestTtl = Math.max(config.accessTokenTtlSeconds, ...applications.map((a) => a.accessTtlSeconds));
    return sendPage(
      reply,
      <AccountPage
        viewer={viewerOf(reply, c)}
        values={valuesOf(claimsOf(c.user))}
        applications={applications}
        accessTtl={spokenDuration(longestTtl)}
        passkeys={await store.passkeys.listByUser(c.user.id)}
        connectors={await connectorsOf(c.user.id)}
        passkeysUnavailable={passkeys.available ? undefined : passkeys.reason}
        recentSignIns={await recentSignInsOf(store, c.user.id, config.now())}
        now={config.now()}
        {...props}
      />,
      status,
    );
  };
  const saved = (reply: FastifyReply, c: CurrentSession, text: string) => {
    flash.put(c.session.id_hash, { kind: 'notice', text });
    return reply.redirect('/account', 303);
  };

  app.get('/account', async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    return page(reply, c, { notice: flash.take(c.session.id_hash, 'notice')?.text });
  });

  app.post('/account', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const form = pageForm(req);
    const values = Object.fromEntries(PROFILE_CLAIMS.map((claim) => [claim, (form[claim] ?? '').trim()])) as ProfileValues;
    // Every field checked on its own, so each problem shows next to its field; an empty field removes its claim.
    const patch: ClaimsPatch = {};
    const errors: Partial<Record<ProfileClaim, string>> = {};
    for (const claim of PROFILE_CLAIMS) {
      if (values[claim] === '') {
        patch[claim] = null;
        continue;
      }
      try {
        patch[claim] = checkClaim(claim, values[claim]);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        errors[claim] = err.message;
      }
    }
    if (Object.keys(errors).length > 0) return page(reply, c, { values, errors }, 400);
    await store.changes(async () => {
      const before = claimsOf(c.user);
      const after = claimsOf(await store.users.updateClaims(c.user.id, (current) => applyClaimsPatch(current, patch), config.now()));
      const detail = changedFields(before as Record<string, unknown>, after as Record<string, unknown>);
      if (Object.keys(detail).length > 0) await recordSelf(req, c, 'user.updated', detail);
    });
    return saved(reply, c, 'Saved');
  });

  app.post('/account/password', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const form = pageForm(req);
    const current = form.current_password ?? '';
    const next = form.new_password ?? '';
    const refuse = (passwordError: string, status: number) =>
      page(reply, c, { passwordError, signOutApps: form.sign_out_apps === 'on' }, status);
    if (!current || !next) return refuse('Enter your current password and a new one.', 400);
    if (next !== (form.new_password_again ?? '')) return refuse('The new password and its repetition differ.', 400);
    if (next.length < MIN_PASSWORD_LENGTH) return refuse(`The new password must be at least ${MIN_PASSWORD_LENGTH} characters.`, 400);
    if (next.length > SIGNIN_PASSWORD_MAX) return refuse(`The new password must be at most ${SIGNIN_PASSWORD_MAX} characters.`, 400);
    // The current password is a guess like a sign-in's (a session left open on a shared computer): counted by
    // the sign-in limits of this account, before it is hashed, and given back when it is right.
    const client = clientAddress(req);
    const { username } = c.user;
    const device = trustedDevices.deviceFor(req, username);
    const admission = await limits.signIn(client, username, device);
    if (!admission.admitted) {
      reply.header('retry-after', String(admission.retryAfterSeconds));
      return refuse(`Too many wrong passwords. Try again in ${retryAfterText(admission.retryAfterSeconds)}.`, 429);
    }
    let hash: string | undefined;
    try {
      if (current.length <= SIGNIN_PASSWORD_MAX && (await passwords.verify(current, c.user.password_hash, { client, device }))) {
        hash = await passwords.hash(next, { client, device });
      }
    } catch (err) {
      if (!(err instanceof PasswordHasherBusy)) throw err;
      await admission.giveBack();
      reply.header('retry-after', String(err.retryAfterSeconds));
      return refuse(`The server is busy. Try again in ${retryAfterText(err.retryAfterSeconds)}.`, 503);
    }
    if (hash === undefined) return refuse('The current password is wrong.', 403);
    await admission.giveBack();
    // After a password that may have leaked (sign_out_apps): every application's refresh and access tokens stop
    // working too. Both, and the audit row, in one transaction.
    const signOutApps = form.sign_out_apps === 'on';
    const { otherSessions, revoked } = await store.changes(async () => {
      const ended = await store.users.changePassword(c.user.id, hash, c.session.id_hash);
      const holders = signOutApps ? await store.grants.revokeForUser(c.user.id, config.now()) : [];
      await recordSelf(req, c, 'user.password_changed', { sessions_ended: ended.length, applications_signed_out: holders.length });
      return { otherSessions: ended, revoked: holders };
    });
    if (!signOutApps) {
      // The applications signed in through the browser sessions just ended hear of it (back-channel logout).
      await tellEnded(c.user.id, otherSessions);
      return saved(reply, c, 'Password changed');
    }
    // Every application the person signed in to hears of it.
    await tellEnded(c.user.id, otherSessions, revoked);
    const ended = revoked.length;
    return saved(reply, c, ended === 0 ? 'Password changed' : `Password changed; ${signInsText(ended)} ended`);
  });

  app.post('/account/applications/remove', { preHandler: app.csrfProtection }, async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    const clientId = pageForm(req).client_id ?? '';
    const known = clientId === '' ? undefined : await store.applications.get(clientId);
    // Idempotent: an application without access (or removed already, or unknown) changes nothing.
    const [revoked, forgotten] = await store.changes(async () => {
      const ended = await store.grants.revokeForUser(c.user.id, config.now(), clientId);
      const removed = await store.consents.remove(c.user.id, clientId);
      if (ended.length + removed > 0) await recordSelf(req, c, 'access.removed', { client_id: clientId, sign_ins_ended: ended.length });
      return [ended, removed] as const;
    });
    // The application hears of the sign-ins that ended (back-channel logout).
    if (revoked.length > 0) await tellEnded(c.user.id, [], revoked);
    const ended = revoked.length;
    if (!known || ended + forgotten === 0) return saved(reply, c, 'That application had no access to your account');
    return saved(
      reply,
      c,
      ended === 0 ? `Removed the access of ${known.name}` : `Removed the access of ${known.name} (${signInsText(ended)} ended)`,
    );
  });
}
