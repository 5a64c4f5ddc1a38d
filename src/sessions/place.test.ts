/**
 * Sessions' approximate places: which addresses are looked up, how a record's names become the
 * page's language, the finder over a real .mmdb file (written by test/helpers/mmdb-writer.ts),
 * the configuration's check of GEOIP_DATABASE_FILE, and the session items' text.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeMmdb, type MmdbNetwork } from '../../test/helpers/mmdb-writer.ts';
import { TEST_SECRET } from '../../test/helpers/app.ts';
import { ConfigError } from '../config.ts';
import { loadConfig } from '../modules.ts';
import { mergeCatalogs } from '../i18n/catalog.ts';
import { createTranslations } from '../i18n/translator.ts';
import type { Logger } from '../lib/logger.ts';
import { createPlaceFinder, MAX_PLACE_DATABASE_BYTES, placeDatabaseProblem, placeOf, toLookupAddress } from './place.ts';
import { toSessionItems } from './session-items.ts';
import { SESSIONS_MESSAGES } from './session-texts.ts';
import type { SessionSummary } from './session.types.ts';

/** A GeoLite2-City record as MaxMind lays it out, with what must never be shown. */
const BERLIN = {
  city: { geoname_id: 2_950_159, names: { en: 'Berlin', de: 'Berlin', fr: 'Berlin', es: 'Berlín', 'pt-BR': 'Berlim', ja: 'ベルリン', ru: 'Берлин', 'zh-CN': '柏林' } },
  continent: { code: 'EU', geoname_id: 6_255_148, names: { en: 'Europe', de: 'Europa' } },
  country: { geoname_id: 2_921_044, iso_code: 'DE', names: { en: 'Germany', de: 'Deutschland', fr: 'Allemagne', es: 'Alemania', 'pt-BR': 'Alemanha', ja: 'ドイツ' } },
  location: { accuracy_radius: 20, latitude: '52.5244', longitude: '13.4105', time_zone: 'Europe/Berlin' },
  postal: { code: '10178' },
  subdivisions: [{ geoname_id: 2_950_157, iso_code: 'BE', names: { en: 'Land Berlin', de: 'Berlin' } }],
};
/** A country-only record (GeoLite2-Country, or a city database that knows no city here), names in English only. */
const FRANCE = { country: { geoname_id: 3_017_382, iso_code: 'FR', names: { en: 'France' } } };
/** IPinfo Lite's flat layout. */
const IPINFO_JAPAN = { asn: 'AS2516', as_name: 'KDDI CORPORATION', country: 'Japan', country_code: 'JP', continent: 'Asia', continent_code: 'AS' };

const NETWORKS: MmdbNetwork[] = [
  { cidr: '203.0.113.0/24', record: BERLIN },
  { cidr: '198.51.100.0/24', record: FRANCE },
];

const translations = createTranslations(mergeCatalogs([{ name: 'sessions', messages: SESSIONS_MESSAGES }]));

/** Records what is logged, for the tests that expect an error. */
function recordingLogger() {
  const errors: string[] = [];
  const logger: Logger = { error: (_details, message) => errors.push(message), warn() {}, info() {} };
  return { logger, errors };
}

