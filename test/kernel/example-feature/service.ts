import type { InTransaction } from '../../../src/db/transactions.ts';
import type { Journal } from '../../../src/kernel/journal.ts';
import type { MailUnit } from '../../../src/mail/feature.ts';
import { type AccountMail, recipient } from '../../../src/mail/index.ts';
import { AppError } from '../../../src/shared/errors.ts';
import type { UsersUnit } from '../../../src/users/feature.ts';
import { exampleMails } from './mails.ts';
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
  transaction: InTransaction<NotesUnit & UsersUnit & MailUnit & { journal: Journal }>;
  accountMail: AccountMail;
  mail: { wake(): void };
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
    // The note, its audit record and its mail commit together, or none does.
    const note = await this.#d.transaction(async (repos) => {
      const user = await repos.users.findById(userId);
      if (!user) throw new AppError('UNAUTHENTICATED', 'The session has ended; sign in again.');
      const added = await repos.notes.add(userId, text, this.#d.now());
      await repos.journal.record({
        type: 'example.note_added',
        userId,
        details: { noteId: String(added.id) },
      });
      await this.#d.accountMail.send(repos, exampleMails.noteAdded, recipient(user), {
        length: [...text].length,
      });
      return added;
    });
    this.#d.mail.wake();
    this.#d.observe.noteAdded();
    return note;
  }

  list(userId: bigint): Promise<Note[]> {
    return this.#d.notes.list(userId);
  }
}
