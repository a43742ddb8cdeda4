import { Counter, type Registry } from 'prom-client';

/** What the notes service tells the metrics. */
export interface NotesObservers {
  noteAdded(): void;
}

export function notesMetrics(registry: Registry): NotesObservers {
  const added = new Counter({
    name: 'usher_example_notes_total',
    help: 'Notes added (the example feature).',
    registers: [registry],
  });
  added.inc(0);
  return { noteAdded: () => added.inc() };
}
