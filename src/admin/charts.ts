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
const LEFT = 36;
const BOTTOM = 24;
const TOP = 8;

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
  const plotWidth = WIDTH - LEFT;
  const plotHeight = HEIGHT - BOTTOM - TOP;
  const slot = plotWidth / Math.max(1, chart.labels.length);
  const barWidth = chart.isStacked === true ? slot * 0.8 : Math.max(1, (slot * 0.8) / Math.max(1, chart.series.length));
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight;
  const parts: string[] = [];
  for (let value = 0; value <= top; value += step) {
    parts.push(`<line class="chart-grid" x1="${LEFT}" x2="${WIDTH}" y1="${y(value)}" y2="${y(value)}"/>`);
    parts.push(`<text class="chart-axis" x="${LEFT - 4}" y="${y(value) + 4}" text-anchor="end">${value}</text>`);
  }
  chart.labels.forEach((label, index) => {
    const x0 = LEFT + index * slot + slot * 0.1;
    let below = 0;
    chart.series.forEach((series, seriesIndex) => {
      const value = series.values[index] ?? 0;
      const height = y(0) - y(value);
      const x = chart.isStacked === true ? x0 : x0 + seriesIndex * barWidth;
      const top = chart.isStacked === true ? y(below + value) : y(value);
      below += value;
      parts.push(`<rect class="${escapeHtml(series.className)}" x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${height.toFixed(1)}"/>`);
    });
    // Every other day's label when there are many: they must not overlap.
    if (chart.labels.length <= 10 || index % 2 === 0) {
      parts.push(`<text class="chart-axis" x="${(LEFT + index * slot + slot / 2).toFixed(1)}" y="${HEIGHT - 6}" text-anchor="middle">${escapeHtml(label)}</text>`);
    }
  });
  const titleId = `${chart.id}-title`;
  return `<svg class="chart" id="${escapeHtml(chart.id)}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${escapeHtml(titleId)}" preserveAspectRatio="xMidYMid meet"><title id="${escapeHtml(titleId)}">${escapeHtml(chart.title)}</title>${parts.join('')}</svg>`;
}