describe('toLookupAddress', () => {
  it('asks for public addresses, and IPv4-mapped ones as the IPv4 address they are', () => {
    assert.equal(toLookupAddress('203.0.113.7'), '203.0.113.7');
    assert.equal(toLookupAddress('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(toLookupAddress('2a00:1450:4001:0:0:0:0:1'), '2a00:1450:4001::1');
  });

  it('never asks for loopback, private, link-local, shared or unparseable addresses', () => {
    for (const ip of ['127.0.0.1', '::1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.1.1', 'fe80::1', 'fe80::1%eth0', 'fd00::1', '100.64.0.1', '0.0.0.0', '::', '224.0.0.1', '::ffff:192.168.1.1']) {
      assert.equal(toLookupAddress(ip), null, ip);
    }
    for (const ip of [null, '', 'unknown', '203.0.113', '203.0.113.7.1', '203.0.113.256', '1.2.3.4/24', ' 203.0.113.7', 'x'.repeat(1000)]) {
      assert.equal(toLookupAddress(ip), null, String(ip));
    }
  });
});

describe('placeOf', () => {
  it('names the city and country in the page’s language from the record’s names', () => {
    assert.deepEqual(placeOf(BERLIN, 'en'), { city: 'Berlin', country: 'Germany' });
    assert.deepEqual(placeOf(BERLIN, 'de'), { city: 'Berlin', country: 'Deutschland' });
    assert.deepEqual(placeOf(BERLIN, 'ja'), { city: 'ベルリン', country: 'ドイツ' });
    assert.deepEqual(placeOf(BERLIN, 'pt-BR'), { city: 'Berlim', country: 'Alemanha' });
    assert.deepEqual(placeOf(BERLIN, 'es'), { city: 'Berlín', country: 'Alemania' });
  });

  it('names a country the record has no name for by its ISO code (Intl), then in English; a city in English', () => {
    assert.deepEqual(placeOf(FRANCE, 'de'), { city: null, country: 'Frankreich' });
    assert.deepEqual(placeOf(FRANCE, 'ja'), { city: null, country: 'フランス' });
    // QQ is a private-use code and ZZ CLDR's "Unknown Region": neither is a name.
    for (const code of ['QQ', 'ZZ']) {
      const englishOnly = { city: { names: { en: 'Lyon' } }, country: { iso_code: code, names: { en: 'Somewhere' } } };
      assert.deepEqual(placeOf(englishOnly, 'fr'), { city: 'Lyon', country: 'Somewhere' }, code);
    }
    assert.deepEqual(placeOf({ country: { iso_code: 'DE' } }, 'fr'), { city: null, country: 'Allemagne' });
  });

  it('reads IPinfo Lite’s flat records (country only)', () => {
    assert.deepEqual(placeOf(IPINFO_JAPAN, 'de'), { city: null, country: 'Japan' });
    assert.deepEqual(placeOf(IPINFO_JAPAN, 'fr'), { city: null, country: 'Japon' });
    assert.deepEqual(placeOf({ country: 'Atlantis' }, 'en'), { city: null, country: 'Atlantis' });
  });

  it('shows nothing finer than a city, and nothing for a record without a place', () => {
    const shown = JSON.stringify(placeOf(BERLIN, 'de'));
    for (const finer of ['52.5244', '13.4105', '10178', 'Europe', 'Land Berlin', '2950159']) assert.ok(!shown.includes(finer), finer);
    for (const record of [null, undefined, {}, [], 'Berlin', 42, { country: { names: {} } }, { country: { names: { en: '  ' } } }, { city: ['Berlin'] }, { country: { iso_code: 'de' } }, { traits: { is_anycast: true } }]) {
      assert.equal(placeOf(record, 'en'), null, JSON.stringify(record));
    }
    assert.equal(placeOf({ country: { names: { en: 'x'.repeat(500) } } }, 'en')!.country!.length, 100, 'a name is cut to a sensible length');
  });
});

describe('createPlaceFinder', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-geoip-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('looks addresses up in the file in the page’s language; nothing for other addresses', async () => {
    const file = join(dir, 'city.mmdb');
    writeFileSync(file, writeMmdb(NETWORKS));
    const { logger, errors } = recordingLogger();
    const places = createPlaceFinder({ file, logger });
    assert.equal(places.isConfigured, true);
    const english = (await places.locator('en'))!;
    assert.deepEqual(english('203.0.113.7'), { city: 'Berlin', country: 'Germany' });
    assert.deepEqual(english('::ffff:203.0.113.200'), { city: 'Berlin', country: 'Germany' });
    assert.deepEqual(english('198.51.100.9'), { city: null, country: 'France' });
    assert.deepEqual((await places.locator('de'))!('203.0.113.7'), { city: 'Berlin', country: 'Deutschland' });
    for (const ip of ['192.0.2.1', '127.0.0.1', '10.0.0.1', null, 'garbage']) assert.equal(english(ip), null, String(ip));
    // An IPv4-only tree would read an IPv6 address's first 32 bits as an IPv4 address: 0xcb00:7100 is 203.0.113.0.
    assert.equal(english('cb00:7100::1'), null);
    assert.equal(english('2001:db8::1'), null);
    assert.deepEqual(errors, []);
  });

  it('places IPv6 addresses with an IPv6 database (as MaxMind’s are), IPv4 ones in it too', async () => {
    const file = join(dir, 'city6.mmdb');
    writeFileSync(file, writeMmdb([...NETWORKS, { cidr: '2001:db8:1::/48', record: BERLIN }], { ipVersion: 6 }));
    const locate = (await createPlaceFinder({ file, logger: recordingLogger().logger }).locator('ja'))!;
    assert.deepEqual(locate('2001:db8:1::42'), { city: 'ベルリン', country: 'ドイツ' });
    assert.deepEqual(locate('203.0.113.7'), { city: 'ベルリン', country: 'ドイツ' });
    assert.equal(locate('2001:db8:2::1'), null);
    assert.equal(locate('fe80::1'), null);
  });

  it('loads the file at the first lookup, once, and not before', async () => {
    const file = join(dir, 'later.mmdb');
    const places = createPlaceFinder({ file, logger: recordingLogger().logger });
    writeFileSync(file, writeMmdb(NETWORKS));
    const [first, second] = await Promise.all([places.locator('en'), places.locator('fr')]);
    rmSync(file);
    assert.deepEqual(first!('203.0.113.7'), { city: 'Berlin', country: 'Germany' });
    assert.deepEqual((await places.locator('fr'))!('203.0.113.7'), { city: 'Berlin', country: 'Allemagne' });
    assert.deepEqual(second!('198.51.100.1'), { city: null, country: 'France' });
  });

  it('without a file: no lookup at all', async () => {
    const places = createPlaceFinder({ file: null, logger: recordingLogger().logger });
    assert.equal(places.isConfigured, false);
    assert.equal(await places.locator('en'), null);
  });

  it('a file that cannot be loaded when first asked: logged once, then no places (never a failed page)', async () => {
    const file = join(dir, 'broken.mmdb');
    const valid = writeMmdb(NETWORKS);
    // The metadata is intact (the start's check passes); the record size it names is not one.
    const broken = Buffer.from(valid.toString('latin1').replace('record_size\xa1\x18', 'record_size\xa1\x07'), 'latin1');
    assert.notDeepEqual(broken, valid);
    writeFileSync(file, broken);
    assert.equal(placeDatabaseProblem(file), null);
    const { logger, errors } = recordingLogger();
    const places = createPlaceFinder({ file, logger });
    assert.equal(await places.locator('en'), null);
    assert.equal(await places.locator('de'), null);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /GEOIP_DATABASE_FILE could not be loaded/);
  });
});

