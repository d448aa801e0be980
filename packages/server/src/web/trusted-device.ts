import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerConfig } from '../config/config.js';
import { TRUSTED_DEVICE_TTL_SECONDS } from '../config/defaults.js';
import type { Store } from '../store/store.js';
import { randomToken } from '../util/crypto.js';

/**
 * Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device
 * Cookies"): a browser where a person signed in successfully gets a cookie
 * naming that username, MAC'd with a key kept in the store (so every
 * instance checks it). A sign-in attempt for that username from that browser
 * is counted against the cookie, not against the account's budget across
 * IPs, so a distributed attack that slows an account never slows its owner
 * on a browser they used before. A new one is issued at every sign-in.
 */
export class TrustedDevices {
  readonly cookieName: string;
  private readonly secure: boolean;

  private constructor(
    config: ServerConfig,
    private readonly key: Buffer,
  ) {
    this.secure = config.issuer.startsWith('https:');
    this.cookieName = this.secure ? '__Host-authcli_device' : 'authcli_device';
  }

  /** Loads (or, on the first start of a store, creates) the MAC key every instance shares. */
  static async open(config: ServerConfig, store: Store): Promise<TrustedDevices> {
    const key = await store.settings.getOrCreate('device_cookie_key', () => randomToken(32));
    return new TrustedDevices(config, Buffer.from(key, 'base64url'));
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  /** The device id of this request's cookie when it is genuine and names `username` (without regard to case). */
  deviceFor(req: FastifyRequest, username: string): string | undefined {
    const raw = req.cookies[this.cookieName];
    if (!raw || raw.length > 300) return undefined;
    const parts = raw.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') return undefined;
    const [, user, device, mac] = parts as [string, string, string, string];
    const expected = Buffer.from(this.mac(`v1.${user}.${device}`));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return Buffer.from(user, 'base64url').toString('utf8') === username.toLowerCase() ? device : undefined;
  }

  /** Marks this browser as one where `username` signed in (a fresh device id each time). */
  issue(reply: FastifyReply, username: string): void {
    const payload = `v1.${Buffer.from(username.toLowerCase()).toString('base64url')}.${randomToken(16)}`;
    reply.setCookie(this.cookieName, `${payload}.${this.mac(payload)}`, {
      path: '/',
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secure,
      maxAge: TRUSTED_DEVICE_TTL_SECONDS,
    });
  }
}
