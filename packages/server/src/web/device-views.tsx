import type { ResourceCatalog } from '../store/store.js';
import { timeAgo } from './time-ago.js';
import { Alert, AppIdentity, Layout, ScopeList, SelfRegisteredNote, type Viewer } from './views.js';

/**
 * The code entry page. `prefilled`: the code came in the link (RFC 8628 §3.3.1 verification_uri_complete),
 * which is also what a phisher sends, so the page says to go on only with the same code on a device in
 * front of you.
 */
export function DeviceEntryPage(props: { viewer: Viewer; code: string; prefilled?: boolean; error?: string | undefined }) {
  return (
    <Layout title="Connect a device" viewer={props.viewer} endUser>
      <div class="card">
        <h1>Connect a device</h1>
        {props.prefilled ? (
          <p>
            The link you opened filled in this code. Continue only if the same code is on the screen of a device in front of you, where you
            started signing in yourself.
          </p>
        ) : (
          <p>Enter the code shown on your device.</p>
        )}
        <Alert message={props.error} />
        <form method="post" action="/device">
          <input type="hidden" name="_csrf" value={props.viewer.csrf} />
          <label for="user_code">Code</label>
          <input
            id="user_code"
            name="user_code"
            type="text"
            class="mono"
            autocomplete="one-time-code"
            autocapitalize="characters"
            spellcheck={false}
            placeholder="XXXX-XXXX"
            maxLength={32}
            required
            autofocus
            value={props.code}
          />
          <div class="actions">
            <button type="submit">Continue</button>
          </div>
        </form>
      </div>
    </Layout>
  );
}

/** What the confirmation page shows of a pending device authorization (oauth/device-verification.ts). */
export interface DeviceRequest {
  appName: string;
  selfRegistered: boolean;
  clientId: string;
  scopes: readonly string[];
  userCode: string;
  /** The device's address (null: not recorded) and when it asked, with the server's now. */
  deviceAddress: string | null;
  startedAt: number;
  now: number;
  /** Within the approval window: Approve is offered; else only Deny, and the page asks to start again. */
  approvable: boolean;
  /** The address of the browser showing the page, to compare with the device's. */
  browserAddress: string;
}

/** Where and when the device asked (RFC 8628 §5.4; draft-ietf-oauth-cross-device-security: contextual information). */
function Origin(props: { request: DeviceRequest }) {
  const r = props.request;
  const ago = timeAgo(r.now - r.startedAt);
  return (
    <p>
      {r.deviceAddress === null ? (
        <>The device asked for this code {ago}, from an address that was not recorded.</>
      ) : (
        <>
          The device asked for this code <strong>{ago}</strong>, from the address <strong class="mono">{r.deviceAddress}</strong>
          {r.deviceAddress === r.browserAddress ? ', the same address as this browser.' : `. This browser is at ${r.browserAddress}.`}
        </>
      )}
    </p>
  );
}

/**
 * The confirmation page (RFC 8628 §3.3): the application and its scopes, where and when the request came from,
 * and an explicit decision. Approve needs the person to confirm that the code is on their device (a required
 * box, checked again by the server), also when the code came prefilled: someone who was sent the link has no
 * device showing it. Past the approval window only Deny is offered.
 */
export function DeviceConfirmPage(props: { viewer: Viewer; request: DeviceRequest; apis?: ResourceCatalog | undefined }) {
  const r = props.request;
  return (
    <Layout title="Confirm device" viewer={props.viewer} endUser>
      <div class="card">
        <h1>
          Sign in to <span>{r.appName}</span> on your device?
        </h1>
        <p>
          <AppIdentity name={r.appName} clientId={r.clientId} /> asks for access to your account:
        </p>
        <SelfRegisteredNote selfRegistered={r.selfRegistered} />
        <ScopeList scopes={r.scopes} apis={props.apis} />
        <Origin request={r} />
        <p>
          <strong>Approve only a sign-in you started yourself, a moment ago, on a device in front of you.</strong> If someone sent you this
          code or link, or asked you to enter it, choose Deny: they are trying to get into your account.
        </p>
        {r.approvable ? (
          <form method="post" action="/device/decision">
            <input type="hidden" name="_csrf" value={props.viewer.csrf} />
            <input type="hidden" name="user_code" value={r.userCode} />
            <p>Look at your device now. It must show this code:</p>
            <p class="usercode">{r.userCode}</p>
            <label class="confirm">
              <input type="checkbox" name="code_confirmed" value={r.userCode} required /> My device shows {r.userCode}, and I started this
              sign-in
            </label>
            <div class="actions">
              <button type="submit" name="decision" value="approve">
                Approve
              </button>
              <button type="submit" name="decision" value="deny" class="secondary" formnovalidate>
                Deny
              </button>
            </div>
          </form>
        ) : (
          <form method="post" action="/device/decision">
            <input type="hidden" name="_csrf" value={props.viewer.csrf} />
            <input type="hidden" name="user_code" value={r.userCode} />
            <Alert message="This sign-in was started too long ago to approve. If you started it, start it again on your device: it will show a new code." />
            <div class="actions">
              <button type="submit" name="decision" value="deny" class="secondary">
                Deny
              </button>
            </div>
          </form>
        )}
      </div>
    </Layout>
  );
}
