/**
 * Copy buttons of the dashboard, in the browser. The pages' CSP allows only
 * scripts from this origin (no inline handlers), so this module finds every
 * `button[data-copy]` (rendered `hidden`: without this script they would do
 * nothing), shows it, and copies the value of the element it names.
 */
function textOf(target: Element | null): string | undefined {
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) return target.value;
  return target?.textContent ?? undefined;
}

async function copy(text: string, target: Element | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No clipboard permission (an http issuer that is not localhost): select the text for Ctrl+C instead.
    if (target instanceof HTMLInputElement) {
      target.focus();
      target.select();
    }
    return false;
  }
}

for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
  const label = button.textContent ?? 'Copy';
  button.hidden = false;
  button.addEventListener('click', () => {
    const target = document.getElementById(button.dataset.copy ?? '');
    const text = textOf(target);
    if (text === undefined) return;
    void copy(text, target).then((ok) => {
      button.textContent = ok ? 'Copied' : 'Press Ctrl+C';
      setTimeout(() => (button.textContent = label), 2000);
    });
  });
}
