// The one way account events are recorded: each event is handed to the sinks the features
// register (the audit log's records, the webhooks' deliveries), each writing its rows with the
// repositories of the change's own transaction, so that they exist exactly when the change does.
// After the commit a sink that wrote is told (the webhook sender wakes); until then nothing it
// could see was written. The journal knows no sink's tables: a feature that wants to hear of
// events registers a sink, and none imports another.
import type { InsertQueryBuilder, Kysely, QueryCreator } from 'kysely';
import type { Tables } from '../db/schema.ts';
import type { CommitHooks } from '../db/transactions.ts';
import { type Actor, asNoOne, currentActor } from './scope.ts';

export interface AccountEvent {
  /** The event's type, e.g. `password.changed`, `signin.failed`, `admin.user.disabled`. */
  type: string;
  /** The account it is about, if any. */
  userId: bigint | null;
  /** Never a secret, never a password. */
  details?: Readonly<Record<string, unknown>>;
  /** Who did it, where the request's own actor is not the answer (a sign-in: the user signing in). */
  actor?: Partial<Actor>;
}

/** An event as recorded: the request's actor, with what the event says of its own actor over it. */
export interface RecordedEvent extends Actor {
  type: string;
  userId: bigint | null;
  details: Readonly<Record<string, unknown>>;
}

/**
 * The types an event may be announced as to the world outside (the webhooks'): a feature that
 * announces declares them by module augmentation, as `Tables` gets its tables, so a misspelt
 * type fails to compile without the journal naming any.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by module augmentation.
export interface AnnouncedTypes {}
export type AnnouncedType = keyof AnnouncedTypes & string;

/** What is told outside of an event; `data` holds what the type adds to `userId`. */
export interface Announcement {
  type: AnnouncedType;
  userId: bigint;
  data: Readonly<Record<string, unknown>>;
}

/** One event as the sinks receive it. */
export interface JournalEntry {
  /** The record of it; undefined for an announcement alone (`notify`). */
  event: RecordedEvent | undefined;
  /** What is told of it outside; undefined when nothing is. */
  announcement: Announcement | undefined;
  /**
   * An event a client can repeat at its own rate (a throttled sign-in): counted in one record per
   * `tally` (its subject: an account, a network and the method) and window. Never announced.
   */
  tally?: string;
  at: Date;
}

/**
 * A feature's part of every event: the rows it writes for one, with the change's own `db`. A sink
 * writes nothing for what it does not keep (an event without an announcement, for the webhooks).
 */
export interface JournalSink {
  /** The rows of `entry`: how many were written. */
  write(db: Kysely<Tables>, entry: JournalEntry): Promise<number>;
  /** Several entries of one kind at once (a bulk import's, each with an announcement of one type). */
  writeMany(db: Kysely<Tables>, entries: readonly JournalEntry[]): Promise<number>;
  /** Told, as no one, after the commit of a change it wrote rows for. */
  committed?(): void;
  /** Its rows as a part of one statement that writes a change and its journal together. */
  // biome-ignore lint/suspicious/noExplicitAny: each sink's slots are its own.
  statement: SinkStatement<any>;
}

/**
 * The table a statement that writes a change and its journal at once names its change's rows:
 * the sign-in grant's `granted`, the session's user. A sink's rows in it are written only with one.
 */
export type Granted = { granted: { user_id: bigint } };

/**
 * A sink's rows as a data-modifying WITH of another statement, built once and run with each
 * entry's values. The only such statement is the sign-in grant's (signin/grant-repository.ts): it
 * is the exception to the rule that a feature writes only its own tables, kept for one round trip
 * on the hot path of sign-ins.
 */
