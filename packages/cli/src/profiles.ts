// What `authcli login` remembers of each profile in profiles.json: the issuer and client id of its last
// sign-in, nothing secret, so that later commands on the profile need no --issuer (config.ts resolveSettings).
import { profilesPath, readProfileIndex, type ProfileSettings } from '@authcli/client/internal/config.js';
import { underFileLock, writePrivateFile } from '@authcli/client/internal/storage/file.js';

/**
 * Records the profile's issuer and client id. The read, change and atomic write happen under the file's
 * lock, so logins of other profiles at the same moment keep their entries.
 */
export async function rememberProfile(
  settings: Pick<ProfileSettings, 'profile' | 'issuer' | 'clientId'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const file = profilesPath(env);
  await underFileLock(file, async () => {
    const profiles = await readProfileIndex(env);
    const known = profiles[settings.profile];
    if (known?.issuer === settings.issuer && known.client_id === settings.clientId) return;
    profiles[settings.profile] = { issuer: settings.issuer, client_id: settings.clientId };
    const sorted = Object.fromEntries(Object.entries(profiles).sort(([a], [b]) => a.localeCompare(b)));
    await writePrivateFile(file, `${JSON.stringify({ version: 1, profiles: sorted }, null, 2)}\n`, env);
  });
}

/**
 * Forgets a profile: its entry in profiles.json, under the file's lock (a login of another profile at the same
 * moment keeps its entry). False when there was none.
 */
export async function forgetProfile(profile: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const file = profilesPath(env);
  return underFileLock(file, async () => {
    const profiles = await readProfileIndex(env);
    if (!(profile in profiles)) return false;
    delete profiles[profile];
    await writePrivateFile(file, `${JSON.stringify({ version: 1, profiles }, null, 2)}\n`, env);
    return true;
  });
}
