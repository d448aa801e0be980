import { SIGNIN_EVENTS_KEPT_MS, SIGNIN_EVENTS_PER_USER } from '../config/defaults.js';
import type { SignInEvent, Store } from '../store/store.js';
import { timeAgo, utcMinute } from './time-ago.js';
import { AppIdentity } from './views.js';

/**
 * A sign-in record as the account page shows it: its application named (or its client id, once deleted); a
 * connector event, its connector named (or its id, once removed).
 */
export interface RecentSignIn extends SignInEvent {
  appName: string | undefined;
  connectorName?: string | undefined;
}

const CREDENTIAL_KINDS: ReadonlySet<SignInEvent['kind']> = new Set([
  'passkey-added',
  'passkey-removed',
  'connector-linked',
  'connector-unlinked',
]);

/** The user's sign-in records, newest first, each device decision with its application's current name. */
export async function recentSignInsOf(store: Store, userId: string, now: number): Promise<RecentSignIn[]> {
  const events = await store.signInEvents.recent(userId, now);
  const ids = [...new Set(events.flatMap((e) => (e.client_id === null ? [] : [e.client_id])))];
  const names = new Map(await Promise.all(ids.map(async (id) => [id, (await store.applications.get(id))?.name] as const)));
  const connectors = events.some((e) => e.kind === 'connector-linked' || e.kind === 'connector-unlinked')
    ? new Map((await store.connectors.list()).map((c) => [c.id, c.name]))
    : new Map<string, string>();
  return events.map((e) => ({
    ...e,
    appName: e.client_id === null ? undefined : names.get(e.client_id),
    connectorName: e.detail === null ? undefined : (connectors.get(e.detail) ?? e.detail),
  }));
}

function What(props: { signIn: RecentSignIn }) {
  const s = props.signIn;
  if (s.kind === 'password') return <strong>Signed in with your password</strong>;
  if (s.kind === 'passkey') return <strong>Signed in with a passkey</strong>;
  if (s.kind === 'federated') return <strong>Signed in through a sign-in service</strong>;
  if (s.kind === 'passkey-added') return <strong>{`Added the passkey "${s.detail ?? ''}"`}</strong>;
  if (s.kind === 'passkey-removed') return <strong>{`Removed the passkey "${s.detail ?? ''}"`}</strong>;
  if (s.kind === 'connector-linked') return <strong>{`Linked your ${s.connectorName ?? ''} account`}</strong>;
  if (s.kind === 'connector-unlinked') return <strong>{`Unlinked your ${s.connectorName ?? ''} account`}</strong>;
  const verb = s.kind === 'device-approved' ? 'Approved' : 'Denied';
  const app = s.client_id === null ? null : <AppIdentity name={s.appName ?? s.client_id} clientId={s.client_id} />;
  return (
    <>
      <strong>{`${verb} a device sign-in`}</strong>
      {app && <> to {app}</>}
    </>
  );
}

function Where(props: { signIn: RecentSignIn }) {
  const s = props.signIn;
  if (s.kind === 'password' || s.kind === 'passkey' || s.kind === 'federated' || CREDENTIAL_KINDS.has(s.kind))
    return <>From {s.client_ip}.</>;
  return (
    <>
      The device was at {s.device_ip ?? 'an address that was not recorded'}; you {s.kind === 'device-approved' ? 'approved' : 'denied'} it
      from {s.client_ip}.
    </>
  );
}

/**
 * The account page's "Recent sign-ins": sign-ins, the device sign-ins the user approved or denied with both
 * addresses (draft-ietf-oauth-cross-device-security: a person who approved a phished code can see it here, and
 * end its access under Applications), and every passkey or linked account added or removed, from where.
 */
export function RecentSignIns(props: { signIns: readonly RecentSignIn[]; now: number }) {
  const days = SIGNIN_EVENTS_KEPT_MS / (24 * 3600 * 1000);
  return (
    <div class="card">
      <h2 id="recent-signins">Recent sign-ins</h2>
      <p class="muted">
        {`Your sign-ins, the device sign-ins you approved or denied, and the passkeys and accounts added or removed, newest first: the last ${days} days, at most ${SIGNIN_EVENTS_PER_USER}. If one was not you, change your password, remove what you did not add, and remove the application's access below.`}
      </p>
      {props.signIns.length === 0 ? (
        <p class="muted">No sign-ins recorded.</p>
      ) : (
        <ul class="signins">
          {props.signIns.map((s) => (
            <li>
              <What signIn={s} />
              <p class="muted">
                {`${utcMinute(s.at)} (${timeAgo(props.now - s.at)}). `}
                <Where signIn={s} />
              </p>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
