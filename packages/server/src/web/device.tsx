import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebContext } from './context.js';
import { clientAddress } from '../http/client-ip.js';
import { amrOf, meetsAcr } from '../oauth/acr.js';
import { decideUserCode, lookUpUserCode, type UserCodeProblem } from '../oauth/device-verification.js';
import { formatUserCode, normalizeUserCode } from '../oauth/user-code.js';
import { authenticationOf, type CurrentSession, requireSignIn } from './session.js';
import { deviceContinuation, type Continuation } from './continuation.js';
import { pageForm, pageQuery } from '../http/form.js';
import { sendPage, viewerOf } from './render.js';
import { retryAfterText } from './retry-after.js';
import { DeviceConfirmPage, DeviceEntryPage } from './device-views.js';
import { MessagePage } from './views.js';

/** Why a code cannot be confirmed now, in words for the person at the browser. */
const PROBLEM_TEXT: Record<UserCodeProblem | 'gone' | 'stale', string> = {
  unknown: 'That code is not valid. Check the code on your device and try again.',
  expired: 'That code has expired. Start the sign-in on your device again to get a new code.',
  used: 'That code has already been used. Start the sign-in on your device again if you need to.',
  gone: 'That code can no longer be used.',
  stale: 'This sign-in was started too long ago to approve. If you started it, start it again on your device to get a new code.',
};

/**
 * The second screen (RFC 8628 §3.3): the user signs in here (the device
 * never sees a password), enters or confirms the user code, sees which
 * application asks for which scopes, from which address and how long ago
 * (RFC 8628 §5.4), and explicitly approves or denies. Approving needs the
 * person to confirm that their device shows the code, also when the code
 * came prefilled from verification_uri_complete, and only within the
 * approval window (AUTHCLI_DEVICE_APPROVAL_WINDOW); both are checked here
 * at the decision, not only on the page.
 */
export async function devicePageRoutes(app: FastifyInstance, ctx: WebContext): Promise<void> {
  const tooMany = (reply: FastifyReply, retryAfterSeconds: number) => {
    reply.header('retry-after', String(retryAfterSeconds));
    return `Too many wrong codes. Try again in ${retryAfterText(retryAfterSeconds)}.`;
  };

  // After a sign-in the device page comes back with the code it was given, if that was a well-formed code.
  const requireSession = (req: FastifyRequest, reply: FastifyReply, resume: Continuation) => requireSignIn(ctx, req, reply, resume);

  app.get('/device', async (req, reply) => {
    const { user_code: typed, confirm } = pageQuery(req);
    const normalized = normalizeUserCode(typed ?? '');
    const prefill = normalized ? formatUserCode(normalized) : '';
    const current = await requireSession(req, reply, deviceContinuation(typed));
    if (!current) return reply;
    // Back from the step-up this code was sent to after Continue: on with it, as Continue does. Only with the
    // single-use id the sign-in made for this browser (web/continuation.ts): a link alone shows the code first.
    const confirmed = confirm === undefined ? undefined : await ctx.continuations.takeConfirmation(req, confirm);
    if (confirmed !== undefined && confirmed === normalized) return showCode(req, reply, current, prefill);
    return sendPage(reply, <DeviceEntryPage viewer={viewerOf(reply, current)} code={prefill} prefilled={prefill !== ''} />);
  });

  app.post('/device', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await requireSession(req, reply, deviceContinuation(pageForm(req).user_code));
    if (!current) return reply;
    return showCode(req, reply, current, pageForm(req).user_code ?? '');
  });

  /**
   * The code the person went on with: its confirmation page; a step-up first when its application requires more
   * than this sign-in (resuming here, at the confirmation page); the entry page again with why it cannot go on.
   */
  async function showCode(req: FastifyRequest, reply: FastifyReply, current: CurrentSession, code: string) {
    const typed = code.slice(0, 64);
    const viewer = viewerOf(reply, current);
    const browserAddress = clientAddress(req);
    const found = await lookUpUserCode(ctx, typed, browserAddress, current.user.id);
    if (found.kind === 'limited') {
      return sendPage(reply, <DeviceEntryPage viewer={viewer} code={typed} error={tooMany(reply, found.retryAfterSeconds)} />, 429);
    }
    if (found.kind === 'pending' && found.requireAcr && !meetsAcr(amrOf(current.session.amr), found.requireAcr, current.session.acr)) {
      // The application requires a passkey sign-in: step up first, which then resumes at this code's confirmation.
      const resume = {
        kind: 'device' as const,
        userCode: normalizeUserCode(found.userCode) ?? null,
        acr: found.requireAcr,
        confirm: true as const,
      };
      return reply.redirect(await ctx.continuations.signInUrl(req, reply, resume), 303);
    }
    if (found.kind === 'problem') {
      return sendPage(reply, <DeviceEntryPage viewer={viewer} code={typed} error={PROBLEM_TEXT[found.problem]} />, 400);
    }
    return sendPage(
      reply,
      <DeviceConfirmPage
        viewer={viewer}
        request={{ ...found, browserAddress, now: ctx.config.now() }}
        apis={await ctx.store.resources.catalog()}
      />,
    );
  }

  app.post('/device/decision', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await requireSession(req, reply, deviceContinuation(pageForm(req).user_code));
    if (!current) return reply;
    const form = pageForm(req);
    const viewer = viewerOf(reply, current);
    if (form.decision !== 'approve' && form.decision !== 'deny') {
      return sendPage(
        reply,
        <MessagePage viewer={viewer} endUser title="Bad request" kind="error" message="Choose Approve or Deny." />,
        400,
      );
    }
    // The box that says the device shows the code: the page requires it, and a form posted without it (or with
    // another code) approves nothing. Checked before the code is looked up, so it counts as no guess.
    const userCode = normalizeUserCode(form.user_code ?? '');
    if (form.decision === 'approve' && (!userCode || normalizeUserCode(form.code_confirmed ?? '') !== userCode)) {
      return sendPage(
        reply,
        <MessagePage
          viewer={viewer}
          endUser
          title="Confirm the code"
          kind="error"
          message="Nothing was approved. Go back, look at your device, and tick the box only if it shows the same code."
        />,
        400,
      );
    }
    const outcome = await decideUserCode(ctx, form.user_code ?? '', form.decision, clientAddress(req), authenticationOf(current));
    if (outcome.kind === 'step-up') {
      const resume = {
        kind: 'device' as const,
        userCode: normalizeUserCode(form.user_code ?? '') ?? null,
        acr: outcome.acr,
        confirm: true as const,
      };
      return reply.redirect(await ctx.continuations.signInUrl(req, reply, resume), 303);
    }
    if (outcome.kind === 'limited') {
      return sendPage(
        reply,
        <MessagePage viewer={viewer} endUser title="Too many attempts" kind="error" message={tooMany(reply, outcome.retryAfterSeconds)} />,
        429,
      );
    }
    if (outcome.kind === 'problem') {
      return sendPage(
        reply,
        <MessagePage viewer={viewer} endUser title="Cannot continue" kind="error" message={PROBLEM_TEXT[outcome.problem]} />,
        400,
      );
    }
    return outcome.decision === 'approve'
      ? sendPage(
          reply,
          <MessagePage
            viewer={viewer}
            endUser
            title="Device connected"
            kind="success"
            message="Your device is signed in. You can close this page and return to your device."
          />,
        )
      : sendPage(
          reply,
          <MessagePage
            viewer={viewer}
            endUser
            title="Request denied"
            kind="info"
            message="You denied the request. The device will not be signed in; you can close this page."
          />,
        );
  });
}
