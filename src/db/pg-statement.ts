// The hot reads' named statements on PostgreSQL, run on a pooled client without pg's Query and
// Result. pg's own path does, for every run of even a named statement: a Describe, so that the
// server sends the columns' names and types again (a RowDescription, parsed into an object per
// column); an empty row object built from those names in dictionary mode and spread into a new
// object for each row; the type parsers looked up column by column; a Query (an EventEmitter) and
// a Result; and, through pool.query, an 'error' listener added and removed and two promises
// (pg's addFields alone was 3.5 µs per user lookup in a profile under load; without all of it the
// event loop's CPU per lookup fell by about a third: decision 141). Here a statement is parsed
// and described once per connection, on its first run there, and every later run on that
// connection is Bind, Execute and Sync: values come back as text in select-list order and are
// parsed by position, with the parsers learnt from that connection's description. Kept per
// connection, they always describe the statement the server holds for it: a schema change that
// alters a prepared statement's result makes PostgreSQL refuse to run it ("cached plan must not
// change result type"), and a new connection prepares and describes it afresh.
// The protocol is pg's own "submittable" interface (client.query(object with submit())), the one
// pg-cursor and pg-query-stream use, so the client's queueing, errors and named-statement
// bookkeeping stay pg's.
import pg from 'pg';
import type { Tuple } from './prepared.ts';

/** A column's text parser: what the pool's type configuration gives for the column's type. */
type Parser = (text: string) => unknown;

/** The parts of pg's Connection a submittable writes with (pg's own Query uses the same). */
interface WireConnection {
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void };
  parse(message: { text: string; name: string; types: readonly number[] }): void;
  bind(message: { statement: string; values: readonly unknown[] }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
}

interface Field {
  dataTypeID: number;
  format: string;
}

/** pg's conversion of parameter values (Dates, Buffers, bigints, arrays), as for any pg query. */
const prepareValue = (pg as unknown as { utils: { prepareValue(value: unknown): unknown } }).utils
  .prepareValue;

const NO_TYPES: readonly number[] = [];

const ignore = () => {};

/** The pool's type configuration: the parser for a column of type `oid`. */
type ParserOf = (oid: number, format: 'text' | 'binary') => Parser;

/** Each connection's statements' column parsers, by name, from their first run's description. */
const described = new WeakMap<WireConnection, Map<string, readonly Parser[]>>();

/** One run of a named statement, as pg's client drives it: submit, then the server's messages. */
class NamedRun {
  /** Read by pg's client: it records the statement as parsed on the connection under `name`. */
  readonly name: string;
  readonly text: string;
  readonly #values: readonly unknown[];
  readonly #parserOf: ParserOf;
  #parsers: readonly Parser[] | undefined;
  #describing = false;
  #failed: Error | undefined;
  readonly #rows: Tuple[] = [];
  /**
   * Read and replaced by pg: with a query_timeout (in the pool's settings or the URL) pg wraps it
   * to clear its timer, and on a timeout calls it itself and leaves a no-op here.
   */
  callback: ((error: Error | undefined, rows: Tuple[]) => void) | undefined;

  constructor(
    name: string,
    text: string,
    values: readonly unknown[],
    parserOf: ParserOf,
    done: (error: Error | undefined, rows: Tuple[]) => void,
  ) {
    this.name = name;
    this.text = text;
    this.#values = values;
    this.#parserOf = parserOf;
    this.callback = done;
  }

