/** "5 seconds", "1 minute", "12 minutes": how long until a limit lets the person try again. */
export function retryAfterText(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}
