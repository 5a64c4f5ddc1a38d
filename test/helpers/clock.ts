import type { Clock } from '../../src/lib/clock.ts';

/** A clock that stands still until a test moves it. */
export function fakeClock(start = Date.now()): Clock & { advance(ms: number): void } {
  let now = start;
  const clock = () => now;
  return Object.assign(clock, {
    advance(ms: number) {
      now += ms;
    },
  });
}
