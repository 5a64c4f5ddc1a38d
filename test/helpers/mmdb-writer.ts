/**
 * A small MaxMind DB (.mmdb) writer for the tests, from the public format
 * (https://maxmind.github.io/MaxMind-DB/): a binary search tree of 24-bit records, the 16-byte
 * zero separator, a data section, and the metadata after "\xAB\xCD\xEFMaxMind.com". No real
 * database ships with Gatehouse and none may be downloaded, so the tests write their own with a
 * few networks; mmdb-writer.test.ts checks that mmdb-lib reads back what this wrote.
 *
 * Enough for the tests, not a general writer: values are maps, arrays, UTF-8 strings, unsigned
 * integers and booleans; no pointers into the data section (each network's record is written
 * whole); networks must not overlap.
 */
import ipaddr from 'ipaddr.js';

/** A value in the data section. Integers are written as uint32 (uint64 when a bigint). */
export type MmdbValue = string | number | bigint | boolean | readonly MmdbValue[] | { readonly [key: string]: MmdbValue };

export interface MmdbNetwork {
  /** `203.0.113.0/24`, or an IPv6 range such as `2001:db8::/32` (only in an `ipVersion: 6` database). */
  cidr: string;
  record: { readonly [key: string]: MmdbValue };
}

export interface MmdbOptions {
  /** 4: an IPv4 tree (32 bits deep); 6: IPv6, with IPv4 networks at ::a.b.c.d as MaxMind's files have them. Default 4. */
  ipVersion?: 4 | 6;
  databaseType?: string;
  languages?: readonly string[];
  description?: string;
  buildEpochSeconds?: number;
}

const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex');
const RECORD_SIZE = 24;
const MAX_RECORD_VALUE = 2 ** RECORD_SIZE - 1;

// The data types' numbers (the spec's "Data Field Format"); 8 and up are written as "extended".
const UTF8 = 2;
const UINT32 = 6;
const MAP = 7;
const UINT16 = 5;
const UINT64 = 9;
const ARRAY = 11;
const BOOLEAN = 14;

/** A control byte (and extended-type byte) with the size encoded as the spec says. */
function controlBytes(type: number, size: number): Buffer {
  const typeBits = type <= 7 ? type << 5 : 0;
  const extended = type <= 7 ? [] : [type - 7];
  if (size < 29) return Buffer.from([typeBits | size, ...extended]);
  if (size < 29 + 256) return Buffer.from([typeBits | 29, ...extended, size - 29]);
  if (size < 285 + 65_536) {
    const rest = size - 285;
    return Buffer.from([typeBits | 30, ...extended, rest >> 8, rest & 0xff]);
  }
  const rest = size - 65_821;
  return Buffer.from([typeBits | 31, ...extended, (rest >> 16) & 0xff, (rest >> 8) & 0xff, rest & 0xff]);
}

/** An unsigned integer in as few big-endian bytes as it needs (zero in none). */
function unsignedBytes(value: bigint): Buffer {
  const bytes: number[] = [];
  for (let rest = value; rest > 0n; rest >>= 8n) bytes.unshift(Number(rest & 0xffn));
  return Buffer.from(bytes);
}

/** One value of the data section, encoded. */
export function encodeMmdbValue(value: MmdbValue): Buffer {
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([controlBytes(UTF8, bytes.length), bytes]);
  }
  if (typeof value === 'boolean') return controlBytes(BOOLEAN, value ? 1 : 0);
  if (typeof value === 'number' || typeof value === 'bigint') {
    const integer = BigInt(value);
    if (integer < 0n) throw new RangeError('the test writer writes unsigned integers only');
    const type = typeof value === 'bigint' ? UINT64 : integer <= 0xffffn ? UINT16 : UINT32;
    if (type === UINT32 && integer > 0xffffffffn) throw new RangeError('pass a bigint for integers above 2^32 - 1');
    const bytes = unsignedBytes(integer);
    return Buffer.concat([controlBytes(type, bytes.length), bytes]);
  }
  if (Array.isArray(value)) {
    return Buffer.concat([controlBytes(ARRAY, value.length), ...value.map((item: MmdbValue) => encodeMmdbValue(item))]);
  }
  const entries = Object.entries(value as { readonly [key: string]: MmdbValue });
  return Buffer.concat([controlBytes(MAP, entries.length), ...entries.flatMap(([key, item]) => [encodeMmdbValue(key), encodeMmdbValue(item)])]);
}

