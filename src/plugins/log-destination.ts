// Where log lines go by default: stdout through pino's asynchronous destination (sonic-boom), in
// batches. Handed lines one by one, sonic-boom starts a write (a round trip through libuv's thread
// pool) whenever none is in flight, so under load each write carried a few lines, and the writes
// themselves cost more than building the lines: about 4 µs of CPU per request (docs/benchmarks.md).
// Lines now wait here until 16 KiB have gathered or 100 ms have passed, and go out in order, as
// one write; shutdown (run.ts) and process exit write what is left.
import pino, { type DestinationStream } from 'pino';

/** Lines are handed over once this many characters are waiting... */
const BATCH_CHARS = 16 * 1024;
/** ...or this long after the first of them arrived. */
const BATCH_MS = 100;

export interface LogDestination extends DestinationStream {
  /** Hands waiting lines over, then calls back as sonic-boom's flush does. */
  flush(callback: (error?: Error) => void): void;
  flushSync(): void;
}

/** `dest`: a file descriptor or path, stdout by default. */
export function logDestination(dest: number | string = 1): LogDestination {
  const sonic = pino.destination({ dest, sync: false });
  let waiting: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
  const handOver = () => {
    clearTimeout(timer);
    timer = undefined;
    if (waiting.length === 0) return;
    const text = waiting.length === 1 ? waiting[0]! : waiting.join('');
    waiting = [];
    chars = 0;
    sonic.write(text);
  };
  // pino writes what sonic-boom still holds synchronously at exit; what waits here goes first.
  process.prependListener('exit', handOver);
  return {
    write(line: string) {
      waiting.push(line);
      chars += line.length;
      if (chars >= BATCH_CHARS) handOver();
      else if (timer === undefined) {
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
