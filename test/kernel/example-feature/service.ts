import type { InTransaction } from '../../../src/db/transactions.ts';
import type { Journal } from '../../../src/kernel/journal.ts';
import { AppError } from '../../../src/shared/errors.ts';
import type { NotesObservers } from './metrics.ts';
import type { Note, NotesRepository } from './repository.ts';

export interface NotesUnit {
  notes: NotesRepository;
}

export interface NotesPolicy {
  /** EXAMPLE_NOTE_MAX_LENGTH. */
  maxLength: number;
}

export interface NotesDeps {
  notes: NotesRepository;
  transaction: InTransaction<NotesUnit & { journal: Journal }>;
  policy: NotesPolicy;
  observe: NotesObservers;
  now: () => number;
}

/** Notes: each one added is recorded in the audit log with the note, in one transaction. */
export class NotesService {
  readonly #d: NotesDeps;

  constructor(deps: NotesDeps) {
    this.#d = deps;
  }

  async add(userId: bigint, text: string): Promise<Note> {
    if ([...text].length > this.#d.policy.maxLength)
      throw new AppError('VALIDATION_FAILED', `text: at most ${this.#d.policy.maxLength} characters.`);
    const note = await this.#d.transaction(async ({ notes, journal }) => {
      const added = await notes.add(userId, text, this.#d.now());
      await journal.record({ type: 'example.note_added', userId, details: { noteId: String(added.id) } });
      return added;
    });
    this.#d.observe.noteAdded();
    return note;
  }

  list(userId: bigint): Promise<Note[]> {
    return this.#d.notes.list(userId);
  }
}
