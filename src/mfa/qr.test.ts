import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import decodeQR from '@paulmillr/qr/decode.js';
import { encode } from 'uqr';
import { otpauthQrSvg } from './qr.ts';

const URL_TEXT =
  'otpauth://totp/Gatehouse:alice%40example.com?issuer=Gatehouse&secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&algorithm=SHA1&digits=6&period=30';
const QUIET_ZONE = 4;

interface Drawing {
  width: number;
  height: number;
  /** One square per dark module, in SVG units. */
  squares: Array<{ x: number; y: number; size: number }>;
}

/** Reads the SVG the way a renderer would for this shape: a viewBox, a background, one path of squares. */
function readDrawing(svg: string): Drawing {
  const viewBox = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
  const path = /<path fill="black" d="([^"]*)"\/>/.exec(svg);
  assert.ok(viewBox && path, 'a viewBox and a black path');
  const squares: Drawing['squares'] = [];
  const rest = path[1]!.replace(/M(\d+),(\d+)h(\d+)v\3h-\3z/g, (_, x: string, y: string, size: string) => {
    squares.push({ x: Number(x), y: Number(y), size: Number(size) });
    return '';
  });
  assert.equal(rest, '', 'the path is made of squares only');
  return { width: Number(viewBox[1]), height: Number(viewBox[2]), squares };
}

/** The drawing as an RGB bitmap, one pixel per SVG unit: what a phone's camera would see. */
function rasterise({ width, height, squares }: Drawing): { width: number; height: number; data: Uint8Array } {
  const data = new Uint8Array(width * height * 3).fill(255);
  for (const { x, y, size } of squares) {
    for (let row = y; row < y + size; row++) data.fill(0, (row * width + x) * 3, (row * width + x + size) * 3);
  }
  return { width, height, data };
}

describe('otpauthQrSvg', () => {
  const svg = otpauthQrSvg(URL_TEXT);

  it('is one SVG element holding only a background rectangle and a path', () => {
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 \d+ \d+">.*<\/svg>$/s);
    assert.deepEqual([...svg.matchAll(/<([a-zA-Z][\w:-]*)/g)].map((m) => m[1]), ['svg', 'rect', 'path']);
    const attributes = new Set([...svg.matchAll(/\s([a-zA-Z][\w:-]*)=/g)].map((m) => m[1]));
    assert.deepEqual([...attributes].sort(), ['d', 'fill', 'height', 'viewBox', 'width', 'xmlns']);
  });

  it('carries no script, event handler, link or the URL text', () => {
    assert.doesNotMatch(svg, /script|\son\w+=|href|foreignObject|javascript:/i);
    assert.ok(!svg.includes('GEZDGNBV'));
    assert.ok(!svg.includes('otpauth'));
  });

  it('decodes, by an independent QR reader, to exactly the otpauth URL', () => {
    assert.equal(decodeQR(rasterise(readDrawing(svg))), URL_TEXT);
  });

  it("draws uqr's medium-correction matrix for the URL, inside a quiet zone of four modules", () => {
    const qr = encode(URL_TEXT, { ecc: 'M', border: QUIET_ZONE });
    const { width, height, squares } = readDrawing(svg);
    const moduleSize = width / qr.size;
    assert.equal(width, height);
    assert.equal(qr.size, 4 * qr.version + 17 + 2 * QUIET_ZONE);
    const drawn = Array.from({ length: qr.size }, () => Array<boolean>(qr.size).fill(false));
    for (const { x, y, size } of squares) {
      assert.equal(size, moduleSize);
      drawn[y / moduleSize]![x / moduleSize] = true;
    }
    assert.deepEqual(drawn, qr.data);
    const quiet = (i: number) => i < QUIET_ZONE || i >= qr.size - QUIET_ZONE;
    assert.ok(drawn.every((row, y) => row.every((dark, x) => !dark || (!quiet(x) && !quiet(y)))));
  });

  it('draws a different code for a different secret', () => {
    assert.notEqual(otpauthQrSvg(URL_TEXT.replace('GEZD', 'MFRG')), svg);
  });
});
