/** Time as services see it: epoch milliseconds. Tests pass their own to move time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** Recently formatted times: a session's expiry and sign-in time are written on every check of it. */
const formatted = new Map<number, string>();
const MAX_FORMATTED = 4096;

/**
 * An epoch-millisecond time as the API writes it: ISO 8601 in UTC. Formatting a Date was a few
 * per cent of the session check (two per answer); the same instants recur, so they are remembered
 * (forgotten all at once when there are too many).
 */
export function isoTime(epochMs: number): string {
  let text = formatted.get(epochMs);
  if (text === undefined) {
    text = new Date(epochMs).toISOString();
    if (formatted.size >= MAX_FORMATTED) formatted.clear();
    formatted.set(epochMs, text);
  }
  return text;
}
