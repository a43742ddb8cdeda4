import { Type } from 'typebox';
import { currentSession } from '../../../src/sessions/index.ts';
import type { App } from '../../../src/shared/fastify.ts';
import { failures, success } from '../../../src/shared/schemas.ts';
import type { Note } from './repository.ts';
import type { NotesService } from './service.ts';

const NoteSchema = Type.Object(
  { id: Type.String(), text: Type.String(), createdAt: Type.String({ format: 'date-time' }) },
  { additionalProperties: false },
);
const view = (note: Note) => ({
  id: String(note.id),
  text: note.text,
  createdAt: note.createdAt.toISOString(),
});

export async function notesRoutes(app: App, { notes }: { notes: NotesService }) {
  app.post(
    '/api/example/notes',
    {
      schema: {
        summary: 'Add a note (the example feature, tests only)',
        operationId: 'addExampleNote',
        body: Type.Object({ text: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
        response: {
          201: success(NoteSchema, 'Added.'),
          ...failures(['VALIDATION_FAILED', 'UNAUTHENTICATED']),
        },
      },
      config: { auth: 'session' },
    },
    async (request, reply) => {
      const note = await notes.add(currentSession(request).userId, request.body.text);
      reply.code(201);
      return view(note);
    },
  );
  app.get(
    '/api/example/notes',
    {
      schema: {
        summary: 'Your notes (the example feature, tests only)',
        operationId: 'listExampleNotes',
        response: { 200: success(Type.Array(NoteSchema), 'Your notes.'), ...failures(['UNAUTHENTICATED']) },
      },
      config: { auth: 'session' },
    },
    async (request) => (await notes.list(currentSession(request).userId)).map(view),
  );
}
