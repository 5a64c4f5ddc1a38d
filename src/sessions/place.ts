/**
 * A session's approximate place ("Berlin, Germany"), only when the operator has put an
 * IP-geolocation database on disk (GEOIP_DATABASE_FILE): a MaxMind DB file (.mmdb) such as
 * GeoLite2-City or -Country, DB-IP City or Country Lite, or IPinfo Lite, read by mmdb-lib.
 * Nothing is ever asked of a network service, and Gatehouse never downloads or updates the file.
 *
 * Only a city and a country are read from a record, never its coordinates, postal code,
 * subdivisions, network or provider: the dashboard helps a person recognise their own sessions,
 * and anything finer would tell more about them than that needs (the admin sees it too). The
 * place is a guess from the address (a VPN, a mobile carrier or a proxy puts it elsewhere), so the
 * pages call it approximate; it labels a session, it proves nothing.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Reader } from 'mmdb-lib';
import type { Logger } from '../lib/logger.ts';
import { truncate } from './session-views.ts';

/** A place's names in one language; at least one of them is there. */
export interface PlaceName {
  readonly city: string | null;
  readonly country: string | null;
}

/** The place of a session's stored address, or null (no address, a private one, not in the database). */
export type LocateAddress = (ip: string | null) => PlaceName | null;

export interface PlaceFinder {
  /** True when GEOIP_DATABASE_FILE is set. */
  readonly isConfigured: boolean;
  /**
   * A lookup in `locale` (a page's language: `en`, `pt-BR`…), or null when no database is
   * configured, or it could not be loaded (logged once). The first call loads the database.
   */
  locator(locale: string): Promise<LocateAddress | null>;
}

/** "\xAB\xCD\xEFMaxMind.com": the metadata section follows the last one in the file (the spec). */
const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex');
/** The spec's limit for the metadata section, marker included. */
const MAX_METADATA_BYTES = 128 * 1024;
/** The data type of the metadata (a map) in its control byte's top three bits. */
const MAP_TYPE = 7;
/** A name longer than any city's or country's is not one. */
const MAX_NAME_LENGTH = 100;
const ISO_COUNTRY = /^[A-Z]{2}$/;
const UNKNOWN_REGION = 'ZZ';
/** Addresses that no database places: this machine, private networks, link-local, shared (CGNAT) and the like. */
const UNPLACEABLE_RANGES = new Set(['unspecified', 'broadcast', 'multicast', 'linkLocal', 'loopback', 'carrierGradeNat', 'private', 'uniqueLocal']);

/**
 * Why `file` cannot be the database, or null. For the configuration, in every process (the CLI
 * too), so it reads only the end of the file: that it is a file, readable, and ends in a MaxMind
 * DB metadata section. The whole file is read at the first lookup (createPlaceFinder).
 */
/**
 * Far above any city database (GeoLite2-City is about 60 MB, DB-IP City Lite about 130 MB): each
 * worker holds the whole file in memory, so a wrong file must not take gigabytes.
 */
export const MAX_PLACE_DATABASE_BYTES = 512 * 1024 * 1024;