export interface SinkStatement<K extends string = string> {
  /** The WITH's name, unique among the sinks. */
  readonly name: string;
  /** Where the values that change from one run to the next go. */
  readonly slots: readonly K[];
  /** The INSERT … SELECT of the rows, only once `granted` has a row, with `slots` as its values. */
  insert(
    db: QueryCreator<Tables & Granted>,
    slots: Readonly<Record<K, never>>,
    // biome-ignore lint/suspicious/noExplicitAny: the statement reads only the count of its rows.
  ): InsertQueryBuilder<any, any, any>;
  /** The slots' values for `entry`; values that write nothing when the sink keeps nothing of it. */
  values(entry: JournalEntry): Readonly<Record<K, unknown>>;
}

export interface JournalDeps {
  now: () => number;
  /** The features' sinks, in the order they write. */
  sinks: readonly JournalSink[];
  /** Told each event once its change committed, and each `count`ed one (the account metrics). */
  onEvent?: (type: string, details?: Readonly<Record<string, unknown>>) => void;
}

function recorded(event: AccountEvent, actor: Actor): RecordedEvent {
  return { ...actor, ...event.actor, type: event.type, userId: event.userId, details: event.details ?? {} };
}

export class Journal {
  readonly #db: Kysely<Tables>;
  readonly #commit: CommitHooks;
  readonly #deps: JournalDeps;

  constructor(db: Kysely<Tables>, commit: CommitHooks, deps: JournalDeps) {
    this.#db = db;
    this.#commit = commit;
    this.#deps = deps;
  }

  /** The record of `event`, and its announcement when given. */
  async record(event: AccountEvent, announce?: Announcement): Promise<void> {
    await this.#write({ event: recorded(event, currentActor()), announcement: announce, at: this.#at() });
    this.#counted(event);
  }

  /** An event a client can repeat at its own rate (see `JournalEntry.tally`): never announced. */
  async tally(event: AccountEvent, subject: string): Promise<void> {
    await this.#write({
      event: recorded(event, currentActor()),
      announcement: undefined,
      tally: subject,
      at: this.#at(),
    });
    this.#counted(event);
  }

  /** An event the metrics count that leaves no record (a forgot-password ask, a refused link). */
  count(type: string): void {
    this.#deps.onEvent?.(type);
  }

  /** The announcement of an event alone, for a change whose record is written elsewhere. */
  async notify(announcement: Announcement): Promise<void> {
    await this.#write({ event: undefined, announcement, at: this.#at() });
  }

  /** Many events of one kind at once (a bulk import), each with its announcement, of one type. */
  async recordMany(events: readonly (AccountEvent & { notify: Announcement })[]): Promise<void> {
    if (events.length === 0) return;
    const at = this.#at();
    const actor = currentActor();
    const entries = events.map((event) => ({
      event: recorded(event, actor),
      announcement: event.notify,
      at,
    }));
    for (const sink of this.#deps.sinks) this.#wrote(sink, await sink.writeMany(this.#db, entries));
  }

  /**
   * The entry of an event for a repository that writes it in a statement of its own (a sign-in's
   * session grant, with the sinks' `statement`s or their `write`s), which hands what each sink
   * wrote to `written` after the commit.
   */
  prepare(event: AccountEvent, announce: Announcement, at: Date): JournalEntry {
    return { event: recorded(event, currentActor()), announcement: announce, at };
  }

  /** After the commit of a prepared entry: `counts` are each sink's rows, in the sinks' order. */
  written(counts: readonly number[]): void {
    this.#deps.sinks.forEach((sink, i) => {
      if ((counts[i] ?? 0) > 0 && sink.committed) asNoOne(() => sink.committed!());
    });
  }

  #at(): Date {
    return new Date(this.#deps.now());
  }

  async #write(entry: JournalEntry): Promise<void> {
    for (const sink of this.#deps.sinks) this.#wrote(sink, await sink.write(this.#db, entry));
  }

  #wrote(sink: JournalSink, count: number): void {
    const committed = sink.committed;
    if (count > 0 && committed) this.#commit.afterCommit(() => asNoOne(() => committed.call(sink)));
  }

  #counted(event: AccountEvent): void {
    const counted = this.#deps.onEvent;
    if (counted) this.#commit.afterCommit(() => counted(event.type, event.details));
  }
}
