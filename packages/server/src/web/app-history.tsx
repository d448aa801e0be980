import type { AuditEvent } from '../store/store.js';
import { timeAgo, utcMinute } from './time-ago.js';

/** How many of an application's changes its page shows, newest first (the rest: `authcli-server audit --target`). */
export const APP_HISTORY_SHOWN = 20;

const WHAT: Record<string, string> = {
  'app.created': 'Registered',
  'app.updated': 'Changed',
  'app.secret_rotated': 'Made a new client secret',
  'app.deleted': 'Deleted',
};

/** Who made a change, as people know them: a username, an application's name, the operator. */
function who(r: AuditEvent): string {
  if (r.actor_type === 'operator') return 'the operator (authcli-server)';
  if (r.actor_type === 'client') return `the application ${r.actor_name ?? r.actor} (admin API)`;
  return r.actor_name ?? r.actor;
}

const show = (v: unknown) => (Array.isArray(v) ? v.join(' ') || '(none)' : v === null || v === '' ? '(none)' : String(v));

/** What an update changed, a line per field: `redirect_uris: A → B`. */
function changes(r: AuditEvent): string[] {
  if (r.action !== 'app.updated') return [];
  return Object.entries(JSON.parse(r.detail) as Record<string, { from: unknown; to: unknown }>).map(
    ([field, c]) => `${field}: ${show(c.from)} → ${show(c.to)}`,
  );
}

/**
 * An application's history on its dashboard page: who changed what, when and from where, from the audit
 * trail (docs/audit.md), so a team sees who changed its redirect URIs without asking the operator. The addresses
 * changes came from are shown to administrators only: a developer is not told where an administrator works from.
 */
export function AppHistory(props: { rows: readonly AuditEvent[]; now: number; showAddresses: boolean }) {
  return (
    <div class="card">
      <h2 id="history">History</h2>
      {props.rows.length === 0 ? (
        <p class="muted">No changes recorded yet.</p>
      ) : (
        <>
          <p class="muted">{`Who changed this application, newest first (at most the last ${APP_HISTORY_SHOWN}).`}</p>
          <ul class="history" aria-labelledby="history">
            {props.rows.map((r) => (
              <li>
                <strong>{WHAT[r.action] ?? r.action}</strong> by {who(r)}, {timeAgo(props.now - Number(r.at))} ({utcMinute(Number(r.at))})
                {props.showAddresses && r.address !== null && <> from {r.address}</>}
                {changes(r).map((line) => (
                  <div class="muted mono">{line}</div>
                ))}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
