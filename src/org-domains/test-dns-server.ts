/**
 * A stub DNS server on loopback for tests (not a test file itself): answers A, AAAA and TXT
 * questions over UDP from a table the test edits (`records`), NXDOMAIN for a name it does not know,
 * an empty answer for a type the name lacks, SERVFAIL for the names in `failing`. Just enough of
 * RFC 1035 for `dns.Resolver` pointed at it (DOMAINS_DNS_SERVER=127.0.0.1:<port>).
 */
import dgram from 'node:dgram';
import { once } from 'node:events';

export interface StubRecords {
  A?: string[];
  AAAA?: string[];
  TXT?: string[];
}

export interface StubDnsServer {
  /** `127.0.0.1:<port>`, as DOMAINS_DNS_SERVER takes it. */
  readonly address: string;
  /** By lower-case name without the final dot. */
  readonly records: Map<string, StubRecords>;
  /** Names answered with SERVFAIL. */
  readonly failing: Set<string>;
  /** The questions asked, `<name> <type>`, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

const TYPES: Record<number, keyof StubRecords> = { 1: 'A', 28: 'AAAA', 16: 'TXT' };
const TYPE_NUMBERS = { A: 1, AAAA: 28, TXT: 16 } as const;

function readName(message: Buffer, start: number): { name: string; end: number } {
  const labels: string[] = [];
  let offset = start;
  for (;;) {
    const length = message[offset];
    if (length === undefined) throw new Error('truncated name');
    if (length === 0) return { name: labels.join('.').toLowerCase(), end: offset + 1 };
    labels.push(message.subarray(offset + 1, offset + 1 + length).toString('latin1'));
    offset += 1 + length;
  }
}

function rdataOf(type: keyof StubRecords, value: string): Buffer {
  if (type === 'A') return Buffer.from(value.split('.').map(Number));
  if (type === 'AAAA') {
    const [head = '', tail = ''] = value.split('::');
    const left = head === '' ? [] : head.split(':');
    const right = tail === '' ? [] : tail.split(':');
    const groups = [...left, ...Array.from({ length: 8 - left.length - right.length }, () => '0'), ...right];
    return Buffer.concat(groups.map((group) => Buffer.from([parseInt(group, 16) >> 8, parseInt(group, 16) & 0xff])));
  }
  // A TXT value: character-strings of at most 255 bytes each.
  const bytes = Buffer.from(value, 'utf8');
  const parts: Buffer[] = [];
  for (let offset = 0; offset < bytes.length || parts.length === 0; offset += 255) {
    const chunk = bytes.subarray(offset, offset + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
  }
  return Buffer.concat(parts);
}

export async function startStubDnsServer(): Promise<StubDnsServer> {
  const socket = dgram.createSocket('udp4');
  const records = new Map<string, StubRecords>();
  const failing = new Set<string>();
  const asked: string[] = [];

  socket.on('message', (query, peer) => {
    try {
      const { name, end } = readName(query, 12);
      const qtype = query.readUInt16BE(end);
      const question = query.subarray(12, end + 4);
      const type = TYPES[qtype];
      asked.push(`${name} ${type ?? qtype}`);
      const entry = records.get(name);
      const rcode = failing.has(name) ? 2 : entry === undefined ? 3 : 0;
      const values = rcode === 0 && type !== undefined ? (entry?.[type] ?? []) : [];
      const answers = values.map((value) => {
        const rdata = rdataOf(type!, value);
        const head = Buffer.alloc(12);
        head.writeUInt16BE(0xc00c, 0); // the question's name
        head.writeUInt16BE(TYPE_NUMBERS[type!], 2);
        head.writeUInt16BE(1, 4); // IN
        head.writeUInt32BE(60, 6);
        head.writeUInt16BE(rdata.length, 10);
        return Buffer.concat([head, rdata]);
      });
      const header = Buffer.alloc(12);
      header.writeUInt16BE(query.readUInt16BE(0), 0);
      header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0480 | rcode, 2); // QR, opcode and RD echoed, AA, RA
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(answers.length, 6);
      socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
    } catch {
      // Not a question this stub understands: no answer (the resolver times out).
    }
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address();
  return {
    address: `127.0.0.1:${port}`,
    records,
    failing,
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
