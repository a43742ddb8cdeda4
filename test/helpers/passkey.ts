// A software WebAuthn authenticator (ES256, "none" attestation) for tests without a browser: it
// makes the same JSON a browser hands to Usher, and can be told to misbehave (wrong origin,
// reused counter, forged signature, no user verification) to show each check refuses it.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

export interface CreationOptions {
  challenge: string;
  rp: { id: string };
  user: { id: string };
}
export interface RequestOptions {
  challenge: string;
  rpId: string;
}

export interface Misbehaviour {
  origin?: string;
  rpId?: string;
  /** Counter to report instead of the next one. */
  counter?: number;
  /** Flip a bit of the signature. */
  forge?: boolean;
  userHandle?: string;
  /** A touch-only key: the user-present flag without user verification (no PIN, no biometric). */
  presenceOnly?: boolean;
}

export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  readonly #privateKey: KeyObject;
  readonly #cosePublicKey: Uint8Array;
  readonly origin: string;
  /** 0 and left there when `usesCounter` is false, as many platform authenticators do. */
  counter = 0;
  readonly usesCounter: boolean;
  userHandle = '';

  constructor(origin: string, options: { usesCounter?: boolean } = {}) {
    this.origin = origin;
    this.usesCounter = options.usesCounter ?? true;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = new Map<number, number | Uint8Array>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, Buffer.from(jwk.x ?? '', 'base64url')],
      [-3, Buffer.from(jwk.y ?? '', 'base64url')],
    ]);
    this.#cosePublicKey = isoCBOR.encode(cose);
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  #clientData(type: string, challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** navigator.credentials.create(), as RegistrationResponseJSON. */
  create(options: CreationOptions, bad: Misbehaviour = {}) {
    this.userHandle = options.user.id;
    const clientData = this.#clientData('webauthn.create', options.challenge, bad.origin ?? this.origin);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      sha256(bad.rpId ?? options.rp.id),
      Buffer.from([bad.presenceOnly ? 0x41 : 0x45]), // UP, (UV,) AT
      this.#counterBytes(this.counter),
      Buffer.alloc(16), // AAGUID
      idLength,
      this.credentialId,
      this.#cosePublicKey,
    ]);
    const attestation = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, string>>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientData),
        attestationObject: b64url(attestation),
        transports: ['internal'],
      },
      clientExtensionResults: {},
    };
  }

  /** navigator.credentials.get(), as AuthenticationResponseJSON. */
  get(options: RequestOptions, bad: Misbehaviour = {}) {
    if (this.usesCounter && bad.counter === undefined) this.counter += 1;
    const clientData = this.#clientData('webauthn.get', options.challenge, bad.origin ?? this.origin);
    const authData = Buffer.concat([
      sha256(bad.rpId ?? options.rpId),
      Buffer.from([bad.presenceOnly ? 0x01 : 0x05]), // UP(, UV)
      this.#counterBytes(bad.counter ?? this.counter),
    ]);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.#privateKey);
    if (bad.forge) signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 1;
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: bad.userHandle ?? this.userHandle,
      },
      clientExtensionResults: {},
    };
  }

  #counterBytes(counter: number): Buffer {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(counter);
    return bytes;
  }
}
