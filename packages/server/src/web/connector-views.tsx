import { Alert, Layout } from './views.js';

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
          <label for="username">Username</label>
          <input
            id="username"
            name="username"
            type="text"
            autocomplete="username"
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
        </form>
        <p class="muted">
          <a href={`/signin${props.continueId ? `?continue=${props.continueId}` : ''}`}>Other ways to sign in</a>
        </p>
      </div>
    </Layout>
  );
}
