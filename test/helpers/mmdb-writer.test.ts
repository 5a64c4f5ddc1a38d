/** The test writer against the reader Gatehouse uses: mmdb-lib reads back what writeMmdb wrote. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Reader } from 'mmdb-lib';
import { encodeMmdbValue, writeMmdb } from './mmdb-writer.ts';

const BERLIN = {
  city: { geoname_id: 2_950_159, names: { en: 'Berlin', de: 'Berlin', ja: 'ベルリン' } },
  country: { geoname_id: 2_921_044, iso_code: 'DE', names: { en: 'Germany', de: 'Deutschland', ja: 'ドイツ' }, is_in_european_union: true },
  location: { accuracy_radius: 20, time_zone: 'Europe/Berlin' },
};
const SOMEWHERE_IN_FRANCE = { country: { geoname_id: 3_017_382, iso_code: 'FR', names: { en: 'France' } } };

describe('writeMmdb (test helper)', () => {
  it('writes an IPv4 database that mmdb-lib reads back: records, prefixes, misses and metadata', () => {
    const file = writeMmdb(
      [
        { cidr: '203.0.113.0/24', record: BERLIN },
        { cidr: '198.51.100.0/24', record: SOMEWHERE_IN_FRANCE },
      ],
      { databaseType: 'Test-City', languages: ['en', 'de', 'ja'] },
    );
    const reader = new Reader<Record<string, unknown>>(file);
    assert.deepEqual(reader.get('203.0.113.7'), BERLIN);
    assert.deepEqual(reader.get('203.0.113.255'), BERLIN);
    assert.deepEqual(reader.getWithPrefixLength('198.51.100.1'), [SOMEWHERE_IN_FRANCE, 24]);
    assert.equal(reader.get('203.0.114.1'), null);
    assert.equal(reader.get('8.8.8.8'), null);
    assert.equal(reader.metadata.ipVersion, 4);
    assert.equal(reader.metadata.recordSize, 24);
    assert.equal(reader.metadata.databaseType, 'Test-City');
    assert.deepEqual(reader.metadata.languages, ['en', 'de', 'ja']);
    assert.equal(reader.metadata.binaryFormatMajorVersion, 2);
  });

  it('writes an IPv6 database with IPv4 networks where MaxMind puts them (::/96)', () => {
    const file = writeMmdb(
      [
        { cidr: '203.0.113.0/24', record: BERLIN },
        { cidr: '2001:db8:1::/48', record: SOMEWHERE_IN_FRANCE },
      ],
      { ipVersion: 6 },
    );
    const reader = new Reader<Record<string, unknown>>(file);
    assert.equal(reader.metadata.ipVersion, 6);
    assert.deepEqual(reader.get('203.0.113.9'), BERLIN);
    assert.deepEqual(reader.get('2001:db8:1:2::3'), SOMEWHERE_IN_FRANCE);
    assert.equal(reader.get('2001:db8:2::1'), null);
  });

  it('encodes sizes past the short forms (29, 285 and 65,821 bytes) as the spec says', () => {
    for (const length of [28, 29, 284, 285, 65_820, 65_821, 70_000]) {
      const text = 'x'.repeat(length);
      const reader = new Reader<Record<string, unknown>>(writeMmdb([{ cidr: '192.0.2.0/24', record: { text } }]));
      assert.equal((reader.get('192.0.2.1') as { text: string }).text.length, length, String(length));
    }
    assert.deepEqual([...encodeMmdbValue(true)], [0x01, 0x07]);
    assert.deepEqual([...encodeMmdbValue(0)], [0xa0]);
  });

  it('refuses overlapping networks rather than write a tree that hides one', () => {
    assert.throws(
      () =>
        writeMmdb([
          { cidr: '203.0.113.0/24', record: BERLIN },
          { cidr: '203.0.113.128/25', record: SOMEWHERE_IN_FRANCE },
        ]),
      /overlaps/,
    );
  });
});