  /**
   * Writes the run. pg calls this from client.query, or from the socket's data handler when the
   * connection becomes free: nothing may be thrown from here, so a failure is returned, and pg
   * reports it through handleError.
   */
  submit(connection: WireConnection): Error | null {
    const name = this.name;
    // The unnamed statement ('') is parsed and described on every run and never recorded as known.
    const known =
      name === ''
        ? undefined
        : (connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]);
    if (known !== undefined && known !== this.text)
      return new Error(`statement ${name} was prepared with a different text`);
    connection.stream.cork?.();
    try {
      if (known === undefined) {
        connection.parse({ text: this.text, name, types: NO_TYPES });
        if (name !== '') connection.submittedNamedStatements[name] = this.text;
      }
      // The values were converted before the client was taken (namedStatementRunner).
      connection.bind({ statement: name, values: this.#values });
      // Parsed here now, or by a run still in flight: described with it either way.
      this.#parsers = known === undefined ? undefined : described.get(connection)?.get(name);
      if (this.#parsers === undefined) {
        this.#describing = true;
        connection.describe({ type: 'P', name: '' });
      }
      connection.execute({ portal: '' });
      connection.sync();
    } catch (error) {
      // Part of the run may be written: the run fails, and its client is dropped with it.
      return error as Error;
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: readonly Field[] }): void {
    this.#parsers = message.fields.map((field) =>
      this.#parserOf(field.dataTypeID, field.format === 'binary' ? 'binary' : 'text'),
    );
  }

  handleDataRow(message: { fields: readonly (string | null)[] }): void {
    if (this.#failed) return;
    const parsers = this.#parsers!;
    const fields = message.fields;
    const row = new Array<unknown>(fields.length);
    try {
      for (let i = 0; i < fields.length; i++) {
        const text = fields[i];
        row[i] = text === null || text === undefined ? null : parsers[i]!(text);
      }
    } catch (error) {
      // Thrown here, it would escape into the socket's data handler; pg's Query also keeps a
      // parser's error for the end of the statement.
      this.#failed = error as Error;
      return;
    }
    this.#rows.push(row);
  }

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: { sendCopyFail(message: string): void }): void {
    connection.sendCopyFail('No source stream defined');
  }

  handleCopyData(): void {}

  handleError(error: Error): void {
    // A parser's error came first: it is what went wrong with this run, as pg's Query reports.
    this.#finish(this.#failed ?? error);
  }

  handleReadyForQuery(connection: WireConnection): void {
    if (this.#failed) {
      this.#finish(this.#failed);
      return;
    }
    if (this.#describing && this.name !== '') {
      const statements = described.get(connection) ?? new Map<string, readonly Parser[]>();
      described.set(connection, statements);
      // A statement that returns no rows is described as NoData: it has no parsers to learn.
      statements.set(this.name, this.#parsers ?? []);
    }
    this.#finish(undefined);
  }

  #finish(error: Error | undefined): void {
    const callback = this.callback;
    this.callback = undefined;
    callback?.(error, this.#rows);
  }
}

/**
 * Runs named statements on `pool`, each row as its values in select-list order, parsed with
 * `parserOf` (the pool's own type configuration). The name stands for the text: one name, one
 * statement, as pg requires.
 */
export function namedStatementRunner(
  pool: pg.Pool,
  parserOf: ParserOf,
  options: { readonly unnamed: boolean },
): (name: string, text: string, values: readonly unknown[]) => Promise<Tuple[]> {
  /** The clients given a listener for their 'error' event (see below). */
  const guarded = new WeakSet<pg.PoolClient>();
  return (name, text, values) =>
    new Promise((resolve, reject) => {
      // Converted here, where a value pg cannot send (its toPostgres throws) rejects the run
      // before a client is taken or a byte written: inside submit it would throw from the
      // socket's data handler when the client was not free at once.
      const sent = values.map(prepareValue);
      pool.connect((connectError, client, release) => {
        if (connectError || !client) {
          reject(connectError);
          return;
        }
        // A socket lost mid-run fails the run (pg errors its active query), then pg emits
        // 'error' on the client: without a listener that would throw from the socket's handler.
        // pool.query adds and removes one per query; one per client does here.
        if (!guarded.has(client)) {
          client.on('error', ignore);
          guarded.add(client);
        }
        let settled = false;
        const run = new NamedRun(options.unnamed ? '' : name, text, sent, parserOf, (error, rows) => {
          if (settled) return;
          settled = true;
          // As pool.query does: a client whose query failed is not given to the next caller.
          release(error);
          if (error) reject(error);
          else resolve(rows);
        });
        try {
          client.query(run as unknown as pg.QueryConfig);
        } catch (error) {
          // Finished here, and only once, should the dropped client report the run failed too.
          run.handleError(error as Error);
        }
      });
    });
}
