/** Helpers the organizations tests share (not a test file itself). */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../../test/helpers/app.ts';

export function api(t: TestApp, token: string) {
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) }, ...(body !== undefined && { payload: JSON.stringify(body) }) });
  return {
    get: (url: string) => call('GET', url),
    post: (url: string, body: unknown = {}) => call('POST', url, body),
    patch: (url: string, body: unknown) => call('PATCH', url, body),
    delete: (url: string) => call('DELETE', url),
  };
}

export function assertError(response: LightMyRequestResponse, status: number, code: string, label = code): void {
  assert.equal(response.statusCode, status, `${label}: ${response.body}`);
  assert.equal(response.json().error, code, `${label}: ${response.body}`);
}

let counter = 0;
export const uniqueEmail = (label: string) => `${label}-${Date.now()}-${++counter}@example.com`;