/** A node of the tree being built: each side another node, a data offset, or nothing. */
interface TreeNode {
  children: [TreeNode | { dataOffset: number } | null, TreeNode | { dataOffset: number } | null];
}

/** The network's address bits, as the tree of a database of `ipVersion` walks them. */
function networkBits(cidr: string, ipVersion: 4 | 6): number[] {
  const [address, prefixLength] = ipaddr.parseCIDR(cidr);
  const bytes = address.toByteArray();
  if (address.kind() === 'ipv6' && ipVersion === 4) throw new Error(`${cidr}: an IPv6 network needs an ipVersion 6 database`);
  // In an IPv6 tree, IPv4 addresses live in ::/96 (the first 96 bits zero).
  const offsetBits = address.kind() === 'ipv4' && ipVersion === 6 ? 96 : 0;
  const bits: number[] = new Array<number>(offsetBits).fill(0);
  for (let i = 0; i < prefixLength; i++) bits.push((bytes[i >> 3]! >> (7 - (i & 7))) & 1);
  return bits;
}

/** A whole .mmdb file with `networks`. */
export function writeMmdb(networks: readonly MmdbNetwork[], options: MmdbOptions = {}): Buffer {
  const ipVersion = options.ipVersion ?? 4;

  // The data section: each network's record, one after the other.
  const data: Buffer[] = [];
  let dataLength = 0;
  const root: TreeNode = { children: [null, null] };
  for (const network of networks) {
    const encoded = encodeMmdbValue(network.record);
    const leaf = { dataOffset: dataLength };
    data.push(encoded);
    dataLength += encoded.length;

    const bits = networkBits(network.cidr, ipVersion);
    if (bits.length === 0) throw new Error(`${network.cidr}: a network of its own, please`);
    let node = root;
    for (const [depth, bit] of bits.entries()) {
      const child = node.children[bit as 0 | 1];
      if (depth === bits.length - 1) {
        if (child !== null) throw new Error(`${network.cidr} overlaps another network`);
        node.children[bit as 0 | 1] = leaf;
      } else if (child === null) {
        const next: TreeNode = { children: [null, null] };
        node.children[bit as 0 | 1] = next;
        node = next;
      } else if ('children' in child) {
        node = child;
      } else {
        throw new Error(`${network.cidr} overlaps another network`);
      }
    }
  }

  // Number the nodes breadth first (the root is node 0), then write each as two 24-bit records.
  const nodes: TreeNode[] = [root];
  for (let i = 0; i < nodes.length; i++) {
    for (const child of nodes[i]!.children) if (child !== null && 'children' in child) nodes.push(child);
  }
  const index = new Map(nodes.map((node, i) => [node, i]));
  const nodeCount = nodes.length;
  const recordValue = (child: TreeNode | { dataOffset: number } | null): number => {
    // The spec: a value above node_count points at data section offset (value - node_count - 16).
    if (child === null) return nodeCount;
    if ('children' in child) return index.get(child)!;
    return nodeCount + 16 + child.dataOffset;
  };
  const tree = Buffer.alloc(nodeCount * 6);
  for (const [i, node] of nodes.entries()) {
    const left = recordValue(node.children[0]);
    const right = recordValue(node.children[1]);
    if (left > MAX_RECORD_VALUE || right > MAX_RECORD_VALUE) throw new RangeError('too much data for 24-bit records');
    tree.writeUIntBE(left, i * 6, 3);
    tree.writeUIntBE(right, i * 6 + 3, 3);
  }

  const metadata = encodeMmdbValue({
    node_count: nodeCount,
    record_size: RECORD_SIZE,
    ip_version: ipVersion,
    database_type: options.databaseType ?? 'Gatehouse-Test-City',
    languages: [...(options.languages ?? ['en'])],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: BigInt(options.buildEpochSeconds ?? 1_767_225_600),
    description: { en: options.description ?? 'Gatehouse test database' },
  });
  return Buffer.concat([tree, Buffer.alloc(16), ...data, METADATA_MARKER, metadata]);
}
