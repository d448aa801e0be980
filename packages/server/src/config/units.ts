/** Milliseconds in a second, minute, hour and day: the unit every duration in config/ is written in. */
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
