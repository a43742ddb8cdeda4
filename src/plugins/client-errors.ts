// Requests Node's HTTP parser refuses before Fastify sees them (malformed framing, request
// smuggling attempts, oversized headers, slow clients) answered in Usher's error shape, and logged
// without the raw bytes Fastify's default handler would log (they hold cookies and tokens).
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ErrorCode } from '../shared/errors.ts';

// An ESM import of node:http evaluates every export it has, its HTTP client included: about
// 30 ms of start-up for one table (docs/benchmarks.md).
const { STATUS_CODES } = process.getBuiltinModule('node:http');

const CLIENT_ERRORS: Record<string, { status: number; code: ErrorCode; message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'REQUEST_TIMEOUT',
    message: 'The request took too long to arrive.',
  },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'HEADERS_TOO_LARGE',
    message: 'The request headers exceed 16 KiB.',
  },
};
const BAD_REQUEST = {
  status: 400,
  code: 'BAD_REQUEST' as ErrorCode,
  message: 'The request cannot be parsed as HTTP/1.1.',
};

export function clientErrorHandler(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, code, message } = CLIENT_ERRORS[error.code ?? ''] ?? BAD_REQUEST;
  this.log.debug({ code: error.code, status }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify({ error: code, message });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        "X-Content-Type-Options: nosniff\r\nContent-Security-Policy: default-src 'none'; frame-ancestors 'none'\r\n" +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
