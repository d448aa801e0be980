import type { ComponentChildren } from 'preact';
import type { ResourceCatalog } from '../store/store.js';
import { DEVICE_CODE_GRANT_TYPE } from '@authcli/protocol';
import { SUPPORTED_SCOPES } from '../oauth/scopes.js';
import { GRANT_TYPES, INTROSPECTION_SCOPES, type Application } from '../store/store.js';
import { Alert, Layout, Notice, type Viewer } from './views.js';

const GRANT_LABELS: Record<string, string> = {
  authorization_code: 'Authorization code (browser sign-in, PKCE)',
  refresh_token: 'Refresh token',
  [DEVICE_CODE_GRANT_TYPE]: 'Device code (sign-in on a second screen)',
  client_credentials: 'Client credentials (the application’s own token, no person; confidential only)',
  'urn:ietf:params:oauth:grant-type:token-exchange': 'Token exchange (CI jobs, under the trust policies of `workloads add`)',
};

export function DashboardPage(props: { viewer: Viewer; apps: Application[]; all: boolean; notice?: string | undefined }) {
  return (
    <Layout title="Applications" viewer={props.viewer} wide>
      <div class="card">
        <h1>Applications</h1>
        <Notice text={props.notice} />
        <p class="muted">{props.all ? 'As an administrator you see every application.' : 'The applications you registered.'}</p>
        {props.apps.length === 0 ? (
          <p>No applications yet.</p>
        ) : (
          <div class="table-wrap">
            <table class="records">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Client ID</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Grants</th>
                </tr>
              </thead>
              <tbody>
                {props.apps.map((a) => (
                  <tr>
                    <td>
                      <a href={`/dashboard/apps/${encodeURIComponent(a.clientId)}`}>{a.name}</a>
                    </td>
                    <td data-label="Client ID">
                      <code>{a.clientId}</code>
                    </td>
                    <td data-label="Kind">
                      {a.kind}
                      {a.registrationTokenHash !== null && <span class="muted"> (registered by the client, RFC 7591)</span>}
                    </td>
                    <td class="muted" data-label="Grants">
                      {a.grantTypes.map((g) => (g.startsWith('urn:') ? 'device_code' : g)).join(', ')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="actions">
          <a class="button" href="/dashboard/apps/new">
            Register an application
          </a>
        </div>
      </div>
    </Layout>
  );
}

export interface AppFormValues {
  name: string;
  kind: 'public' | 'confidential';
  callbackUrls: string;
  postLogoutRedirectUris: string;
  scopes: readonly string[];
  grantTypes: readonly string[];
  idTokenAlg: string;
  introspection: string;
  requireDpop: boolean;
  requirePushedAuthorizationRequests: boolean;
  /** Every sign-in for it must be with a passkey (`acr` phr). */
  requirePasskey: boolean;
  /** Where logouts are posted (OpenID Connect Back-Channel Logout 1.0); empty: none. */
  backchannelLogoutUri: string;
  backchannelLogoutSessionRequired: boolean;
  /** private_key_jwt (RFC 7523): where its keys are, or the JWK Set itself; both empty for a client secret. */
  jwksUri: string;
  jwks: string;
}

const INTROSPECTION_LABELS: Record<string, string> = {
  own: 'Its own tokens only',
  owner: 'Tokens of every application of its owner (a resource server beside its apps)',
  all: 'Every application’s tokens (set by an administrator)',
};

export function AppFormPage(props: {
  viewer: Viewer;
  /** Whether the viewer is an administrator: only one may let an application introspect every token. */
  admin: boolean;
  values: AppFormValues;
  error?: string | undefined;
  app?: Application | undefined;
  notice?: string | undefined;
  /** The team's APIs (resources), whose scopes an application may be allowed too. */
  apis?: ResourceCatalog | undefined;
  /** An existing application's history (its audit rows, newest first), shown below the form. */
  history?: ComponentChildren;
}) {
  const v = props.values;
  const editing = props.app !== undefined;
  const action = editing ? `/dashboard/apps/${encodeURIComponent(props.app!.clientId)}` : '/dashboard/apps';
  return (
    <Layout
      title={editing ? props.app!.name : 'Register an application'}
      viewer={props.viewer}
      wide
      scripts={editing ? ['/assets/copy.js'] : undefined}
    >
      <div class="card">
        <h1>{editing ? props.app!.name : 'Register an application'}</h1>
        {editing && (
          <p>
            Client ID <code id="client_id">{props.app!.clientId}</code> · {props.app!.kind}{' '}
            <CopyButton target="client_id" label="Copy client ID" />
          </p>
        )}
        <Notice text={props.notice} />
        <Alert message={props.error} />
        <form method="post" action={action}>
          <input type="hidden" name="_csrf" value={props.viewer.csrf} />
          <label for="name">Name</label>
          <input id="name" name="name" type="text" required maxLength={100} value={v.name} />
          {!editing && (
            <fieldset>
              <legend>Kind</legend>
              <label>
                <input type="radio" name="kind" value="public" checked={v.kind === 'public'} /> Public (native apps, CLIs, browser apps: no
                secret)
              </label>
              <label>
                <input type="radio" name="kind" value="confidential" checked={v.kind === 'confidential'} /> Confidential (servers that keep
                a secret)
              </label>
            </fieldset>
          )}
          <label for="callback_urls">Callback URLs</label>
          <textarea id="callback_urls" name="callback_urls" rows={4} class="mono" aria-describedby="callback-help">
            {v.callbackUrls}
          </textarea>
          <p id="callback-help" class="muted">
            One per line: absolute, no fragment; https, loopback http (http://127.0.0.1/… matches any port), or a native app's scheme in
            reverse-domain form (com.example.app:/callback).
          </p>
          <label for="post_logout_redirect_uris">Post-logout redirect URIs</label>
          <textarea
            id="post_logout_redirect_uris"
            name="post_logout_redirect_uris"
            rows={2}
            class="mono"
            aria-describedby="post-logout-help"
          >
            {v.postLogoutRedirectUris}
          </textarea>
          <p id="post-logout-help" class="muted">
            Optional, one per line, the same rules: where signing out from the application (RP-initiated logout) may return to, matched
            exactly.
          </p>
          <label for="backchannel_logout_uri">Back-channel logout URI</label>
          <input
            id="backchannel_logout_uri"
            name="backchannel_logout_uri"
            type="url"
            class="mono"
            maxLength={2048}
            value={v.backchannelLogoutUri}
            aria-describedby="backchannel-help"
          />
          <label>
            <input type="checkbox" name="backchannel_logout_session_required" value="1" checked={v.backchannelLogoutSessionRequired} />{' '}
            Require the session ID (<code>sid</code>) in every logout token
          </label>
          <p id="backchannel-help" class="muted">
            Optional: https (or loopback http). When someone signed in to the application signs out here, the server posts a logout token to
            it (OpenID Connect Back-Channel Logout), so it can end its own session.
          </p>
          <fieldset>
            <legend>Allowed scopes</legend>
            {SUPPORTED_SCOPES.map((s) => (
              <label>
                <input type="checkbox" name="scope" value={s} checked={v.scopes.includes(s)} /> <code>{s}</code>
              </label>
            ))}
          </fieldset>
          {(props.apis?.list ?? []).map((api) => (
            <fieldset>
              <legend>
                Scopes of {api.name} <span class="muted">({api.id})</span>
              </legend>
              {api.scopes.map((s) => (
                <label>
                  <input type="checkbox" name="scope" value={s.name} checked={v.scopes.includes(s.name)} /> <code>{s.name}</code>{' '}
                  <span class="muted">{s.description}</span>
                </label>
              ))}
            </fieldset>
          ))}
          <fieldset>
            <legend>Grants allowed</legend>
            {GRANT_TYPES.map((g) => (
              <label>
                <input type="checkbox" name="grant" value={g} checked={v.grantTypes.includes(g)} /> {GRANT_LABELS[g]}
              </label>
            ))}
          </fieldset>
          <label for="id_token_alg">ID token signature</label>
          <select id="id_token_alg" name="id_token_alg">
            <option value="RS256" selected={v.idTokenAlg === 'RS256'}>
              RS256 (accepted by every OpenID Connect client)
            </option>
            <option value="ES256" selected={v.idTokenAlg === 'ES256'}>
              ES256
            </option>
          </select>
          <fieldset aria-describedby="security-help">
            <legend>Token security</legend>
            <label>
              <input type="checkbox" name="require_dpop" value="1" checked={v.requireDpop} /> Require DPoP: every token is bound to a key
              the application holds (RFC 9449)
            </label>
            <label>
              <input type="checkbox" name="require_par" value="1" checked={v.requirePushedAuthorizationRequests} /> Require pushed
              authorization requests (RFC 9126)
            </label>
            <label>
              <input type="checkbox" name="require_acr" value="phr" checked={v.requirePasskey} /> Require a sign-in with a passkey (acr
              phr): a password sign-in is asked for its passkey first, on the code flow and for device approvals
            </label>
          </fieldset>
          <p id="security-help" class="muted">
            A stolen DPoP-bound token is useless without the application’s private key; a pushed request keeps the authorization parameters
            off the browser’s address bar.
          </p>
          <fieldset aria-describedby="introspection-help">
            <legend>Token introspection</legend>
            {INTROSPECTION_SCOPES.filter((i) => i !== 'all' || props.admin || v.introspection === 'all').map((i) => (
              <label>
                <input type="radio" name="introspection" value={i} checked={v.introspection === i} disabled={i === 'all' && !props.admin} />{' '}
                {INTROSPECTION_LABELS[i]}
              </label>
            ))}
          </fieldset>
          <p id="introspection-help" class="muted">
            Which tokens a confidential application may look up at the introspection endpoint (RFC 7662). Others are answered as inactive.
          </p>
          {(!editing || props.app!.kind === 'confidential') && <ClientKeyFields values={v} />}
          <div class="actions">
            <button type="submit">{editing ? 'Save' : 'Register'}</button>
            <a class="button secondary" href="/dashboard">
              Cancel
            </a>
          </div>
        </form>
        {editing && (
          <div class="danger-zone">
            {props.app!.kind === 'confidential' && !props.app!.clientKeys && (
              <>
                <h2>Client secret</h2>
                <p class="muted">The secret is shown only once. Rotating it ends the old one at once.</p>
                <a class="button secondary" href={`${action}/rotate-secret`}>
                  Rotate secret…
                </a>
              </>
            )}
            <h2>Delete</h2>
            <p class="muted">Deleting the application ends every sign-in made through it.</p>
            <a class="button danger" href={`${action}/delete`}>
              Delete application…
            </a>
          </div>
        )}
      </div>
      {props.history}
    </Layout>
  );
}

/** A confidential application's keys (private_key_jwt): a jwks_uri or a pasted JWK Set instead of a client secret. */
function ClientKeyFields(props: { values: AppFormValues }) {
  return (
    <fieldset aria-describedby="keys-help">
      <legend>Client authentication by key (private_key_jwt)</legend>
      <label for="jwks_uri">JWK Set URL (jwks_uri)</label>
      <input id="jwks_uri" name="jwks_uri" type="url" class="mono" maxLength={2048} value={props.values.jwksUri} />
      <label for="jwks">or the JWK Set (public keys)</label>
      <textarea id="jwks" name="jwks" rows={4} class="mono">
        {props.values.jwks}
      </textarea>
      <p id="keys-help" class="muted">
        Confidential applications only. Fill in one to have the application sign a short-lived assertion for each request (RFC 7523) instead
        of presenting a secret: it then has no secret. The URL must be https on a public host. Leave both empty for a client secret;
        emptying them gives the application a new one.
      </p>
    </fieldset>
  );
}

/** A copy button, shown by /assets/copy.js (hidden without it: the CSP allows no inline script). */
function CopyButton(props: { target: string; label: string }) {
  return (
    <button type="button" class="secondary" data-copy={props.target} aria-label={props.label} hidden>
      Copy
    </button>
  );
}

/**
 * The confirmation of a destructive action (rotate, delete): a page of its
 * own with its own CSRF-protected form, since the CSP forbids the inline
 * script a `confirm()` dialog would need. The action's links lead here.
 */
export function ConfirmPage(props: { viewer: Viewer; app: Application; action: 'rotate' | 'delete' }) {
  const path = `/dashboard/apps/${encodeURIComponent(props.app.clientId)}`;
  const rotate = props.action === 'rotate';
  return (
    <Layout title={rotate ? 'Rotate secret' : 'Delete application'} viewer={props.viewer} wide>
      <div class="card">
        <h1>{rotate ? `Rotate the secret of ${props.app.name}?` : `Delete ${props.app.name}?`}</h1>
        <p>
          Client ID <code>{props.app.clientId}</code>
        </p>
        <p class="alert" role="alert">
          {rotate
            ? 'The current secret stops working at once: every server using it must be given the new one, which is shown only once.'
            : 'The application is removed and every sign-in made through it ends. This cannot be undone.'}
        </p>
        <form method="post" action={`${path}/${rotate ? 'rotate-secret' : 'delete'}`}>
          <input type="hidden" name="_csrf" value={props.viewer.csrf} />
          <div class="actions">
            <button type="submit" class="danger">
              {rotate ? 'Rotate secret' : 'Delete application'}
            </button>
            <a class="button secondary" href={path}>
              Cancel
            </a>
          </div>
        </form>
      </div>
    </Layout>
  );
}

export function SecretPage(props: { viewer: Viewer; app: Application; secret: string; rotated: boolean }) {
  return (
    <Layout title="Client secret" viewer={props.viewer} wide scripts={['/assets/copy.js']}>
      <div class="card">
        <h1>{props.rotated ? 'New client secret' : 'Application registered'}</h1>
        <p>
          <strong>{props.app.name}</strong> · client ID <code id="client_id">{props.app.clientId}</code>{' '}
          <CopyButton target="client_id" label="Copy client ID" />
        </p>
        <p class="alert success">Copy the client secret now: it is shown only this once and cannot be recovered.</p>
        <label for="client_secret">Client secret</label>
        <div class="copyable">
          <input id="client_secret" type="text" class="mono" readOnly value={props.secret} />
          <CopyButton target="client_secret" label="Copy secret" />
        </div>
        <div class="actions">
          <a class="button" href={`/dashboard/apps/${encodeURIComponent(props.app.clientId)}`}>
            Done
          </a>
        </div>
      </div>
    </Layout>
  );
}
