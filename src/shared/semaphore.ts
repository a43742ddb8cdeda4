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

/** What one lane of a LanedSemaphore may hold. */
export interface LaneLimits {
  /** Slots this lane gets before any lane beyond its own guarantee, whenever it has work waiting. */
  guaranteed: number;
  /** Slots this lane may hold at most. */
  max: number;
  /** Tasks of this lane that may wait; beyond that, QueueFullError at once. */
  maxWaiting: number;
}

/**
 * `limit` slots shared by lanes, each with its own bounded queue. A freed slot goes first to a
 * lane below its guarantee (in `lanes` order), then to the first lane below its maximum, so no
 * lane's flood can take what another is guaranteed, nor fill the queue the other waits in, while
 * a slot no lane is owed is never left idle.
 */
export class LanedSemaphore<Lane extends string> {
  readonly #limit: number;
  readonly #lanes: ReadonlyArray<[Lane, LaneLimits]>;
  #running = 0;
  readonly #runningIn = new Map<Lane, number>();
  readonly #waitingIn = new Map<Lane, Array<() => void>>();

  constructor(limit: number, lanes: ReadonlyArray<[Lane, LaneLimits]>) {
    this.#limit = limit;
    this.#lanes = lanes;
    for (const [lane] of lanes) {
      this.#runningIn.set(lane, 0);
      this.#waitingIn.set(lane, []);
    }
  }

  /** Tasks of `lane` waiting for a slot. */
  waiting(lane: Lane): number {
    return this.#waitingIn.get(lane)!.length;
  }

  /** The most slots `lane` may hold. */
  slots(lane: Lane): number {
    return this.#limitsOf(lane).max;
  }

  async run<T>(lane: Lane, task: () => Promise<T>): Promise<T> {
    const limits = this.#limitsOf(lane);
    const queue = this.#waitingIn.get(lane)!;
    // A free slot is taken at once only when nothing waits in this lane: waiters go first.
    if (this.#running < this.#limit && this.#runningIn.get(lane)! < limits.max && queue.length === 0) {
      this.#take(lane);
    } else {
      if (queue.length >= limits.maxWaiting) throw new QueueFullError();
      // #dispatch counts the slot for this lane before waking it.
      await new Promise<void>((resolve) => queue.push(resolve));
    }
    try {
      return await task();
    } finally {
      this.#running--;
      this.#runningIn.set(lane, this.#runningIn.get(lane)! - 1);
      this.#dispatch();
    }
  }

  #limitsOf(lane: Lane): LaneLimits {
    const found = this.#lanes.find(([name]) => name === lane);
    if (!found) throw new Error(`unknown lane ${lane}`);
    return found[1];
  }

  #take(lane: Lane): void {
    this.#running++;
    this.#runningIn.set(lane, this.#runningIn.get(lane)! + 1);
  }

  /** Hands free slots to waiters: guarantees first, then whoever may still grow, in lane order. */
  #dispatch(): void {
    while (this.#running < this.#limit) {
      const next =
        this.#lanes.find(
          ([lane, l]) => this.waiting(lane) > 0 && this.#runningIn.get(lane)! < l.guaranteed,
        ) ?? this.#lanes.find(([lane, l]) => this.waiting(lane) > 0 && this.#runningIn.get(lane)! < l.max);
      if (!next) return;
      const [lane] = next;
      this.#take(lane);
      this.#waitingIn.get(lane)!.shift()!();
    }
  }
}
