import type { ComponentChildren } from 'preact';
import { FAVICON_PATH } from './assets.js';
import { PASSKEY_SCRIPT } from './passkey-views.js';
import type { ResourceCatalog } from '../store/store.js';
import { AppIdentity, ScopeList, SelfRegisteredNote } from './app-identity.js';

export { AppIdentity, ScopeList, SelfRegisteredNote };

export interface Viewer {
  username: string;
  csrf: string;
}

/**
 * Every page. The developer menu (Dashboard, Playground) shows only to a
 * signed-in user, and not on the pages an end user meets in an
 * authorization (consent, device): `endUser` keeps those to the account.
 */
export function Layout(props: {
  title: string;
  viewer?: Viewer | undefined;
  wide?: boolean;
  endUser?: boolean | undefined;
  scripts?: readonly string[];
  children: ComponentChildren;
}) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{`${props.title} · authcli`}</title>
        <link rel="stylesheet" href="/assets/style.css" />
        <link rel="icon" type="image/svg+xml" href={FAVICON_PATH} />
        {props.scripts?.map((src) => (
          <script type="module" src={src} />
        ))}
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/">
            <img src={FAVICON_PATH} alt="" />
            <span class="brand-name">authcli</span>
          </a>
          {props.viewer && (
            <nav aria-label="Account">
              {!props.endUser && (
                <>
                  <a href="/dashboard">Dashboard</a>
                  <a href="/developer/playground">Playground</a>
                </>
              )}
              <a href="/account">Account</a>
              <span class="muted who">
                Signed in as <strong>{props.viewer.username}</strong>
              </span>
              <form method="post" action="/signout">
                <input type="hidden" name="_csrf" value={props.viewer.csrf} />
                <button class="link" type="submit">
                  Sign out
                </button>
              </form>
            </nav>
          )}
        </header>
        <main class={props.wide ? 'wide' : undefined}>{props.children}</main>
        <footer>authcli authorization server</footer>
      </body>
    </html>
  );
}

/** An error the person must read, announced to screen readers; nothing when there is none. */
export function Alert(props: { message?: string | undefined }) {
  return props.message ? (
    <p class="alert" role="alert">
      {props.message}
    </p>
  ) : null;
}

/** A one-time "saved" notice from the flash, announced politely to screen readers. */
export function Notice(props: { text?: string | undefined }) {
  return props.text ? (
    // biome-ignore lint/a11y/useSemanticElements: a notice announced politely; <output> would mean the result of a calculation
    <p class="alert success" role="status">
      {props.text}
    </p>
  ) : null;
}

/** The sign-in form; `continueId` is the random id of the server-side continuation it resumes, never a URL. */
export function SignInPage(props: {
  csrf: string;
  continueId?: string | undefined;
  /** Filled in: what was typed before a refused sign-in, or the authorization request's `login_hint`. */
  username?: string | undefined;
  error?: string;
  appName?: string | undefined;
  /** The sign-in was asked for by the device page: the lead says so (a person should know why they sign in). */
  forDevice?: boolean | undefined;
  /** prompt=select_account with a live session: who is signed in, and the link that continues as them. */
  signedInAs?: { username: string; continueHref: string };
  /** Whether this server can offer passkeys (web/webauthn.ts relyingParty): a passkey button and autofill. */
  passkeys?: boolean | undefined;
  /** What waits requires a passkey (`acr` phr): the page says so, and the password is the way to add one first. */
  passkeyRequired?: boolean | undefined;
  /** The operator's connectors (upstream sign-in services): a "Continue with NAME" link each. */
  connectors?: readonly { id: string; name: string; form: boolean }[] | undefined;
  /** A signed-in person sent here by the account page to sign in again before changing how they sign in. */
  forAccount?: boolean | undefined;
}) {
  const waiting = props.forAccount
    ? 'Changing how you sign in'
    : props.forDevice
      ? 'This device sign-in'
      : (props.appName ?? 'The application');
  return (
    <Layout title="Sign in" scripts={props.passkeys ? [PASSKEY_SCRIPT] : undefined}>
      <div class="card">
        <h1>Sign in</h1>
        {props.appName && (
          <p class="muted">
            to continue to <strong>{props.appName}</strong>
          </p>
        )}
        {props.forDevice && <p class="muted">to approve a device sign-in</p>}
        {props.forAccount && !props.passkeyRequired && (
          <p>Changing how you sign in (a passkey, a linked account) needs a recent sign-in: sign in again to continue.</p>
        )}
        {props.passkeyRequired && (
          <p>
            <strong>{waiting}</strong>{' '}
            {props.forAccount ? 'needs a recent sign-in with one of your passkeys.' : 'asks for a sign-in with a passkey.'}
          </p>
        )}
        {props.signedInAs && (
          <p>
            You are signed in as <strong>{props.signedInAs.username}</strong>.{' '}
            <a href={props.signedInAs.continueHref}>{`Continue as ${props.signedInAs.username}`}</a>, or sign in with another account.
          </p>
        )}
        <Alert message={props.error} />
        {props.passkeys && (
          <div id="passkey-signin" data-csrf={props.csrf} data-continue={props.continueId ?? ''} hidden>
            <button type="button" id="passkey-signin-button">
              Sign in with a passkey
            </button>
            <p class="alert" id="passkey-signin-error" role="alert" hidden />
            <p class="muted or">
              {props.passkeyRequired
                ? 'No passkey yet? Sign in with your password, add one on your account page, then start again.'
                : 'or with your password'}
            </p>
          </div>
        )}
        {props.connectors && props.connectors.length > 0 && (
          <ul class="connectors">
            {props.connectors.map((c) => (
              <li>
                <a
                  class="button secondary"
                  href={`/connectors/${c.id}/${c.form ? 'signin' : 'start'}${props.continueId ? `?continue=${props.continueId}` : ''}`}
                >{`Continue with ${c.name}`}</a>
              </li>
            ))}
          </ul>
        )}
        <form method="post" action="/signin">
          <input type="hidden" name="_csrf" value={props.csrf} />
          {props.continueId && <input type="hidden" name="continue" value={props.continueId} />}
          <CredentialFields username={props.username} autofillPasskeys={props.passkeys} />
        </form>
      </div>
    </Layout>
  );
}

