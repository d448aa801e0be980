import type { ServerConfig } from '../config/config.js';
import { BackchannelDelivery, type DeliveryLog, type DeliveryResult } from '../oauth/backchannel-delivery.js';
import { BackchannelLogout } from '../oauth/backchannel-logout.js';
import { serverKeyRing } from '../oauth/keys.js';
import type { Store } from '../store/store.js';
import { NO_METRICS } from '../util/metrics.js';
import { say } from './output.js';
import { warn } from './shared.js';

/** What came of telling applications of a logout: how many tokens got through, and how many did not. */
export interface LogoutTally {
  delivered: number;
  failed: number;
}

/**
 * After an operator's command ended sign-ins (`users disable`, `reset-password`, `reset-passkeys`): the applications
 * that signed in through them and want to know are sent a logout token (OpenID Connect Back-Channel Logout 1.0),
 * from this process, signed with the server's keys (opened with the key-encryption key of this environment, as the
 * server opens them). `ended` says which sign-ins ended ({@link BackchannelLogout}). Unlike a page, an operator's
 * command waits for the deliveries, retries included, to say what came of them; each failure is told to `log`
 * with the application and the reason.
 */
export async function tellApplications(
  store: Store,
  config: ServerConfig,
  log: DeliveryLog,
  ended: (backchannel: BackchannelLogout) => Promise<Promise<DeliveryResult>[]>,
): Promise<LogoutTally> {
  const keys = serverKeyRing(store, config);
  await keys.load();
  const delivery = new BackchannelDelivery(config.backchannelLogout, NO_METRICS, log);
  const results = await Promise.all(await ended(new BackchannelLogout({ config, store, keys }, delivery, log)));
  const delivered = results.filter((r) => r.delivered).length;
  return { delivered, failed: results.length - delivered };
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
  ended: (backchannel: BackchannelLogout) => Promise<Promise<DeliveryResult>[]>,
): Promise<void> {
  try {
    const told = await tellApplications(
      store,
      config,
      { warn: (fields, message) => warn(`${message}: ${String(fields.clientId ?? '')} (${String(fields.reason ?? '')})`) },
      ended,
    );
    const total = told.delivered + told.failed;
    if (total > 0) say(`back-channel logout: ${told.delivered} of ${total} logout token${total === 1 ? '' : 's'} delivered`);
  } catch (err) {
    warn(`${done}, but applications could not be told: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
