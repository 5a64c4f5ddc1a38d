/** The screenshots each tour page gets (scripts/screenshots.ts), and their file names. */
import type { Locale } from '../src/i18n/locales.ts';

export interface Shot {
  locale: Locale;
  form: 'desktop' | 'mobile';
  viewport: { width: number; height: number };
  /** The index's column heading. */
  label: string;
}

export const SHOTS: readonly Shot[] = [
  { locale: 'en', form: 'desktop', viewport: { width: 1280, height: 800 }, label: 'English' },
  { locale: 'de', form: 'desktop', viewport: { width: 1280, height: 800 }, label: 'Deutsch' },
  { locale: 'en', form: 'mobile', viewport: { width: 375, height: 740 }, label: 'English, 375 px' },
];

export function screenshotFile(stopId: string, shot: Shot): string {
  return `${stopId}.${shot.locale}.${shot.form}.png`;
}
