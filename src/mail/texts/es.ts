// Español neutro, tuteando, como suelen escribir los servicios en línea a sus usuarios. El saludo
// termina en dos puntos, como en una carta, y lo que sigue empieza con mayúscula.
import type { MailCatalog } from '../catalog.ts';

const IGNORE =
  'Si no lo has solicitado tú, puedes ignorar este mensaje; no cambiará nada mientras no se use el enlace.';
const NOT_YOU =
  'Si no has sido tú, restablece tu contraseña ahora con «¿Olvidaste tu contraseña?» y cierra tus otras sesiones.';
const NOT_YOU_FACTOR =
  'Si no has sido tú, alguien conoce tu contraseña: restablécela ahora con «¿Olvidaste tu contraseña?» y cierra tus otras sesiones.';
// «a las» no sirve para la una («a la 1:05»): la hora va entre paréntesis.
const WHEN = 'Ocurrió el {at, date, long} ({at, time, short}).';

export const es: MailCatalog = {
  greeting: '{hasName, select, yes {Hola, {name}:} other {Hola:}}',
  linkLine: '{action}:\n{url}',
  closing: '— Usher',
  messages: {
    passwordReset: {
      subject: 'Restablece tu contraseña',
      body: `Alguien ha solicitado restablecer la contraseña de la cuenta asociada a esta dirección de correo electrónico.

Con el enlace de abajo puedes elegir una contraseña nueva. Solo funciona una vez y es válido durante {validity}.

${IGNORE}`,
      action: 'Elegir una contraseña nueva',
    },
    verifyEmail: {
      subject: 'Confirma tu dirección de correo electrónico',
      body: `Confirma que esta dirección de correo electrónico pertenece a tu cuenta.

El enlace de abajo solo funciona una vez y es válido durante {validity}.

${IGNORE}`,
      action: 'Confirmar esta dirección',
    },
    passkeyAdded: {
      subject: 'Se ha añadido una llave de acceso a tu cuenta',
      body: `{hasPasskeyName, select, yes {Se acaba de añadir la llave de acceso «{passkeyName}» a tu cuenta} other {Se acaba de añadir una llave de acceso a tu cuenta}}; con ella se puede iniciar sesión sin tu contraseña. ${WHEN}

Si no has sido tú, elimínala ahora desde la página de tu cuenta y restablece tu contraseña.`,
    },
    passkeyRemoved: {
      subject: 'Se ha eliminado una llave de acceso de tu cuenta',
      body: `{hasPasskeyName, select, yes {Se acaba de eliminar la llave de acceso «{passkeyName}» de tu cuenta} other {Se acaba de eliminar una llave de acceso de tu cuenta}}; ya no sirve para iniciar sesión. ${WHEN}

${NOT_YOU}`,
    },
    identityLinked: {
      subject: 'Se ha vinculado una cuenta de {provider} a tu cuenta',
      body: `Se acaba de vincular una cuenta de {provider} a tu cuenta; desde ahora sirve para iniciar sesión en ella. ${WHEN}

Si no has sido tú, desvincúlala ahora desde la página de tu cuenta y restablece tu contraseña.`,
    },
    identityUnlinked: {
      subject: 'Se ha desvinculado una cuenta de {provider} de tu cuenta',
      body: `Se acaba de desvincular una cuenta de {provider} de tu cuenta; ya no sirve para iniciar sesión en ella. ${WHEN}

${NOT_YOU}`,
    },
    accountDeleted: {
      subject: 'Se ha eliminado tu cuenta',
      body: `Tu cuenta se acaba de eliminar, junto con sus sesiones, llaves de acceso, productos y reseñas. ${WHEN} No se enviará nada más sobre ella a esta dirección.

Si no has sido tú, alguien tenía tu contraseña o una sesión iniciada hace poco en uno de tus dispositivos. Una cuenta eliminada no se puede recuperar, pero puedes volver a registrarte con esta dirección.`,
    },
    passwordChanged: {
      subject: 'Se ha cambiado tu contraseña',
      body: `La contraseña de tu cuenta se acaba de cambiar. ${WHEN}

${NOT_YOU}`,
    },
    emailChanged: {
      subject: 'Se ha cambiado la dirección de correo de tu cuenta',
      body: `{hasNewEmail, select, yes {La dirección de correo de tu cuenta se acaba de cambiar de esta a {newEmail}.} other {La dirección de correo de tu cuenta se acaba de cambiar de esta a otra.}} ${WHEN}

Los mensajes sobre tu cuenta se envían ahora a la nueva dirección.

${NOT_YOU}`,
    },
    test: {
      subject: 'Mensaje de prueba de Usher',
      body: 'Este es un mensaje de prueba de Usher: el envío de correo funciona.',
    },
    totpEnabled: {
      subject: 'Se ha activado la verificación en dos pasos',
      body: `La verificación en dos pasos se activó en tu cuenta el {at, date, long} ({at, time, short}). Ahora, para iniciar sesión, necesitas un código de tu aplicación de autenticación además de tu contraseña.

Guarda tus códigos de recuperación en un lugar seguro: cada uno te permite iniciar sesión una vez si pierdes la aplicación.

${NOT_YOU_FACTOR}`,
    },
    totpDisabled: {
      subject: 'Se ha desactivado la verificación en dos pasos',
      body: `La verificación en dos pasos se desactivó en tu cuenta el {at, date, long} ({at, time, short}). Ahora solo necesitas tu contraseña para iniciar sesión; tus códigos de recuperación ya no funcionan.

${NOT_YOU_FACTOR}`,
    },
    recoveryCodeUsed: {
      subject: 'Se ha usado un código de recuperación para iniciar sesión',
      body: `El {at, date, long} ({at, time, short}), alguien inició sesión en tu cuenta con tu contraseña y uno de tus códigos de recuperación.

Ese código no volverá a funcionar; {left, plural, =0 {no te queda ningún código de recuperación sin usar} one {te queda # código de recuperación sin usar} other {te quedan # códigos de recuperación sin usar}}. Para obtener códigos nuevos, desactiva la verificación en dos pasos y vuelve a activarla.

${NOT_YOU_FACTOR}`,
    },
    secondFactorFailures: {
      subject: 'Se ha usado tu contraseña con códigos de inicio de sesión incorrectos',
      body: `Alguien inició sesión con tu contraseña y después introdujo {failures, plural, one {# código incorrecto} other {# códigos incorrectos seguidos}} de tu aplicación de autenticación. La verificación en dos pasos se lo impidió, y a partir de ahora los códigos siguientes solo se comprueban tras una espera cada vez mayor. ${WHEN}

Si no has sido tú, alguien conoce tu contraseña: cámbiala ahora (también puedes restablecerla) para que no pueda seguir intentándolo. Iniciar sesión desde un dispositivo que ya hayas usado sigue funcionando.`,
    },
    invitation: {
      subject: 'Te han invitado: elige tu contraseña',
      body: `Se ha creado una cuenta para ti con esta dirección de correo electrónico. Con el enlace de abajo puedes elegir su contraseña; solo funciona una vez y es válido durante {validity}.

Si no esperabas esta invitación, puedes ignorar este mensaje: sin contraseña, nadie puede iniciar sesión en esta cuenta.`,
      action: 'Elegir tu contraseña',
    },
    secondFactorsRemoved: {
      subject: 'Se han eliminado la verificación en dos pasos y las llaves de acceso de tu cuenta',
      body: `Tras una solicitud al equipo de soporte del servicio, el {at, date, long} ({at, time, short}) se eliminaron de tu cuenta la verificación en dos pasos (TOTP), sus códigos de recuperación y las llaves de acceso. Ahora puedes iniciar sesión solo con tu contraseña o con otro método vinculado.

Si no lo has solicitado tú, restablece tu contraseña y ponte en contacto con el soporte cuanto antes.`,
    },
    signinLink: {
      subject: 'Tu enlace para iniciar sesión',
      body: `Alguien ha solicitado iniciar sesión con esta dirección de correo electrónico. El enlace de abajo inicia tu sesión; solo funciona una vez y es válido durante {validity}.

Si no lo has solicitado tú, puedes ignorar este mensaje: nadie puede iniciar sesión sin el enlace.`,
      action: 'Iniciar sesión',
    },
    signinCode: {
      subject: 'Tu código para iniciar sesión: {code}',
      body: `Alguien ha solicitado iniciar sesión con esta dirección de correo electrónico. Tu código es {code}. Solo funciona una vez y es válido durante {validity}.

Si no lo has solicitado tú, puedes ignorar este mensaje: nadie puede iniciar sesión sin el código. No se lo des nunca a nadie, aunque te lo pida.`,
    },
  },
};
