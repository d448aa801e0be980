import { headerValues } from '../http/header-values.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isParsedForm } from '../http/form.js';
import type { OAuthContext } from '../oauth/context.js';
import { DPOP_NONCE_HEADER, dpopAlgs } from '../oauth/dpop.js';
import { dpopChallenge } from '../oauth/errors.js';
import { userinfo } from '../oauth/userinfo.js';

/**
 * GET/POST /oauth/userinfo (OIDC Core §5.3): the token in the Authorization header, or in a POST form body
 * (RFC 6750 §2.2), or a DPoP-bound one with its proof (RFC 9449 §7.1); errors per RFC 6750 §3 and RFC 9449
 * §7.1, every challenge naming both schemes. A DPoP answer carries the current server nonce (§9).
 */
export async function userinfoRoutes(app: FastifyInstance, ctx: OAuthContext): Promise<void> {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const form = isParsedForm(req.body) ? req.body : undefined;
    const claims = await userinfo(ctx, {
      authorization: req.headers.authorization,
      bodyToken: form?.params.access_token,
      bodyTokenRepeated: form?.repeated.has('access_token') ?? false,
      tokenInQuery: typeof (req.query as Record<string, unknown>).access_token === 'string',
      dpop: headerValues(req, 'dpop'),
      method: req.method,
    });
    if (claims === undefined) {
      // RFC 6750 §3.1: a request without any authentication gets neither an error code nor other error
      // information: the challenge alone, and no body.
      return reply.code(401).header('www-authenticate', 'Bearer realm="authcli"').header('cache-control', 'no-store').send();
    }
    if (ctx.config.dpopNonce && /^DPoP /i.test(req.headers.authorization ?? '')) reply.header(DPOP_NONCE_HEADER, ctx.dpopNonces.current());
    return reply.header('cache-control', 'no-store').send(claims);
  };
  // RFC 6750 §3: every failure carries the Bearer challenge. invalid_token and insufficient_scope bring their
  // own; a malformed request (including a body this route cannot read) gets error="invalid_request" here.
  // RFC 9449 §7.1: and the DPoP challenge after it, unless the error is in the DPoP challenge already.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (reply.statusCode === 400 && !reply.hasHeader('www-authenticate')) {
      reply.header('www-authenticate', 'Bearer realm="authcli", error="invalid_request"');
    }
    const challenge = reply.getHeader('www-authenticate');
    if (typeof challenge === 'string' && !challenge.startsWith('DPoP ')) {
      reply.header('www-authenticate', `${challenge}, ${dpopChallenge(dpopAlgs(ctx.config.fapi2))}`);
    }
    return payload;
  });
  app.get('/oauth/userinfo', handler);
  app.post('/oauth/userinfo', handler);
}