export function placeDatabaseProblem(file: string): string | null {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return `${file} is not a file`;
    size = stat.size;
    if (size > MAX_PLACE_DATABASE_BYTES) return `${file} is larger than ${MAX_PLACE_DATABASE_BYTES / 1048576} MB (${size} bytes), more than any city database: each worker would hold it in memory`;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `no such file ${file}` : `cannot read ${file} (${code ?? String(error)})`;
  }
  const length = Math.min(size, MAX_METADATA_BYTES);
  const tail = Buffer.alloc(length);
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    readSync(fd, tail, 0, length, size - length);
  } catch (error) {
    return `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const at = tail.lastIndexOf(METADATA_MARKER);
  const controlByte = at === -1 ? undefined : tail[at + METADATA_MARKER.length];
  const metadata = at === -1 ? '' : tail.subarray(at).toString('latin1');
  if (controlByte === undefined || controlByte >> 5 !== MAP_TYPE || !['node_count', 'record_size', 'ip_version'].every((key) => metadata.includes(key))) {
    return `${file} is not a MaxMind DB file (.mmdb, such as GeoLite2-City.mmdb or dbip-city-lite.mmdb; a CSV download does not work)`;
  }
  return null;
}

/**
 * The address as the database is asked for it, or null when no database could place it: not an
 * address, private, loopback, link-local. An IPv4-mapped IPv6 address (`::ffff:203.0.113.7`, as a
 * dual-stack listener reports IPv4 clients) is asked as the IPv4 address it is.
 */
export function toLookupAddress(ip: string | null): string | null {
  if (ip === null || ip.length > 64 || ip.includes('%') || isIP(ip) === 0) return null;
  const address = ipaddr.process(ip);
  return UNPLACEABLE_RANGES.has(address.range()) ? null : address.toString();
}

const regionNames = new Map<string, Intl.DisplayNames | null>();

/** Intl's name of a country (CLDR), in `locale`; null for a code Intl does not know, and for ZZ ("Unknown Region"). */
function regionName(isoCode: string, locale: string): string | null {
  if (isoCode === UNKNOWN_REGION) return null;
  if (!regionNames.has(locale)) {
    let names: Intl.DisplayNames | null = null;
    try {
      names = new Intl.DisplayNames([locale], { type: 'region', fallback: 'none' });
    } catch {
      // An unknown locale: the database's English name instead.
    }
    regionNames.set(locale, names);
  }
  try {
    return regionNames.get(locale)?.of(isoCode) ?? null;
  } catch {
    return null;
  }
}

const asName = (value: unknown): string | null => {
  if (typeof value !== 'string') return null;
  const name = value.trim();
  return name === '' ? null : truncate(name, MAX_NAME_LENGTH);
};

const field = (value: unknown, key: string): unknown => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined);

/** A `names` map's name in `locale` (`pt-BR`, else `pt`), else null. */
function localName(names: unknown, locale: string): string | null {
  return asName(field(names, locale)) ?? asName(field(names, locale.split('-')[0]!));
}

/**
 * The city and country of a database record, in `locale`. MaxMind's layout (GeoLite2, DB-IP Lite)
 * carries `names` in en, de, fr, es, pt-BR, ja, ru and zh-CN: the page's language is taken from
 * there; a country without it is named by Intl (its ISO code), and only then in English, so a
 * German page says "Deutschland" even from a database with English names only. A city without a
 * name in the language is named in English: cities have no code to ask Intl with. IPinfo Lite's
 * flat layout (`country`, `country_code`) has countries only.
 */
export function placeOf(record: unknown, locale: string): PlaceName | null {
  const country = field(record, 'country');
  let countryName: string | null;
  if (typeof country === 'string') {
    const code = field(record, 'country_code');
    countryName = (typeof code === 'string' && ISO_COUNTRY.test(code) ? regionName(code, locale) : null) ?? asName(country);
  } else {
    const code = field(country, 'iso_code');
    const names = field(country, 'names');
    countryName = localName(names, locale) ?? (typeof code === 'string' && ISO_COUNTRY.test(code) ? regionName(code, locale) : null) ?? asName(field(names, 'en'));
  }
  const cityNames = field(field(record, 'city'), 'names');
  const cityName = localName(cityNames, locale) ?? asName(field(cityNames, 'en'));
  return countryName === null && cityName === null ? null : { city: cityName, country: countryName };
}

/**
 * The places of sessions, from `file` (null: none configured, and every lookup says so).
 *
 * The database is loaded on the first lookup, not at start, and then kept: mmdb-lib reads from a
 * Buffer of the whole file, tens of MB (GeoLite2-City about 60, DB-IP City Lite more) in each
 * process that lists sessions. A process that never does, such as the CLI, which builds every
 * service, or an instance that serves only the API, should not carry it: idle RSS is a budget
 * (perf/analysis.md). The file was checked at start (placeDatabaseProblem) so a wrong path stops
 * the start; one that cannot be read or parsed when it is loaded is logged once, and sessions are
 * then shown without a place until a restart.
 */
export function createPlaceFinder({ file, logger }: { file: string | null; logger: Logger }): PlaceFinder {
  let loading: Promise<Reader<Record<string, unknown>> | null> | undefined;

  async function load(path: string): Promise<Reader<Record<string, unknown>> | null> {
    try {
      const { Reader: MmdbReader } = await import('mmdb-lib');
      return new MmdbReader<Record<string, unknown>>(await readFile(path));
    } catch (error) {
      logger.error({ file: path, err: error }, 'GEOIP_DATABASE_FILE could not be loaded: sessions are shown without a place');
      return null;
    }
  }

  return {
    isConfigured: file !== null,
    async locator(locale) {
      if (file === null) return null;
      loading ??= load(file);
      const reader = await loading;
      if (reader === null) return null;
      const isIpv4Only = reader.metadata.ipVersion === 4;
      return (ip) => {
        const address = toLookupAddress(ip);
        // An IPv4-only tree would read an IPv6 address's first 32 bits as an IPv4 one: a wrong place.
        if (address === null || (isIpv4Only && isIP(address) === 6)) return null;
        try {
          return placeOf(reader.get(address), locale);
        } catch {
          // A record the reader cannot decode (a damaged file): no place rather than no page.
          return null;
        }
      };
    },
  };
}
