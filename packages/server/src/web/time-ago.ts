const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * How long ago something happened, in words a person reads at a glance: "just now" under 45 seconds,
 * "a minute ago" up to 90 seconds, then minutes, hours and days, each rounded (the thresholds of the common
 * relative-time libraries). An instant a little ahead (another instance's clock) is "just now".
 */
export function timeAgo(ms: number): string {
  if (ms < 45_000) return 'just now';
  if (ms < 90_000) return 'a minute ago';
  if (ms < 45 * MINUTE) return `${Math.round(ms / MINUTE)} minutes ago`;
  if (ms < 90 * MINUTE) return 'an hour ago';
  if (ms < 22 * HOUR) return `${Math.round(ms / HOUR)} hours ago`;
  if (ms < 36 * HOUR) return 'a day ago';
  return `${Math.round(ms / DAY)} days ago`;
}

/** An instant as the server can state it: in UTC, to the minute, saying so (it does not know the reader's time zone). */
export function utcMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