/**
 * The Username and Password fields and the Sign in button of a sign-in form (this server's, and an LDAP
 * connector's, whose field names DESIGN keeps the same): the password field is focused when the username is
 * filled in already.
 */
export function CredentialFields(props: { username?: string | undefined; autofillPasskeys?: boolean | undefined }) {
  return (
    <>
      <label for="username">Username</label>
      <input
        id="username"
        name="username"
        type="text"
        autocomplete={props.autofillPasskeys ? 'username webauthn' : 'username'}
        autocapitalize="none"
        spellcheck={false}
        required
        autofocus={!props.username}
        value={props.username ?? ''}
      />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required autofocus={!!props.username} />
      <div class="actions">
        <button type="submit">Sign in</button>
      </div>
    </>
  );
}

/** The explicit Approve / Deny choice of consent and device confirmation (CSRF-protected POST). */
function DecisionForm(props: { action: string; csrf: string; fields: Record<string, string> }) {
  return (
    <form method="post" action={props.action}>
      <input type="hidden" name="_csrf" value={props.csrf} />
      {Object.entries(props.fields).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <div class="actions">
        <button type="submit" name="decision" value="approve">
          Approve
        </button>
        <button type="submit" name="decision" value="deny" class="secondary">
          Deny
        </button>
      </div>
    </form>
  );
}

export function ConsentPage(props: {
  viewer: Viewer;
  appName: string;
  selfRegistered: boolean;
  clientId: string;
  scopes: readonly string[];
  apis?: ResourceCatalog | undefined;
  request: string;
  redirectHost: string;
}) {
  return (
    <Layout title="Authorize" viewer={props.viewer} endUser>
      <div class="card">
        <h1>
          Authorize <span>{props.appName}</span>?
        </h1>
        <p>
          <AppIdentity name={props.appName} clientId={props.clientId} /> asks for access to your account:
        </p>
        <SelfRegisteredNote selfRegistered={props.selfRegistered} />
        <ScopeList scopes={props.scopes} apis={props.apis} />
        <p class="muted">
          After you decide, you will be sent back to <code>{props.redirectHost}</code>.
        </p>
        <DecisionForm action="/consent" csrf={props.viewer.csrf} fields={{ request: props.request }} />
      </div>
    </Layout>
  );
}

export function MessagePage(props: {
  title: string;
  message: string;
  detail?: string | undefined;
  kind?: 'error' | 'success' | 'info';
  viewer?: Viewer | undefined;
  /** A page of an authorization an end user is in (device): no developer menu. */
  endUser?: boolean;
  children?: ComponentChildren;
}) {
  return (
    <Layout title={props.title} viewer={props.viewer} endUser={props.endUser}>
      <div class="card">
        <h1>{props.title}</h1>
        <p
          class={props.kind === 'error' ? 'alert' : props.kind === 'success' ? 'alert success' : undefined}
          role={props.kind === 'error' ? 'alert' : undefined}
        >
          {props.message}
        </p>
        {props.detail && <p class="muted">{props.detail}</p>}
        {props.children}
      </div>
    </Layout>
  );
}

/** The HTML 404 of every page address (the protocol endpoints keep their JSON answers). */
export function NotFoundPage(props: { viewer?: Viewer | undefined }) {
  return (
    <Layout title="Page not found" viewer={props.viewer}>
      <div class="card">
        <h1>Page not found</h1>
        <p>There is no page at this address. It may have been moved, or the link may be mistyped.</p>
        <div class="actions">
          <a class="button" href="/">
            Home
          </a>
          {props.viewer && (
            <a class="button secondary" href="/dashboard">
              Dashboard
            </a>
          )}
        </div>
      </div>
    </Layout>
  );
}

export function HomePage(props: { issuer: string; viewer?: Viewer | undefined }) {
  return (
    <Layout title="Home" viewer={props.viewer}>
      <div class="card">
        <h1>authcli authorization server</h1>
        <p>
          Issuer <code>{props.issuer}</code>
        </p>
        <p class="muted">
          OpenID Connect discovery: <a href="/.well-known/openid-configuration">/.well-known/openid-configuration</a>
        </p>
        {props.viewer ? (
          <p>
            You are signed in as <strong>{props.viewer.username}</strong>.
          </p>
        ) : (
          <div class="actions">
            <a class="button" href="/signin">
              Sign in
            </a>
          </div>
        )}
      </div>
    </Layout>
  );
}

export function SignOutPage(props: { viewer: Viewer }) {
  return (
    <Layout title="Sign out" viewer={props.viewer}>
      <div class="card">
        <h1>Sign out</h1>
        <p>
          Sign <strong>{props.viewer.username}</strong> out of this browser?
        </p>
        <form method="post" action="/signout">
          <input type="hidden" name="_csrf" value={props.viewer.csrf} />
          <div class="actions">
            <button type="submit">Sign out</button>
          </div>
        </form>
      </div>
    </Layout>
  );
}
