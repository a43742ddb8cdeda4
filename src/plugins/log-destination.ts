// Where log lines go by default: stdout through pino's asynchronous destination (sonic-boom), in
// batches. Handed lines one by one, sonic-boom starts a write (a round trip through libuv's thread
// pool, some 20 µs of CPU on a small VM) whenever none is in flight, so under load each write
// carried a few lines, and the writes cost more than building the lines: about 4 µs of CPU per
// request (docs/benchmarks.md). Lines are now copied as they come into a buffer outside the
// JavaScript heap (kept as strings, they would outlive young-generation collections and be copied
// and promoted), which goes out as one write once 16 KiB have gathered or 100 ms have passed.
// 16 rather than 64: under load a batch then goes out before a young-generation collection or two
// and dies young. A 64 KiB batch lived about 40 ms at 10,000 requests a second, was promoted, and
// its memory counted toward the old generation: a full collection every 2 s (decision 140).
// Order is kept; shutdown (run.ts) and process exit write what is left.
import pino, { type DestinationStream } from 'pino';

/** A batch is handed over when this many bytes are waiting... */
const BATCH_BYTES = 16 * 1024;
/** ...or this long after its first line arrived. */
const BATCH_MS = 100;

export interface LogDestination extends DestinationStream {
  /** Hands waiting lines over, then calls back as sonic-boom's flush does. */
  flush(callback: (error?: Error) => void): void;
  flushSync(): void;
}

/** `dest`: a file descriptor or path, stdout by default. */
export function logDestination(dest: number | string = 1): LogDestination {
  // Buffers in, one write per batch (sonic-boom would otherwise split it into writes of 16 KiB).
  const sonic = pino.destination({ dest, sync: false, contentMode: 'buffer', maxWrite: BATCH_BYTES });
  let batch = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  const handOver = () => {
    clearTimeout(timer);
    timer = undefined;
    if (used === 0) return;
    // sonic-boom keeps what it is given until written: the next lines go to a new buffer.
    const full = batch.subarray(0, used);
    batch = Buffer.allocUnsafe(BATCH_BYTES);
    used = 0;
    sonic.write(full as unknown as string);
  };
  // pino writes what sonic-boom still holds synchronously at exit; what waits here goes first.
  process.prependListener('exit', handOver);
  return {
    write(line: string) {
      // Most lines are ASCII, so this mostly holds; a line that may not fit goes after the batch.
      if (used + line.length * 3 > BATCH_BYTES) {
        handOver();
        if (line.length * 3 > BATCH_BYTES) {
          sonic.write(Buffer.from(line) as unknown as string);
          return;
        }
      }
      used += batch.write(line, used);
      if (timer === undefined) {
        timer = setTimeout(handOver, BATCH_MS);
        // Waiting lines never keep the process alive: exit writes them.
        timer.unref();
      }
    },
    flush(callback) {
      handOver();
      sonic.flush(callback);
    },
    flushSync() {
      handOver();
      sonic.flushSync();
    },
  };
}
