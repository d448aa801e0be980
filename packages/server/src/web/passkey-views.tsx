import { PASSKEY_NAME_MAX } from '../config/defaults.js';
import type { Passkey } from '../store/store.js';
import { Layout, type Viewer } from './views.js';

/** A moment in UTC, to the minute, saying so: the server does not know the reader's time zone. */
const minute = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} (UTC)`;

/** The script that runs the passkey ceremonies of the sign-in and account pages. */
export const PASSKEY_SCRIPT = '/assets/passkey.js';

/**
 * The account page's passkeys: each with when it was added and last used, and a Remove button; then a name
 * and "Add a passkey" (shown by the script: without it, and without WebAuthn in the browser, it says so).
 * On a server whose address cannot have passkeys, why.
 */
export function PasskeysCard(props: { viewer: Viewer; passkeys: readonly Passkey[]; unavailable?: string | undefined }) {
  return (
    <div class="card">
      <h2 id="passkeys">Passkeys</h2>
      <p class="muted">
        A passkey signs you in with your device's screen lock (a fingerprint, your face or a PIN) instead of a password. It works only on
        this site, so a page that imitates it cannot use it.
      </p>
      {props.passkeys.length === 0 ? (
        <p class="muted">You have no passkey yet.</p>
      ) : (
        <ul class="applications">
          {props.passkeys.map((p) => (
            <li>
              <strong>{p.name}</strong>
              {p.backed_up === 1 && <span class="muted"> · synced</span>}
              <p class="muted">
                {`Added ${minute(p.created_at)}${p.added_from === null ? '' : ` from ${p.added_from}`}; ${p.last_used_at === null ? 'never used to sign in' : `last used ${minute(p.last_used_at)}`}.`}
              </p>
              <form method="post" action="/account/passkeys/remove">
                <input type="hidden" name="_csrf" value={props.viewer.csrf} />
                <input type="hidden" name="id" value={p.id} />
                <button type="submit" class="danger" aria-label={`Remove the passkey ${p.name}`}>
                  Remove
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
      {props.unavailable ? (
        <p class="alert" role="note">
          {props.unavailable}
        </p>
      ) : (
        <form id="passkey-add" data-csrf={props.viewer.csrf}>
          <label for="passkey-name">Name for a new passkey</label>
          <input id="passkey-name" name="name" type="text" maxLength={PASSKEY_NAME_MAX} placeholder="e.g. Work laptop" autocomplete="off" />
          <p class="muted">Left empty, it is named after this browser, its system and the date.</p>
          <p class="alert" id="passkey-add-error" role="alert" hidden />
          <p class="muted" id="passkey-add-unsupported">
            Adding a passkey needs JavaScript and a browser that supports passkeys.
          </p>
          <div class="actions">
            <button type="submit" id="passkey-add-button" hidden>
              Add a passkey
            </button>
          </div>
        </form>
      )}
    </div>
  );
}

/**
 * A signed-in person whose sign-in is below what waits (`acr` phr: a password, where a passkey is required or
 * asked for): sign in again with a passkey, and the request resumes (`continueId`). Without a passkey, the way
 * to add one; on a server that cannot have passkeys, why.
 */
export function StepUpPage(props: {
  viewer: Viewer;
  continueId: string | undefined;
  appName: string | undefined;
  forDevice: boolean;
  /** Sent by the account page: adding or removing a passkey or a linked account, on an account that has a passkey. */
  forAccount?: boolean | undefined;
  unavailable: string | undefined;
}) {
  const what = props.forAccount
    ? 'Changing how you sign in'
    : props.forDevice
      ? 'Approving this device sign-in'
      : (props.appName ?? 'This application');
  return (
    <Layout title="Sign in with a passkey" viewer={props.viewer} endUser scripts={props.unavailable ? undefined : [PASSKEY_SCRIPT]}>
      <div class="card">
        <h1>Sign in with a passkey</h1>
        <p>
          <strong>{what}</strong>
          {` ${props.forDevice || props.forAccount ? 'needs' : 'asks for'} a sign-in with a passkey. You are signed in as `}
          <strong>{props.viewer.username}</strong> {props.forAccount ? 'without one.' : 'with your password.'}
        </p>
        {props.forAccount && (
          <p class="muted">
            Your account has a passkey, so a password alone cannot add another or remove one. Lost every passkey? The server's operator can
            remove them (<code>authcli-server users reset-passkeys</code>).
          </p>
        )}
        {props.unavailable ? (
          <p class="alert" role="note">
            {props.unavailable}
          </p>
        ) : (
          <div id="passkey-signin" data-csrf={props.viewer.csrf} data-continue={props.continueId ?? ''} hidden>
            <button type="button" id="passkey-signin-button">
              Sign in with a passkey
            </button>
            <p class="alert" id="passkey-signin-error" role="alert" hidden />
          </div>
        )}
        {!props.forAccount && (
          <p class="muted">
            No passkey yet? <a href="/account#passkeys">Add one on your account page</a>, then start again.
          </p>
        )}
      </div>
    </Layout>
  );
}
