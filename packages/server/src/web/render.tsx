import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';
import type { CurrentSession } from './session.js';
import type { Viewer } from './views.js';

/** Renders a page to an HTML document. Preact escapes every interpolated value. */
export function renderPage(page: VNode): string {
  return `<!doctype html>${renderToString(page)}`;
}

/** Sends a server-rendered page; pages are never cached (they carry CSRF tokens and personal data). */
export function sendPage(reply: FastifyReply, page: VNode, status = 200): FastifyReply {
  return reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(renderPage(page));
}

/** The signed-in person as the page header shows them, with a CSRF token for the sign-out form. */
export function viewerOf(reply: FastifyReply, current: CurrentSession): Viewer;
export function viewerOf(reply: FastifyReply, current: CurrentSession | undefined): Viewer | undefined;
export function viewerOf(reply: FastifyReply, current: CurrentSession | undefined): Viewer | undefined {
  return current && { username: current.user.username, csrf: reply.generateCsrf() };
}
