/**
 * A task run in the background every `intervalMs`, and at once when `wake()` is called (for
 * work that was just recorded). Runs never overlap: a wake during a run schedules one more run
 * right after it. Failures go to `onError`; the loop goes on.
 */
export class BackgroundLoop {
  readonly #task: (stopping: () => boolean) => Promise<void>;
  readonly #onError: (error: unknown) => void;
  readonly #timer: NodeJS.Timeout;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  /** `task` is given a function that turns true once stop() was called, to end long runs early. */
  constructor(
    task: (stopping: () => boolean) => Promise<void>,
    intervalMs: number,
    onError: (error: unknown) => void,
  ) {
    this.#task = task;
    this.#onError = onError;
    this.#timer = setInterval(() => this.wake(), intervalMs);
    this.#timer.unref();
  }

  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#run();
  }

  async #run(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#task(() => this.#stopped);
      } catch (error) {
        this.#onError(error);
      }
    } while (this.#again && !this.#stopped);
    this.#running = undefined;
  }

  /** Stops the timer and waits for a run in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }
}
