/**
 * A notice that something happened, for whoever listens: how a service says "there is work" to a
 * background loop built after it, without either holding the other.
 */
export class Signal {
  readonly #listeners: Array<() => void> = [];

  notify(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` at each notify from now on. */
  listen(listener: () => void): void {
    this.#listeners.push(listener);
  }
}
