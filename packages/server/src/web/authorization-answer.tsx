/**
 * Sends an authorization response to the browser in its response mode: a 303 redirect with the parameters in
 * the query (RFC 6749 §4.1.2), or for `response_mode=form_post` (OAuth 2.0 Form Post Response Mode §2) a page
 * whose form the browser posts to the redirect URI at once, so the code never sits in a URL.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { type AuthorizationResponse, callbackUrl } from '../oauth/authorization-response.js';
import { sendPage } from './render.js';
import { Layout } from './views.js';

/** The one script of the form_post page; the page's CSP allows it by its hash and nothing else. */
const SUBMIT_SCRIPT = "document.getElementById('authorization-response').submit();";
const SUBMIT_SCRIPT_HASH = `'sha256-${createHash('sha256').update(SUBMIT_SCRIPT).digest('base64')}'`;

/** Where the page's form may post (CSP `form-action`): the redirect URI's origin, or its private-use scheme. */
function formActionSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function FormPostPage(props: { response: AuthorizationResponse }) {
  return (
    <Layout title="Returning to the application">
      <h1>Returning to the application…</h1>
      <form id="authorization-response" method="post" action={props.response.redirectUri}>
        {Object.entries(props.response.params).map(([name, value]) => (
          <input type="hidden" name={name} value={value} />
        ))}
        <noscript>
          <p>Your browser runs no scripts here, so continue by hand:</p>
          <button type="submit">Continue</button>
        </noscript>
      </form>
      <script dangerouslySetInnerHTML={{ __html: SUBMIT_SCRIPT }} />
    </Layout>
  );
}

/** Answers the browser with the authorization response, in the request's response mode. */
export function sendAuthorizationResponse(reply: FastifyReply, response: AuthorizationResponse): FastifyReply {
  if (response.mode === 'query') return reply.redirect(callbackUrl(response.redirectUri, response.params), 303);
  reply.header(
    'content-security-policy',
    `default-src 'none'; script-src ${SUBMIT_SCRIPT_HASH}; style-src 'self'; img-src 'self' data:; form-action ${formActionSource(response.redirectUri)}; base-uri 'none'; frame-ancestors 'none'`,
  );
  return sendPage(reply, <FormPostPage response={response} />);
}
