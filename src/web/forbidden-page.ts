/** The page a signed-in person sees for a page their roles do not open (the route guard's 403). */
import type { FastifyReply } from 'fastify';
import { createPageRenderer, sendPage } from './render.ts';

export const FORBIDDEN_CODE = 'FORBIDDEN';

export function createForbiddenPage(): (reply: FastifyReply) => FastifyReply {
  const html = createPageRenderer([]).render('error', {
    title: 'Access denied',
    code: FORBIDDEN_CODE,
    heading: 'Access denied',
    message: 'Your account does not have the role this page needs. If you think it should, ask an administrator.',
  });
  return (reply) => sendPage(reply, html, 403);
}
