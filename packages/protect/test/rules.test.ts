import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GATEHOUSE_RULES, SEED_RULES, decide, isApiPath, literalPath, normalisePath, readRequestPath } from '../src/rules.ts';

describe('normalisePath', () => {
  const cases: Array<[string, string | null]> = [
    ['/', '/'],
    ['', null],
    ['http://evil/admin', null],
    ['*', null],
    ['/admin', '/admin'],
    ['/Admin', '/admin'],
    ['/ADMIN/Users', '/admin/users'],
    ['/%61dmin', '/admin'],
    ['/%2561dmin', '/admin'],
    ['/%252561dmin', '/admin'],
    ['/admin/.', '/admin'],
    ['/admin/', '/admin'],
    ['//admin', '/admin'],
    ['///admin//x', '/admin/x'],
    ['/./admin', '/admin'],
    ['/dashboard/../admin', '/admin'],
    ['/dashboard/%2e%2e/admin', '/admin'],
    ['/../../admin', '/admin'],
    ['/admin;x', '/admin'],
    ['/admin;jsessionid=1/users', '/admin/users'],
    ['/api%2fadmin', '/api/admin'],
    ['/api\\admin', '/api/admin'],
    ['/admin?x=1#y', '/admin'],
    ['/ad%00min', null],
    ['/ad\nmin', null],
    ['/%zz', null],
    ['/%E0%A4%A', null],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} -> ${JSON.stringify(expected)}`, () => assert.equal(normalisePath(input), expected));
  }
});

describe('readRequestPath', () => {
  it('reads every path as normalisePath and literalPath do, plain paths (its fast path) included', () => {
    const segment = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_.~-]{1,8}$/),
      fc.constantFrom('Admin', 'api', 'dashboard', '.', '..', '...', '.well-known', 'jwks.json', 'admin.', '.admin', '', '%61dmin', '%2F', 'a;b', 'a\\b', '%zz', ' x', '%2e%2e'),
    );
    const path = fc
      .tuple(fc.array(segment, { minLength: 0, maxLength: 6 }), fc.boolean(), fc.constantFrom('', '?x=1', '#f', '?a=/admin'))
      .map(([segments, trailingSlash, query]) => `/${segments.join('/')}${trailingSlash ? '/' : ''}${query}`);
    fc.assert(
      fc.property(path, (raw) => {
        const resolved = normalisePath(raw);
        const literal = literalPath(raw);
        const expected = resolved === null || literal === null ? null : { resolved, literal };
        assert.deepEqual(readRequestPath(raw), expected, raw);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('decide (the seed rules, in order)', () => {
  const nobody = null;
  const user = { roles: [] };
  const editor = { roles: ['EDITOR'] };
  const admin = { roles: ['ADMIN'] };

  type Expect = 'allow' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'BAD_REQUEST';
  const table: Array<[string, Expect, Expect, Expect]> = [
    // path, no session, a user, an ADMIN
    ['/', 'allow', 'allow', 'allow'],
    ['/about', 'allow', 'allow', 'allow'],
    ['/auth/signin', 'allow', 'allow', 'allow'],
    ['/dashboard', 'UNAUTHENTICATED', 'allow', 'allow'],
    ['/dashboard/settings/x', 'UNAUTHENTICATED', 'allow', 'allow'],
    ['/dashboards', 'allow', 'allow', 'allow'],
    ['/admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/admin/users/1', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/administrator', 'allow', 'allow', 'allow'],
    ['/api', 'UNAUTHENTICATED', 'allow', 'allow'],
    ['/api/things', 'UNAUTHENTICATED', 'allow', 'allow'],
    ['/api/admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/admin/users', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/auth', 'allow', 'allow', 'allow'],
    ['/api/auth/session', 'allow', 'allow', 'allow'],
    ['/api/authx', 'UNAUTHENTICATED', 'allow', 'allow'],
    ['/api/health', 'allow', 'allow', 'allow'],
    ['/api/docs/openapi.json', 'allow', 'allow', 'allow'],
    // Bypass attempts: every spelling of /admin is /admin.
    ['/Admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/ADMIN', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/%61dmin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/admin/.', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['//admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/./admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/dashboard/../admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/admin;x', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/API/Admin/users', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/%61dmin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/admin/.', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['//api//admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/./admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/auth/../admin/users', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/admin;x/users', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/health/../admin', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/ad%00min', 'BAD_REQUEST', 'BAD_REQUEST', 'BAD_REQUEST'],
    // Regressions (review): an absolute-form target, and dot segments that walk out of /admin for
    // the resolving reading while a router still sees them under /admin.
    ['http://evil/admin/users', 'BAD_REQUEST', 'BAD_REQUEST', 'BAD_REQUEST'],
    ['/admin/users/42%2F..%2F..%2F..', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/admin/x/../..', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/api/admin/export/..%2f..%2f..', 'UNAUTHENTICATED', 'FORBIDDEN', 'allow'],
    ['/dashboard/%2e%2e/%2e%2e', 'UNAUTHENTICATED', 'allow', 'allow'],
  ];
  for (const [path, forNobody, forUser, forAdmin] of table) {
    it(path, () => {
      const outcome = (u: { roles: string[] } | null) => {
        const decision = decide(path, u);
        return decision.action === 'allow' ? 'allow' : decision.reason;
      };
      assert.equal(outcome(nobody), forNobody, 'no session');
      assert.equal(outcome(user), forUser, 'a user');
      assert.equal(outcome(editor), forUser, 'a user with another role');
      assert.equal(outcome(admin), forAdmin, 'an ADMIN');
    });
  }

  it('lets a downstream app change the rules', () => {
    const rules = { ...GATEHOUSE_RULES, protectedPrefixes: ['/app'], roleRequirements: [{ prefix: '/app/billing', role: 'BILLING' }] };
    assert.deepEqual(decide('/app/billing', { roles: ['ADMIN'] }, rules), { action: 'deny', reason: 'FORBIDDEN' });
    assert.deepEqual(decide('/app/billing', { roles: ['BILLING'] }, rules), { action: 'allow' });
    assert.deepEqual(decide('/dashboard', null, rules), { action: 'allow' });
  });

  it('requires a role in the active organization where organizationRoles say so', () => {
    const rules = { ...SEED_RULES, organizationRoles: [{ prefix: '/billing', roles: ['OWNER', 'ADMIN'] }, { prefix: '/api/billing/refunds', roles: ['OWNER'] }] };
    const deny = { action: 'deny', reason: 'ORGANIZATION_ROLE_REQUIRED' };
    assert.deepEqual(decide('/billing', null, rules), { action: 'deny', reason: 'UNAUTHENTICATED' }, 'outside the matcher, an organization rule still needs a session');
    assert.deepEqual(decide('/billing/invoices', { roles: [] }, rules), deny, 'no active organization');
    assert.deepEqual(decide('/billing/invoices', { roles: [], org: null }, rules), deny, 'org: null');
    assert.deepEqual(decide('/billing', { roles: ['ADMIN'], org: { roles: ['MEMBER'] } }, rules), deny, 'a user role is not an organization role');
    assert.deepEqual(decide('/billing', { roles: [], org: { roles: ['ADMIN'] } }, rules), { action: 'allow' });
    assert.deepEqual(decide('/BILLING/%2e/x', { roles: [], org: { roles: ['MEMBER'] } }, rules), deny, 'normalised like every rule');
    assert.deepEqual(decide('/billingx', { roles: [], org: { roles: ['MEMBER'] } }, rules), { action: 'allow' }, 'a prefix covers its segments only');
    // Every rule covering the path must be met.
    assert.deepEqual(decide('/api/billing/refunds', { roles: [], org: { roles: ['ADMIN'] } }, rules), deny);
    assert.deepEqual(decide('/api/billing/refunds/1', { roles: [], org: { roles: ['OWNER'] } }, rules), { action: 'allow' });
    assert.deepEqual(decide('/api/other', { roles: [], org: null }, rules), { action: 'allow' }, 'other paths are untouched');
    const exempting = { ...GATEHOUSE_RULES, organizationRoles: [{ prefix: '/api/auth/org-only', roles: ['OWNER'] }] };
    assert.deepEqual(decide('/api/auth/org-only', { roles: [] }, exempting), deny, 'public prefixes do not exempt an organization rule');
  });

  it('requires the token scopes scopeRequirements name, all of every covering rule, before roles', () => {
    const rules = { ...SEED_RULES, scopeRequirements: [{ prefix: '/items', scopes: ['read:items'] }, { prefix: '/items/write', scopes: ['write:items'] }, { prefix: '/api/admin/audit', scopes: ['audit'] }] };
    const deny = (scopes: string[]) => ({ action: 'deny', reason: 'INSUFFICIENT_SCOPE', scopes });
    assert.deepEqual(decide('/items', null, rules), { action: 'deny', reason: 'UNAUTHENTICATED' }, 'outside the matcher, a scope rule still needs a token');
    assert.deepEqual(decide('/items', { roles: ['ADMIN'] }, rules), deny(['read:items']), 'a session token carries no scope; roles are no scopes');
    assert.deepEqual(decide('/items/1', { roles: [], scopes: ['read:items'] }, rules), { action: 'allow' });
    assert.deepEqual(decide('/items/write', { roles: [], scopes: ['write:items'] }, rules), deny(['read:items', 'write:items']), 'every covering rule');
    assert.deepEqual(decide('/ITEMS/%2e/write/x', { roles: [], scopes: ['read:items'] }, rules), deny(['read:items', 'write:items']), 'normalised like every rule');
    assert.deepEqual(decide('/itemsx', { roles: [], scopes: [] }, rules), { action: 'allow' }, 'a prefix covers its segments only');
    assert.deepEqual(decide('/api/admin/audit', { roles: [], scopes: ['audit'] }, rules), { action: 'deny', reason: 'FORBIDDEN' }, 'and the role rules still apply');
    assert.deepEqual(decide('/api/admin/audit', { roles: ['ADMIN'], scopes: ['audit'] }, rules), { action: 'allow' });
    assert.deepEqual(decide('/api/other', { roles: [], scopes: ['read:items'], isMachine: true }, rules), { action: 'deny', reason: 'FORBIDDEN' }, 'a machine only where a scope rule opts in');
    assert.deepEqual(decide('/items', { roles: [], scopes: ['read:items'], isMachine: true }, rules), { action: 'allow' });
    assert.deepEqual(decide('/', { roles: [], isMachine: true }, rules), { action: 'allow' }, 'public paths stay public');
    const exempting = { ...GATEHOUSE_RULES, scopeRequirements: [{ prefix: '/api/auth/scoped', scopes: ['x'] }] };
    assert.deepEqual(decide('/api/auth/scoped', { roles: [] }, exempting), deny(['x']), 'public prefixes do not exempt a scope rule');
  });

  it('reads a path literally too: %2F stays inside its segment and .. is a name', () => {
    assert.equal(literalPath('/admin/users/42%2F..%2F..'), '/admin/users/42/../..');
    assert.equal(normalisePath('/admin/users/42%2F..%2F..'), '/admin');
    assert.equal(literalPath('/a/../b'), '/a/../b');
  });

  it('gives downstream apps the seed rules exactly: no exemptions for paths named like ours', () => {
    assert.deepEqual(decide('/api/auth/callback', null, SEED_RULES), { action: 'deny', reason: 'UNAUTHENTICATED' });
    assert.deepEqual(decide('/api/health', null, SEED_RULES), { action: 'deny', reason: 'UNAUTHENTICATED' });
    assert.deepEqual(decide('/api/auth/callback', null), { action: 'allow' }, 'Gatehouse itself exempts its own');
  });

  it('tells API paths from pages', () => {
    assert.equal(isApiPath('/api/admin'), true);
    assert.equal(isApiPath('/API/x'), true);
    assert.equal(isApiPath('/admin'), false);
    assert.equal(isApiPath('/apiary'), false);
  });
});
