import { Alert, CredentialFields, Layout } from './views.js';

/** An LDAP connector's sign-in form: the directory's username and password, checked by the directory. */
export function LdapSignInPage(props: {
  csrf: string;
  connector: { id: string; name: string };
  continueId?: string | undefined;
  username?: string | undefined;
  error?: string | undefined;
}) {
  return (
    <Layout title={`Sign in with ${props.connector.name}`}>
      <div class="card">
        <h1>Sign in</h1>
        <p class="muted">
          with your <strong>{props.connector.name}</strong> account
        </p>
        <Alert message={props.error} />
        <form method="post" action={`/connectors/${props.connector.id}/signin`}>
          <input type="hidden" name="_csrf" value={props.csrf} />
          {props.continueId && <input type="hidden" name="continue" value={props.continueId} />}
          <CredentialFields username={props.username} />
        </form>
        <p class="muted">
          <a href={`/signin${props.continueId ? `?continue=${props.continueId}` : ''}`}>Other ways to sign in</a>
        </p>
      </div>
    </Layout>
  );
}

/** The account page's sign-in services: the ones linked to this account, and a way to link each other one. */
export function ConnectorsCard(props: {
  csrf: string;
  connectors: readonly { id: string; name: string; type: string; linked: boolean }[];
}) {
  if (props.connectors.length === 0) return null;
  return (
    <div class="card">
      <h2 id="connectors">Sign-in services</h2>
      <p class="muted">
        Accounts you have elsewhere that sign you in to this one. Linking or unlinking one asks for a recent sign-in here first.
      </p>
      <ul class="applications">
        {props.connectors.map((c) => (
          <li>
            <strong>{c.name}</strong>
            {c.linked ? (
              <form method="post" action={`/connectors/${c.id}/unlink`}>
                <input type="hidden" name="_csrf" value={props.csrf} />
                <p class="muted">Linked: “Continue with {c.name}” signs you in here.</p>
                <button type="submit" class="secondary">{`Unlink ${c.name}`}</button>
              </form>
            ) : (
              <form method="post" action={`/connectors/${c.id}/link`}>
                <input type="hidden" name="_csrf" value={props.csrf} />
                {c.type === 'ldap' && (
                  <>
                    <label for={`link-${c.id}-username`}>{`${c.name} username`}</label>
                    <input id={`link-${c.id}-username`} name="username" type="text" autocomplete="off" required />
                    <label for={`link-${c.id}-password`}>{`${c.name} password`}</label>
                    <input id={`link-${c.id}-password`} name="password" type="password" autocomplete="off" required />
                  </>
                )}
                <button type="submit" class="secondary">{`Link ${c.name}`}</button>
              </form>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A browser signed in already that follows "Continue with NAME": it may sign in as someone else, once confirmed. */
export function SwitchAccountPage(props: {
  csrf: string;
  connector: { id: string; name: string };
  username: string;
  continueId?: string | undefined;
}) {
  return (
    <Layout title={`Continue with ${props.connector.name}`}>
      <div class="card">
        <h1>{`Continue with ${props.connector.name}?`}</h1>
        <p>
          You are signed in here as <strong>{props.username}</strong>. Continuing signs this browser in with your{' '}
          <strong>{props.connector.name}</strong> account instead, which may be another account here.
        </p>
        <form method="post" action={`/connectors/${props.connector.id}/start`}>
          <input type="hidden" name="_csrf" value={props.csrf} />
          {props.continueId && <input type="hidden" name="continue" value={props.continueId} />}
          <div class="actions">
            <button type="submit">{`Continue with ${props.connector.name}`}</button>
            <a class="button secondary" href="/">
              Stay signed in as {props.username}
            </a>
          </div>
        </form>
      </div>
    </Layout>
  );
}
