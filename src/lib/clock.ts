/** Time as services see it: epoch milliseconds. Tests pass their own to move time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** An epoch-millisecond time as the API writes it: ISO 8601 in UTC. */
export const isoTime = (epochMs: number): string => new Date(epochMs).toISOString();
