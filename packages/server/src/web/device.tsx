import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { clientAddress } from '../http/client-ip.js';
import { formatUserCode, normalizeUserCode } from '../oauth/user-code.js';
import type { DeviceAuthorization } from '../store/store.js';
import { requireSignIn, type CurrentSession } from './session.js';
import { deviceContinuation, type Continuation } from './continuation.js';
import { pageForm, pageQuery, sendPage } from './pages.js';
import { retryAfterText } from './retry-after.js';
import { DeviceConfirmPage, DeviceEntryPage, MessagePage, type Viewer } from './views.js';

/**
 * The second screen (RFC 8628 §3.3): the user signs in here (the device
 * never sees a password), enters or confirms the user code, sees which
 * application asks for which scopes, and explicitly approves or denies,
 * also when the code came prefilled from verification_uri_complete.
 */
export async function devicePageRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { store, config, limits } = ctx;
  const viewerOf = (reply: FastifyReply, current: CurrentSession): Viewer => ({ username: current.user.username, csrf: reply.generateCsrf() });
  const tooMany = (reply: FastifyReply, retryAfterSeconds: number) => {
    reply.header('retry-after', String(retryAfterSeconds));
    return `Too many wrong codes. Try again in ${retryAfterText(retryAfterSeconds)}.`;
  };

  // After a sign-in the device page comes back with the code it was given, if that was a well-formed code.
  const requireSession = (req: FastifyRequest, reply: FastifyReply, resume: Continuation) => requireSignIn(ctx, req, reply, resume);

  /** Why a code cannot be confirmed now, in words for the person at the browser; undefined if it can. */
  function problem(row: DeviceAuthorization | undefined, now: number): string | undefined {
    if (!row) return 'That code is not valid. Check the code on your device and try again.';
    if (row.expires_at <= now) return 'That code has expired. Start the sign-in on your device again to get a new code.';
    if (row.status !== 'pending') return 'That code has already been used. Start the sign-in on your device again if you need to.';
    return undefined;
  }

  app.get('/device', async (req, reply) => {
    const typed = pageQuery(req).user_code;
    const normalized = normalizeUserCode(typed ?? '');
    const prefill = normalized ? formatUserCode(normalized) : '';
    const current = await requireSession(req, reply, deviceContinuation(typed));
    if (!current) return reply;
    return sendPage(reply, <DeviceEntryPage viewer={viewerOf(reply, current)} code={prefill} />);
  });

  app.post('/device', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await requireSession(req, reply, deviceContinuation(pageForm(req).user_code));
    if (!current) return reply;
    const typed = (pageForm(req).user_code ?? '').slice(0, 64);
    const now = config.now();
    const viewer = viewerOf(reply, current);
    // Counted before the lookup (RFC 8628 §5.1); a code that can be confirmed gives its attempt back.
    const admission = await limits.userCodeGuess(clientAddress(req), current.user.id);
    if (!admission.admitted) {
      return sendPage(reply, <DeviceEntryPage viewer={viewer} code={typed} error={tooMany(reply, admission.retryAfterSeconds)} />, 429);
    }
    const code = normalizeUserCode(typed);
    const row = code ? await store.findDeviceByUserCode(code) : undefined;
    const why = problem(row, now);
    if (why) return sendPage(reply, <DeviceEntryPage viewer={viewer} code={typed} error={why} />, 400);
    await admission.giveBack();
    const application = await store.getApplication(row!.client_id);
    return sendPage(
      reply,
      <DeviceConfirmPage
        viewer={viewer}
        appName={application?.name ?? row!.client_id}
        clientId={row!.client_id}
        scopes={row!.scope.split(' ')}
        userCode={formatUserCode(row!.user_code)}
      />,
    );
  });

  app.post('/device/decision', { preHandler: app.csrfProtection }, async (req, reply) => {
    const current = await requireSession(req, reply, deviceContinuation(pageForm(req).user_code));
    if (!current) return reply;
    const form = pageForm(req);
    const code = normalizeUserCode(form.user_code ?? '');
    const now = config.now();
    const viewer = viewerOf(reply, current);
    if (form.decision !== 'approve' && form.decision !== 'deny') {
      return sendPage(reply, <MessagePage viewer={viewer} endUser title="Bad request" kind="error" message="Choose Approve or Deny." />, 400);
    }
    // The code posted here is a guess like one typed at /device, from the same budget: without it, a signed-in
    // account could guess codes here directly and approve a stranger's device.
    const admission = await limits.userCodeGuess(clientAddress(req), current.user.id);
    if (!admission.admitted) {
      return sendPage(reply, <MessagePage viewer={viewer} endUser title="Too many attempts" kind="error" message={tooMany(reply, admission.retryAfterSeconds)} />, 429);
    }
    const decided = code
      ? await store.decideDevice(
          code,
          form.decision === 'approve'
            ? { status: 'approved', userId: current.user.id, authTime: current.session.auth_time }
            : { status: 'denied', userId: current.user.id },
          now,
        )
      : false;
    if (!decided) {
      const why = problem(code ? await store.findDeviceByUserCode(code) : undefined, now) ?? 'That code can no longer be used.';
      return sendPage(reply, <MessagePage viewer={viewer} endUser title="Cannot continue" kind="error" message={why} />, 400);
    }
    await admission.giveBack();
    return form.decision === 'approve'
      ? sendPage(reply, <MessagePage viewer={viewer} endUser title="Device connected" kind="success" message="Your device is signed in. You can close this page and return to your device." />)
      : sendPage(reply, <MessagePage viewer={viewer} endUser title="Request denied" kind="info" message="You denied the request. The device will not be signed in; you can close this page." />);
  });
}
