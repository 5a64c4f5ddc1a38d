/**
 * The server-drawn bar charts (charts.ts): what the stylesheet needs to keep their labels legible
 * on a phone, where the SVG is drawn at about half its size.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { barChartSvg } from './charts.ts';

const days = Array.from({ length: 14 }, (_, index) => `Nov ${index + 1}`);
const labelsOf = (svg: string) => [...svg.matchAll(/<text class="([^"]+)" x="[^"]+" y="[^"]+" text-anchor="middle"[^>]*>([^<]+)<\/text>/g)].map((match) => ({ className: match[1], text: match[2] }));

describe('bar charts', () => {
  it('shows every other day of two weeks, and marks all but every fourth minor (hidden on a narrow column)', () => {
    const svg = barChartSvg({ id: 'c', title: 'T', labels: days, series: [{ name: 'A', className: 'chart-a', values: days.map(() => 3) }] });
    const labels = labelsOf(svg);
    assert.deepEqual(labels.map((label) => label.text), ['Nov 1', 'Nov 3', 'Nov 5', 'Nov 7', 'Nov 9', 'Nov 11', 'Nov 13']);
    assert.deepEqual(labels.filter((label) => label.className === 'chart-axis').map((label) => label.text), ['Nov 1', 'Nov 5', 'Nov 9', 'Nov 13']);
    assert.ok(labels.filter((label) => label.className !== 'chart-axis').every((label) => label.className === 'chart-axis chart-axis-minor'));
  });

  it('keeps a few labels on a narrow column whatever the count (every one it keeps is drawn at desktop width too)', () => {
    for (let count = 1; count <= 40; count++) {
      const labels = Array.from({ length: count }, (_, index) => `L${index}`);
      const drawn = labelsOf(barChartSvg({ id: 'c', title: 'T', labels, series: [{ name: 'A', className: 'chart-a', values: labels.map(() => 1) }] }));
      const kept = drawn.filter((label) => label.className === 'chart-axis').length;
      assert.ok(kept >= Math.min(count, 3) && kept <= 5, `${count} labels: ${kept} kept on a narrow column`);
      assert.ok(drawn.length >= kept, `${count} labels: ${drawn.length} drawn`);
    }
  });

  it('shows every label of a short chart, none minor', () => {
    const svg = barChartSvg({ id: 'c', title: 'T', labels: ['Mail', 'Webhooks'], series: [{ name: 'A', className: 'chart-a', values: [1, 2] }] });
    assert.deepEqual(labelsOf(svg), [{ className: 'chart-axis', text: 'Mail' }, { className: 'chart-axis', text: 'Webhooks' }]);
  });

  it('leaves the value axis room for its longest number at the size a phone draws it', () => {
    const plotStart = (svg: string) => Number(/<line class="chart-grid" x1="([\d.]+)"/.exec(svg)![1]);
    const small = barChartSvg({ id: 'c', title: 'T', labels: ['a'], series: [{ name: 'A', className: 'chart-a', values: [20] }] });
    const large = barChartSvg({ id: 'c', title: 'T', labels: ['a'], series: [{ name: 'A', className: 'chart-a', values: [12_000] }] });
    assert.equal(plotStart(small), 36);
    assert.ok(plotStart(large) >= 8 + 14 * '15000'.length, `the plot starts at ${plotStart(large)}`);
    assert.match(large, />15000<\/text>/);
  });

  it('escapes its texts', () => {
    const svg = barChartSvg({ id: 'c', title: '<b>&', labels: ['<x>'], series: [{ name: 'A', className: 'chart-a', values: [1] }] });
    assert.ok(svg.includes('<title id="c-title">&lt;b&gt;&amp;</title>'));
    assert.ok(svg.includes('&lt;x&gt;'));
  });
});