describe('GEOIP_DATABASE_FILE', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-geoip-config-'));
    writeFileSync(join(dir, 'GeoLite2-City.mmdb'), writeMmdb(NETWORKS));
    writeFileSync(join(dir, 'GeoLite2-City.csv'), 'network,geoname_id\n203.0.113.0/24,2950159\n');
    writeFileSync(join(dir, 'empty.mmdb'), '');
    mkdirSync(join(dir, 'folder.mmdb'));
    // A sparse file: its size is what counts, no gigabytes are written.
    const huge = openSync(join(dir, 'huge.mmdb'), 'w');
    ftruncateSync(huge, MAX_PLACE_DATABASE_BYTES + 1);
    closeSync(huge);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const configWith = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', AUTH_SECRET: TEST_SECRET, DATA_DIR: dir, ...env });
  const problemsWith = (value: string) => {
    try {
      configWith({ GEOIP_DATABASE_FILE: value });
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      return error.problems;
    }
    assert.fail(`${value} was accepted`);
  };

  it('refuses a file larger than any city database (every worker would hold it in memory)', () => {
    assert.match(problemsWith('huge.mmdb').join('\n'), /huge\.mmdb is larger than 512 MB \(536870913 bytes\)/);
  });

  it('is off unless set; a path is absolute or under DATA_DIR, like the other files', () => {
    assert.equal(configWith({}).sessions.geoipDatabaseFile, null);
    assert.equal(configWith({ GEOIP_DATABASE_FILE: 'GeoLite2-City.mmdb' }).sessions.geoipDatabaseFile, join(dir, 'GeoLite2-City.mmdb'));
    const absolute = configWith({ GEOIP_DATABASE_FILE: join(dir, 'GeoLite2-City.mmdb') });
    assert.equal(absolute.sessions.geoipDatabaseFile, join(dir, 'GeoLite2-City.mmdb'));
    assert.ok(Object.isFrozen(absolute.sessions));
  });

  it('stops the start when the file is missing, not a file, or not a MaxMind DB', () => {
    assert.deepEqual(problemsWith('missing.mmdb'), [`GEOIP_DATABASE_FILE: no such file ${join(dir, 'missing.mmdb')}`]);
    assert.deepEqual(problemsWith('folder.mmdb'), [`GEOIP_DATABASE_FILE: ${join(dir, 'folder.mmdb')} is not a file`]);
    for (const name of ['GeoLite2-City.csv', 'empty.mmdb']) {
      const [problem, ...others] = problemsWith(name);
      assert.match(problem!, new RegExp(`^GEOIP_DATABASE_FILE: ${join(dir, name).replace(/[.]/g, '\\.')} is not a MaxMind DB file \\(\\.mmdb`), name);
      assert.deepEqual(others, []);
    }
  });
});

describe('toSessionItems with places', () => {
  const NOW = Date.UTC(2026, 0, 5, 14, 3);
  const session = (id: string, ip: string | null): SessionSummary => ({ id, userAgent: null, ip, createdAt: NOW, lastSeenAt: NOW, expiresAt: NOW + 86_400_000 });
  const list = [session('berlin', '203.0.113.7'), session('france', '198.51.100.9'), session('home', '192.168.1.2'), session('none', null)];

  it('says "{city}, {country}" in the page’s language, the country alone when that is all, and nothing otherwise', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-geoip-items-'));
    try {
      const file = join(dir, 'city.mmdb');
      writeFileSync(file, writeMmdb(NETWORKS));
      const places = createPlaceFinder({ file, logger: recordingLogger().logger });
      const placesIn = async (locale: string) => {
        const items = toSessionItems(list, null, { i18n: translations.translator(locale as 'en'), nowMs: NOW, locate: await places.locator(locale) });
        return Object.fromEntries(items.map((item) => [item.id, item.place]));
      };
      assert.deepEqual(await placesIn('en'), { berlin: 'Berlin, Germany', france: 'France', home: null, none: null });
      assert.deepEqual(await placesIn('de'), { berlin: 'Berlin, Deutschland', france: 'Frankreich', home: null, none: null });
      assert.deepEqual(await placesIn('ja'), { berlin: 'ベルリン、ドイツ', france: 'フランス', home: null, none: null });
      assert.deepEqual(
        toSessionItems(list, null, { nowMs: NOW }).map((item) => item.place),
        [null, null, null, null],
        'no lookup given: no places',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
