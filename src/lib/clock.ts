/** Time as services see it: epoch milliseconds. Tests pass their own to move time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
