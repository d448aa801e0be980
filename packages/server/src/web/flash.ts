import { FLASH_TTL_MS, FLASHES_PER_SESSION } from '../config/defaults.js';

/** What a dashboard action leaves for the page its 303 redirect leads to. */
export type FlashMessage = { kind: 'secret'; clientId: string; secret: string; rotated: boolean } | { kind: 'notice'; text: string };

interface Entry {
  message: FlashMessage;
  expiresAt: number;
}

/**
 * One-time messages between a dashboard POST and the GET page it redirects
 * to (post-redirect-get), bound to the server-side session's id hash.
 *
 * A new client secret must reach the browser exactly once and never through
 * a URL (logs, history, Referer), so the POST keeps it here and the next page
 * takes it out: a reload finds nothing and shows nothing, and repeats no
 * action. Held in this process's memory only, for {@link FLASH_TTL_MS}: a
 * secret never displayed is lost, which is the same outcome as a closed tab
 * (rotate again). Behind a load balancer without session affinity the page
 * may land on another process and show no secret; rotating again is the cure.
 */
export class Flash {
  private readonly bySession = new Map<string, Entry[]>();

  constructor(private readonly now: () => number) {}

  put(sessionHash: string, message: FlashMessage): void {
    const now = this.now();
    this.sweep(now);
    const live = (this.bySession.get(sessionHash) ?? []).filter((e) => e.expiresAt > now);
    live.push({ message, expiresAt: now + FLASH_TTL_MS });
    this.bySession.set(sessionHash, live.slice(-FLASHES_PER_SESSION));
  }

  /** Removes and returns the first live message of this session that `match` accepts. */
  take<K extends FlashMessage['kind']>(
    sessionHash: string,
    kind: K,
    match: (m: Extract<FlashMessage, { kind: K }>) => boolean = () => true,
  ): Extract<FlashMessage, { kind: K }> | undefined {
    const now = this.now();
    const entries = this.bySession.get(sessionHash);
    if (!entries) return undefined;
    const i = entries.findIndex(
      (e) => e.expiresAt > now && e.message.kind === kind && match(e.message as Extract<FlashMessage, { kind: K }>),
    );
    if (i < 0) return undefined;
    const [found] = entries.splice(i, 1);
    if (entries.length === 0) this.bySession.delete(sessionHash);
    return found!.message as Extract<FlashMessage, { kind: K }>;
  }

  /** Drops expired messages, so sessions that never came back hold no secret past the TTL. */
  private sweep(now: number): void {
    for (const [key, entries] of this.bySession) {
      const live = entries.filter((e) => e.expiresAt > now);
      if (live.length === 0) this.bySession.delete(key);
      else if (live.length !== entries.length) this.bySession.set(key, live);
    }
  }
}
