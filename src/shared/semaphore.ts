/** Thrown instead of queueing when the queue is full: the caller sheds the work at once. */
export class QueueFullError extends Error {
  constructor() {
    super('queue full');
    this.name = 'QueueFullError';
  }
}

/**
 * Lets at most `limit` tasks run at once; later ones wait in arrival order, at most `maxWaiting`
 * of them, so a flood turns into fast refusals instead of memory and latency without bound.
 */
export class Semaphore {
  readonly #limit: number;
  readonly #maxWaiting: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number, maxWaiting = Number.POSITIVE_INFINITY) {
    this.#limit = limit;
    this.#maxWaiting = maxWaiting;
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limit) {
      if (this.#waiting.length >= this.#maxWaiting) throw new QueueFullError();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter, so `running` stays correct without a re-check.
      if (next) next();
      else this.#running--;
    }
  }
}
