import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebContext } from './context.js';
import type { Application } from '../store/store.js';
import { sendBundle } from './bundles.js';
import { sendPage, viewerOf } from './render.js';
import { requireSignIn, type CurrentSession } from './session.js';
import { Layout, type Viewer } from './views.js';

/** The callback URL an application must register to be used from the playground. */
export function playgroundCallback(issuer: string): string {
  return `${issuer}/developer/playground`;
}

/** Why an application cannot be used in the playground; undefined when it can. */
export function unusableReason(app: Application, callback: string): string | undefined {
  if (app.kind !== 'public') return 'the playground acts as a public client; this application is confidential';
  if (!app.grantTypes.includes('authorization_code')) return 'the authorization code grant is not allowed';
  if (!app.callbackUrls.includes(callback)) return `register the callback URL ${callback}`;
  return undefined;
}

function PlaygroundPage(props: { viewer: Viewer; issuer: string; callback: string; apps: Application[] }) {
  const usable = props.apps.filter((a) => !unusableReason(a, props.callback));
  const other = props.apps.filter((a) => unusableReason(a, props.callback));
  return (
    <Layout title="OAuth playground" viewer={props.viewer} wide>
      <div id="playground" data-issuer={props.issuer} data-redirect-uri={props.callback}>
        <div class="card">
          <p class="muted">{'Developer > OAuth playground'}</p>
          <h1>OAuth playground</h1>
          <p>
            Run the authorization code flow with PKCE as one of your public applications and watch every step. Redirect URI:{' '}
            <code>{props.callback}</code>
          </p>
          {usable.length > 0 ? (
            <form id="request-form">
              <label for="client_id">Application</label>
              <select id="client_id" name="client_id">
                {usable.map((a) => (
                  <option value={a.clientId}>{`${a.name} (${a.clientId})`}</option>
                ))}
              </select>
              <fieldset id="scopes" />
              <fieldset aria-describedby="dpop-help">
                <legend>Proof of possession</legend>
                <label>
                  <input type="checkbox" id="dpop" name="dpop" value="on" /> DPoP: bind the tokens to a key pair made in this browser (RFC
                  9449)
                </label>
              </fieldset>
              <p id="dpop-help" class="muted">
                The private key is made non-extractable by WebCrypto. The page shows each proof, the access token’s <code>cnf</code> beside
                the key’s thumbprint, and the server refusing a replayed proof and the token sent as Bearer.
              </p>
              <fieldset aria-describedby="par-help">
                <legend>Front channel</legend>
                <label>
                  <input type="checkbox" id="par" name="par" value="on" /> PAR: push the request to the server first (RFC 9126)
                </label>
              </fieldset>
              <p id="par-help" class="muted">
                The parameters go to <code>/oauth/par</code> in a POST (with the DPoP proof, if on); the browser is sent to the
                authorization endpoint with only <code>client_id</code> and the <code>request_uri</code> it answered.
              </p>
              <label for="extra">Extra parameters</label>
              <input id="extra" name="extra" type="text" class="mono" placeholder="prompt=consent&max_age=300" />
              <div class="actions">
                <button type="submit">Start</button>
              </div>
            </form>
          ) : (
            <p class="alert" role="alert">
              None of your applications can be used yet. Register a public application with the callback URL <code>{props.callback}</code>.
            </p>
          )}
          {other.length > 0 && (
            <>
              <h2>Not usable here</h2>
              <ul>
                {other.map((a) => (
                  <li>
                    <a href={`/dashboard/apps/${encodeURIComponent(a.clientId)}`}>{a.name}</a>: {unusableReason(a, props.callback)}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
        <div id="steps" aria-live="polite" />
      </div>
      <script type="module" src="/assets/playground.js" />
    </Layout>
  );
}

/** GET /developer/playground, its JSON app endpoint, and the browser module. */
export async function playgroundRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const { store, sessions, config } = ctx;
  const callback = playgroundCallback(config.issuer);

  const signedIn = (req: FastifyRequest, reply: FastifyReply) => requireSignIn(ctx, req, reply, { kind: 'page', page: 'playground' });
  const appsOf = (c: CurrentSession) => store.applications.list(c.user.is_admin === 1 ? undefined : c.user.id);

  app.get('/assets/playground.js', async (_req, reply) => sendBundle(reply, 'playground'));

  app.get('/developer/playground', async (req, reply) => {
    const c = await signedIn(req, reply);
    if (!c) return reply;
    // The callback carries a code: keep it out of Referer and caches.
    return sendPage(
      reply,
      <PlaygroundPage viewer={viewerOf(reply, c)} issuer={config.issuer} callback={callback} apps={await appsOf(c)} />,
    );
  });

  app.get<{ Params: { clientId: string } }>('/developer/playground/apps/:clientId', async (req, reply) => {
    const current = await sessions.current(req);
    if (!current) return reply.code(401).send({ error: 'sign in first' });
    const a = await store.applications.get(req.params.clientId);
    if (!a || (current.user.is_admin !== 1 && a.ownerId !== current.user.id)) return reply.code(404).send({ error: 'not found' });
    return reply.header('cache-control', 'no-store').send({
      client_id: a.clientId,
      name: a.name,
      kind: a.kind,
      callback_urls: a.callbackUrls,
      scopes: a.scopes,
      usable: !unusableReason(a, callback),
      require_dpop: a.requireDpop,
      require_par: a.requirePushedAuthorizationRequests || config.requirePushedAuthorizationRequests,
    });
  });
}
