import type { ServerConfig } from '../config/config.js';
import { BackchannelDelivery, type DeliveryLog } from '../oauth/backchannel-delivery.js';
import { BackchannelLogout } from '../oauth/backchannel-logout.js';
import { serverKeyRing } from '../oauth/keys.js';
import type { Store } from '../store/store.js';
import { NO_METRICS } from '../util/metrics.js';
import { say } from './output.js';
import { warn } from './shared.js';

/** What came of telling applications of a logout: tokens delivered, left to the server to try again, given up. */
export interface LogoutTally {
  delivered: number;
  retrying: number;
  failed: number;
}

/**
 * After an operator's command ended sign-ins (`users disable`, `reset-password`, `reset-passkeys`): the applications
 * that signed in through them and want to know get a logout token (OpenID Connect Back-Channel Logout 1.0). The
 * tokens are queued in the store's outbox, then tried once from this process, signed with the server's keys
 * (opened with the key-encryption key of this environment, as the server opens them); what does not get through
 * stays in the outbox, and the running server tries it again (`authcli-server logouts` shows it). `ended` says
 * which sign-ins ended ({@link BackchannelLogout}); each give-up is told to `log` with the application and reason.
 */
export async function tellApplications(
  store: Store,
  config: ServerConfig,
  log: DeliveryLog,
  ended: (backchannel: BackchannelLogout) => Promise<string[]>,
): Promise<LogoutTally> {
  const keys = serverKeyRing(store, config);
  await keys.load();
  const delivery = new BackchannelDelivery({ config, store, keys }, NO_METRICS, log, undefined, false);
  const ids = await ended(new BackchannelLogout({ config, store, keys }, delivery, log));
  const results = await delivery.deliverNow(ids);
  const delivered = results.filter((r) => r.delivered).length;
  const retrying = results.filter((r) => !r.delivered && !r.final).length;
  return { delivered, retrying, failed: results.length - delivered - retrying };
}

/**
 * {@link tellApplications}, with what came of it said as the operator commands say it: a line when a token was
 * sent, a warning per failed delivery, and a warning and exit code 1 when the applications could not be told at
 * all (no signing key this process can open, say). What the command did stands whatever happens here.
 */
export async function tellApplicationsAndSay(
  store: Store,
  config: ServerConfig,
  done: string,
  ended: (backchannel: BackchannelLogout) => Promise<string[]>,
): Promise<void> {
  try {
    const told = await tellApplications(
      store,
      config,
      { warn: (fields, message) => warn(`${message}: ${String(fields.clientId ?? '')} (${String(fields.reason ?? '')})`) },
      ended,
    );
    const total = told.delivered + told.retrying + told.failed;
    if (total === 0) return;
    const retrying = told.retrying > 0 ? `; ${told.retrying} to be tried again by the server (authcli-server logouts)` : '';
    say(`back-channel logout: ${told.delivered} of ${total} logout token${total === 1 ? '' : 's'} delivered${retrying}`);
  } catch (err) {
    warn(`${done}, but applications could not be told: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
