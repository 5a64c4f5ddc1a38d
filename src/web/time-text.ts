/** A moment as a `<time datetime>` value and as text. */
export interface TimeText {
  iso: string;
  text: string;
}

export function formatTime(epochMs: number): TimeText {
  const iso = new Date(epochMs).toISOString();
  return { iso, text: `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` };
}
