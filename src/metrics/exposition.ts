/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests and tools
 * that read what `/metrics` serves. It refuses what Prometheus would refuse, and a little more: a
 * sample before its family's `# TYPE`, a family declared twice, a sample name that does not belong
 * to its family's type (`_bucket`, `_sum`, `_count` for histograms…), an invalid metric or label
 * name, a badly quoted or escaped label value, a label named twice, the same series twice, a value
 * that is not a number, and a histogram whose buckets do not end at `+Inf` or decrease.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  /** The sample's own name (`…_bucket`, `…_sum`, `…_count` for a histogram). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface MetricFamily {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string | null;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export class ExpositionError extends Error {
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'ExpositionError';
  }
}

/** Every family of `text`, by name, in order. Throws ExpositionError at the first mistake. */
export function parseExposition(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily & { samples: Sample[]; helpSeen: boolean }>();
  const series = new Set<string>();
  const lines = text.split('\n');
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError(lines.length, 'the text must end with a line feed');
  lines.forEach((line, index) => {
    const number = index + 1;
    if (line === '') return;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (match === null) return; // A plain comment.
      const [, keyword, name, rest] = match as unknown as [string, 'HELP' | 'TYPE', string, string];
      if (!METRIC_NAME.test(name)) throw new ExpositionError(number, `invalid metric name "${name}"`);
      const family = families.get(name);
      if (keyword === 'TYPE') {
        if (!TYPES.has(rest as MetricType)) throw new ExpositionError(number, `unknown type "${rest}"`);
        if (family !== undefined && (family.type !== 'untyped' || family.samples.length > 0 || !family.helpSeen)) {
          throw new ExpositionError(number, `${name} is declared twice, or after its samples`);
        }
        families.set(name, { name, type: rest as MetricType, help: family?.help ?? null, samples: [], helpSeen: family?.helpSeen ?? false });
      } else {
        if (family?.helpSeen) throw new ExpositionError(number, `${name} has two HELP lines`);
        const help = unescapeHelp(rest, number);
        if (family === undefined) families.set(name, { name, type: 'untyped', help, samples: [], helpSeen: true });
        else families.set(name, { ...family, help, helpSeen: true });
      }
      return;
    }
    const sample = parseSample(line, number);
    const family = familyOf(families, sample.name);
    if (family === undefined) throw new ExpositionError(number, `${sample.name} has no # TYPE before it`);
    if (!belongs(family, sample)) throw new ExpositionError(number, `${sample.name} does not belong to the ${family.type} ${family.name}`);
    const key = `${sample.name}{${Object.entries(sample.labels).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`;
    if (series.has(key)) throw new ExpositionError(number, `the series ${key} appears twice`);
    series.add(key);
    family.samples.push(sample);
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return new Map([...families].map(([name, { helpSeen: _seen, ...family }]) => [name, family]));
}

/** The family a sample belongs to: its own name, or its name without a histogram's or summary's suffix. */
function familyOf<T extends MetricFamily>(families: Map<string, T>, name: string): T | undefined {
  const own = families.get(name);
  if (own !== undefined) return own;
  const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
  return base === undefined ? undefined : families.get(base);
}

function belongs(family: MetricFamily, sample: Sample): boolean {
  if (family.type === 'histogram') return [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`].includes(sample.name) && (sample.name !== `${family.name}_bucket` || 'le' in sample.labels);
  if (family.type === 'summary') return sample.name === family.name ? 'quantile' in sample.labels : [`${family.name}_sum`, `${family.name}_count`].includes(sample.name);
  return sample.name === family.name;
}

function parseSample(line: string, number: number): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (nameMatch === null) throw new ExpositionError(number, `a sample must start with a metric name: ${line}`);
  const name = nameMatch[0];
  let position = name.length;
  const labels: Record<string, string> = {};
  if (line[position] === '{') {
    position++;
    while (line[position] !== '}') {
      const labelMatch = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(line.slice(position));
      if (labelMatch === null) throw new ExpositionError(number, `a label must be name="value": ${line}`);
      const labelName = labelMatch[1]!;
      if (!LABEL_NAME.test(labelName) || labelName.startsWith('__')) throw new ExpositionError(number, `invalid label name "${labelName}"`);
      if (labelName in labels) throw new ExpositionError(number, `label ${labelName} given twice`);
      position += labelMatch[0].length;
      let value = '';
      for (;;) {
        const char = line[position];
        if (char === undefined) throw new ExpositionError(number, 'unterminated label value');
        position++;
        if (char === '"') break;
        if (char === '\\') {
          const escaped = line[position++];
          if (escaped === '\\') value += '\\';
          else if (escaped === '"') value += '"';
          else if (escaped === 'n') value += '\n';
          else throw new ExpositionError(number, `invalid escape \\${escaped ?? ''} in a label value`);
        } else value += char;
      }
      labels[labelName] = value;
      if (line[position] === ',') position++;
      else if (line[position] !== '}') throw new ExpositionError(number, `expected , or } after a label: ${line}`);
    }
    position++;
  }
  const rest = line.slice(position);
  const valueMatch = /^ (\S+)(?: (-?\d+))?$/.exec(rest);
  if (valueMatch === null) throw new ExpositionError(number, `expected " value [timestamp]" after the series: ${line}`);
  return { name, labels, value: parseValue(valueMatch[1]!, number) };
}

function parseValue(text: string, number: number): number {
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (lower === '+inf' || lower === 'inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new ExpositionError(number, `"${text}" is not a number`);
  return Number(text);
}

function unescapeHelp(text: string, number: number): string {
  return text.replace(/\\(.?)/g, (_, escaped: string) => {
    if (escaped === '\\') return '\\';
    if (escaped === 'n') return '\n';
    throw new ExpositionError(number, `invalid escape \\${escaped} in HELP`);
  });
}

/** Per series (labels without `le`): buckets never decrease, end at +Inf, and +Inf equals `_count`. */
function checkHistogram(family: MetricFamily): void {
  const bySeries = new Map<string, { buckets: Array<{ le: number; value: number }>; count?: number }>();
  const keyOf = (labels: Readonly<Record<string, string>>) => JSON.stringify(Object.entries(labels).filter(([k]) => k !== 'le').sort());
  for (const sample of family.samples) {
    const entry = bySeries.get(keyOf(sample.labels)) ?? { buckets: [] };
    bySeries.set(keyOf(sample.labels), entry);
    if (sample.name.endsWith('_bucket')) entry.buckets.push({ le: parseValue(sample.labels.le!, 0), value: sample.value });
    if (sample.name.endsWith('_count')) entry.count = sample.value;
  }
  for (const [key, { buckets, count }] of bySeries) {
    const sorted = [...buckets].sort((a, b) => a.le - b.le);
    if (sorted.at(-1)?.le !== Number.POSITIVE_INFINITY) throw new ExpositionError(0, `${family.name}${key}: no +Inf bucket`);
    sorted.forEach((bucket, index) => {
      if (index > 0 && bucket.value < sorted[index - 1]!.value) throw new ExpositionError(0, `${family.name}${key}: buckets decrease`);
    });
    if (count !== sorted.at(-1)!.value) throw new ExpositionError(0, `${family.name}${key}: +Inf bucket differs from _count`);
  }
}

/** The value of the sample `name` whose labels include `labels` (exactly one must match); undefined when none does. */
export function valueOf(families: Map<string, MetricFamily>, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  const family = familyOf(families, name);
  const matching = (family?.samples ?? []).filter((sample) => sample.name === name && Object.entries(labels).every(([k, v]) => sample.labels[k] === v));
  if (matching.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${matching.length} series`);
  return matching[0]?.value;
}
