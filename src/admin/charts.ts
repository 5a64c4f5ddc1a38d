/**
 * Bar charts drawn on the server as inline SVG: no script, colours from the stylesheet's variables
 * (light and dark), `role="img"` named by its `<title>`, and the same numbers in a table the page
 * shows beside it (the text equivalent). Values are counts; labels are short day names.
 */
import { escapeHtml } from '../i18n/translator.ts';

export interface ChartSeries {
  name: string;
  /** A class of the stylesheet giving the bars' colour (`chart-a`, `chart-b`). */
  className: string;
  values: readonly number[];
}

export interface Chart {
  id: string;
  title: string;
  labels: readonly string[];
  series: readonly ChartSeries[];
  /** Bars of a label on top of each other (parts of one whole: sign-ins by method) rather than side by side. */
  isStacked?: boolean;
}

/** The bar colours of the stylesheet, in the order series take them. */
export const SERIES_CLASSES = ['chart-a', 'chart-c', 'chart-d', 'chart-e', 'chart-b', 'chart-f'] as const;

const WIDTH = 640;
const HEIGHT = 200;
/** Room for the value axis's labels: at least this, more for long numbers (below). */
const MIN_LEFT = 36;
/**
 * The width of one digit of an axis label, in the viewBox's units, at its largest: the SVG scales
 * with its column, and the stylesheet sets the labels' size so that they stay legible on a phone,
 * where one unit is about half a pixel (`.chart-axis`, about 23 units there).
 */
const DIGIT_WIDTH = 14;
const BOTTOM = 32;
const TOP = 12;
/** How many labels the label axis shows at most on a narrow screen, where they are drawn largest. */
const NARROW_LABELS = 4;

/** A round step for the value axis: 1, 2, 5 × 10^n, about four lines. */
function niceMax(max: number): { top: number; step: number } {
  if (max <= 0) return { top: 4, step: 1 };
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough) ?? 10 * power;
  return { top: Math.ceil(max / step) * step, step };
}

/** The chart as an SVG element (escaped text throughout). */
export function barChartSvg(chart: Chart): string {
  const stackedTotals = chart.labels.map((_, index) => chart.series.reduce((sum, series) => sum + (series.values[index] ?? 0), 0));
  const max = Math.max(0, ...(chart.isStacked === true ? stackedTotals : chart.series.flatMap((series) => series.values)));
  const { top, step } = niceMax(max);
  const left = Math.max(MIN_LEFT, 8 + DIGIT_WIDTH * String(top).length);
  const plotWidth = WIDTH - left;
  const plotHeight = HEIGHT - BOTTOM - TOP;
  const slot = plotWidth / Math.max(1, chart.labels.length);
  const barWidth = chart.isStacked === true ? slot * 0.8 : Math.max(1, (slot * 0.8) / Math.max(1, chart.series.length));
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight;
  const parts: string[] = [];
  for (let value = 0; value <= top; value += step) {
    parts.push(`<line class="chart-grid" x1="${left}" x2="${WIDTH}" y1="${y(value)}" y2="${y(value)}"/>`);
    parts.push(`<text class="chart-axis" x="${left - 4}" y="${y(value)}" text-anchor="end" dominant-baseline="middle">${value}</text>`);
  }
  // Every other day's label when there are many, so that they do not overlap; on a narrow screen,
  // where they are drawn larger, a few only: the others are marked minor, and the stylesheet hides them there.
  const wideStep = chart.labels.length <= 10 ? 1 : 2;
  // (A multiple of wideStep: a label it skips is drawn in neither width.)
  const narrowStep = wideStep * Math.ceil(chart.labels.length / NARROW_LABELS / wideStep);
  chart.labels.forEach((label, index) => {
    const x0 = left + index * slot + slot * 0.1;
    let below = 0;
    chart.series.forEach((series, seriesIndex) => {
      const value = series.values[index] ?? 0;
      const height = y(0) - y(value);
      const x = chart.isStacked === true ? x0 : x0 + seriesIndex * barWidth;
      const top = chart.isStacked === true ? y(below + value) : y(value);
      below += value;
      parts.push(`<rect class="${escapeHtml(series.className)}" x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${height.toFixed(1)}"/>`);
    });
    if (index % wideStep === 0) {
      const className = index % narrowStep === 0 ? 'chart-axis' : 'chart-axis chart-axis-minor';
      parts.push(`<text class="${className}" x="${(left + index * slot + slot / 2).toFixed(1)}" y="${HEIGHT - BOTTOM + 7}" text-anchor="middle" dominant-baseline="hanging">${escapeHtml(label)}</text>`);
    }
  });
  const titleId = `${chart.id}-title`;
  return `<svg class="chart" id="${escapeHtml(chart.id)}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${escapeHtml(titleId)}" preserveAspectRatio="xMidYMid meet"><title id="${escapeHtml(titleId)}">${escapeHtml(chart.title)}</title>${parts.join('')}</svg>`;
}
