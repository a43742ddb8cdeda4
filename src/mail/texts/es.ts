// Español neutro, tuteando, como suelen escribir los servicios en línea a sus usuarios. El saludo
// termina en dos puntos, como en una carta, y lo que sigue empieza con mayúscula.
import type { MailLayout } from '../catalog.ts';

const IGNORE =
  'Si no lo has solicitado tú, puedes ignorar este mensaje; no cambiará nada mientras no se use el enlace.';
const NOT_YOU =
  'Si no has sido tú, restablece tu contraseña ahora con «¿Olvidaste tu contraseña?» y cierra tus otras sesiones.';
// «a las» no sirve para la una («a la 1:05»): la hora va entre paréntesis.
const WHEN = 'Ocurrió el {at, date, long} ({at, time, short}).';

export const es: MailLayout = {
  greeting: '{hasName, select, yes {Hola, {name}:} other {Hola:}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
};

/** Sentences that mails of several features say alike (PHRASES, mail/index.ts). */
export const esPhrases = { IGNORE, NOT_YOU, WHEN } as const;
