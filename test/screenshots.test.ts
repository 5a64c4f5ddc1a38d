/**
 * docs/screenshots/ is in step with the page tour: one image per tour page and screenshot kind
 * (scripts/screenshots.shots.ts), none left over from pages that are gone, and the index lists
 * them all. A page added to the tour without `npm run screenshots` fails here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TOUR } from './helpers/page-tour.ts';
import { SHOTS, screenshotFile } from '../scripts/screenshots.shots.ts';

const DIR = resolve(import.meta.dirname, '../docs/screenshots');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('docs/screenshots', () => {
  const expected = TOUR.flatMap((stop) => SHOTS.map((shot) => screenshotFile(stop.id, shot))).sort();

  it('holds one PNG per tour page and kind, and nothing else', () => {
    const present = readdirSync(DIR).filter((file) => file.endsWith('.png')).sort();
    assert.deepEqual(present, expected, 'run `npm run screenshots`');
    for (const file of present) {
      const bytes = readFileSync(join(DIR, file));
      assert.ok(bytes.subarray(0, 8).equals(PNG_SIGNATURE) && statSync(join(DIR, file)).size > 1000, `${file} is an image`);
    }
  });

  it('has an index that shows every one of them', () => {
    const index = readFileSync(join(DIR, 'README.md'), 'utf8');
    for (const file of expected) assert.ok(index.includes(`(${file})`), `the index shows ${file}`);
    for (const stop of TOUR) assert.ok(index.includes(`| ${stop.title} |`), `the index names ${stop.title}`);
  });
});
