import type { ServerConfig } from '../config/config.js';
import { BackchannelDelivery, type DeliveryLog } from '../oauth/backchannel-delivery.js';
import { BackchannelLogout } from '../oauth/backchannel-logout.js';
import { serverKeyRing } from '../oauth/keys.js';
import type { Store } from '../store/store.js';
import { NO_METRICS } from '../util/metrics.js';

/** What came of telling applications of a logout: how many tokens got through, and how many did not. */
export interface LogoutTally {
  delivered: number;
  failed: number;
}

/**
 * `users disable`, after the user is disabled: every application holding a live grant of the user that wants to
 * know is sent a logout token (OpenID Connect Back-Channel Logout 1.0), from this process, signed with the
 * server's keys (opened with the key-encryption key of this environment, as the server opens them). Unlike a
 * page, an operator's command waits for the deliveries, retries included, to say what came of them; each
 * failure is told to `log` with the application and the reason.
 */
export async function logoutDisabledUser(store: Store, config: ServerConfig, userId: string, log: DeliveryLog): Promise<LogoutTally> {
  const keys = serverKeyRing(store, config);
  await keys.load();
  const delivery = new BackchannelDelivery(config.backchannelLogout, NO_METRICS, log);
  const backchannel = new BackchannelLogout({ config, store, keys }, delivery, log);
  const results = await Promise.all(await backchannel.userDisabled(userId));
  const delivered = results.filter((r) => r.delivered).length;
  return { delivered, failed: results.length - delivered };
}
