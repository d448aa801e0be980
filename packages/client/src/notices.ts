/**
 * Where the library says what a person should know while it works (a wait for another process, a fallback from
 * the keychain, a revocation that failed): one line at a time. authcli's CLI prints them on stderr; a tool that
 * embeds the library passes its own (the default says nothing).
 */
export interface Notices {
  say(line: string): void;
}

/** Says nothing. */
export const SILENT: Notices = { say: () => undefined };
