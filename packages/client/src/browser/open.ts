/** Whether a browser can be opened on this machine (no display over SSH or on a bare Linux console). */
export function hasDisplay(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === 'darwin' || platform === 'win32') return !env.SSH_CONNECTION && !env.SSH_TTY;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Opens a URL with the system browser through `open`; false when there is no display or it fails. */
export async function openInBrowser(url: string): Promise<boolean> {
  if (!hasDisplay()) return false;
  try {
    const { default: open } = await import('open');
    const child = await open(url);
    return await new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      child.once('spawn', () => resolve(true));
      setTimeout(() => resolve(true), 500).unref();
    });
  } catch {
    return false;
  }
}
