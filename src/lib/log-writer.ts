/**
 * Where the server's log lines go: standard output (or error), without ever blocking the event
 * loop or the exit. A pipe or socket (a log collector, systemd, `| tee`) is written through a
 * non-blocking handle driven by the event loop; a file or terminal through asynchronous writes,
 * one at a time. Lines wait in a bounded buffer: when the reader is slow or gone and the buffer is
 * full, new lines are dropped and counted (`dropped`), never waited for. A vanished reader
 * (EPIPE) turns the writer off; the process carries on. Nothing is flushed synchronously at exit:
 * `flush()` gives what is buffered a bounded time during a graceful shutdown.
 *
 * Why not pino's own destinations: a synchronous write to a pipe whose reader stopped reading
 * parks the main thread in the kernel (the event loop, and so every timer, including the shutdown
 * watchdog, stops with it), and an asynchronous one flushes synchronously at exit.
 */
import { fstatSync, write as fsWrite } from 'node:fs';
import { Socket } from 'node:net';

/** What may wait to be written; beyond it lines are dropped (counted). */
const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export type LogFormat = 'json' | 'pretty';

export interface LogWriter {
  /** One JSON line (pino calls this); never blocks, never throws. */
  write(line: string): void;
  /** Lines dropped because the buffer was full or the reader gone. */
  readonly dropped: number;
  /** Bytes waiting to be written. */
  readonly buffered: number;
  /** Resolves when the buffer is empty or after `timeoutMs`, whichever is first. */
  flush(timeoutMs: number): Promise<void>;
}

type Sink = { write(text: string): boolean; pending(): number };

const FLUSH_POLL_MS = 10;

/**
 * One writer per file descriptor per process (pino's loggers and Fastify's share it), made on
 * first use: a process that never logs (a test at level silent) opens nothing.
 */
const writers = new Map<string, LogWriter>();

export function logWriterFor(fd: 1 | 2, options: { format?: LogFormat; maxBufferedBytes?: number } = {}): LogWriter {
  const key = `${fd}:${options.format ?? 'json'}:${options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES}`;
  let writer = writers.get(key);
  if (writer === undefined) {
    writer = createLogWriter(fd, options);
    writers.set(key, writer);
  }
  return writer;
}

export function createLogWriter(fd: number, options: { format?: LogFormat; maxBufferedBytes?: number } = {}): LogWriter {
  const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const format = options.format === 'pretty' ? prettyLine : (line: string) => line;
  let sink: Sink | null | undefined;
  let dropped = 0;
  let isBroken = false;

  function open(): Sink | null {
    let isStream = false;
    try {
      const stat = fstatSync(fd);
      isStream = stat.isFIFO() || stat.isSocket();
    } catch {
      return null;
    }
    return isStream ? socketSink() : fileSink();
  }

  /**
   * A pipe or socket: libuv writes it when the reader is ready; `writableLength` is what waits.
   * The lines of one turn of the event loop go out as one write: a line per request under load
   * would otherwise be a system call per request (a fifth of a fast route's time in the profiles).
   * What is still batched when the process exits is written then (the kernel takes what fits).
   */
  function socketSink(): Sink {
    const socket = new Socket({ fd, readable: false, writable: true });
    socket.on('error', () => {
      isBroken = true;
      socket.destroy();
    });
    // The handle must not keep the process alive once everything else is done.
    socket.unref();
    let batch: string[] = [];
    let batchedBytes = 0;
    let isScheduled = false;
    const writeBatch = () => {
      isScheduled = false;
      if (batch.length === 0) return;
      const text = batch.length === 1 ? batch[0]! : batch.join('');
      batch = [];
      batchedBytes = 0;
      if (isBroken) return;
      try {
        socket.write(text);
      } catch {
        dropped += 1;
      }
    };
    process.on('exit', writeBatch);
    return {
      write(text) {
        batch.push(text);
        batchedBytes += text.length;
        if (!isScheduled) {
          isScheduled = true;
          setImmediate(writeBatch);
        }
        return true;
      },
      pending: () => (isBroken ? 0 : socket.writableLength + batchedBytes),
    };
  }

  /** A file or terminal: one asynchronous write at a time from our own queue. */
  function fileSink(): Sink {
    const queue: string[] = [];
    let queuedBytes = 0;
    let isWriting = false;
    const pump = () => {
      if (isWriting || queue.length === 0 || isBroken) return;
      const chunk = queue.join('');
      queue.length = 0;
      isWriting = true;
      const bytes = Buffer.from(chunk);
      const writeFrom = (offset: number) => {
        fsWrite(fd, bytes, offset, bytes.length - offset, null, (error, written) => {
          if (error !== null) {
            isBroken = true;
            isWriting = false;
            queuedBytes = 0;
            return;
          }
          if (offset + written < bytes.length) return writeFrom(offset + written);
          queuedBytes -= bytes.length;
          isWriting = false;
          pump();
        });
      };
      writeFrom(0);
    };
    return {
      write(text) {
        queue.push(text);
        queuedBytes += Buffer.byteLength(text);
        pump();
        return true;
      },
      pending: () => queuedBytes,
    };
  }

  return {
    write(line) {
      if (sink === undefined) sink = open();
      if (sink === null || isBroken) {
        dropped += 1;
        return;
      }
      const text = format(line);
      if (sink.pending() + text.length > maxBufferedBytes) {
        dropped += 1;
        return;
      }
      try {
        sink.write(text);
      } catch {
        dropped += 1;
      }
    },
    get dropped() {
      return dropped;
    },
    get buffered() {
      return sink === undefined || sink === null ? 0 : sink.pending();
    },
    flush(timeoutMs) {
      const isEmpty = () => sink === undefined || sink === null || isBroken || sink.pending() === 0;
      if (isEmpty()) return Promise.resolve();
      const giveUpAt = performance.now() + timeoutMs;
      return new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          if (!isEmpty() && performance.now() < giveUpAt) return;
          clearInterval(poll);
          resolve();
        }, FLUSH_POLL_MS);
        poll.unref();
      });
    },
  };
}

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const SHOWN_FIRST = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** `LOG_FORMAT=pretty`: `12:34:56.789 INFO  message key=value …` for a person at a terminal. */
export function prettyLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : '';
  const level = (LEVELS[Number(entry.level)] ?? String(entry.level ?? '')).padEnd(5);
  const rest = Object.entries(entry)
    .filter(([key]) => !SHOWN_FIRST.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  return `${time} ${level} ${String(entry.msg ?? '')}${rest === '' ? '' : ` ${rest}`}\n`;
}
