/** SCIM PATCH and filters without a server: RFC 7644 §3.5.2 and the shapes Okta and Entra send; filters refused safely. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch, type Doc } from './scim-patch.ts';
import { filterToWhere, FilterError } from './scim-filter.ts';
import { pageOf } from './scim.routes.ts';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const patch = (doc: Doc, ...operations: unknown[]) => applyPatch(doc, { schemas: [PATCH], Operations: operations });
const ok = (result: ReturnType<typeof applyPatch>): Record<string, any> => {
  assert.ok(result.ok, JSON.stringify(result));
  return result.doc;
};

describe('SCIM PATCH', () => {
  const user: Doc = { userName: 'ada@example.com', active: true, name: { givenName: 'Ada' }, emails: [{ value: 'ada@example.com', type: 'work', primary: true }] };

  it('adds, replaces and removes with paths, value filters and sub-attributes', () => {
    assert.equal(ok(patch(user, { op: 'replace', path: 'name.givenName', value: 'Augusta' })).name.givenName, 'Augusta');
    assert.deepEqual(ok(patch(user, { op: 'replace', path: 'emails[type eq "work"].value', value: 'a@example.com' })).emails, [{ value: 'a@example.com', type: 'work', primary: true }]);
    assert.deepEqual(ok(patch(user, { op: 'remove', path: 'emails[type eq "work"]' })).emails, []);
    assert.equal(ok(patch(user, { op: 'remove', path: 'name.givenName' })).name.givenName, undefined);
    assert.deepEqual(ok(patch(user, { op: 'add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1' })).phoneNumbers, [{ type: 'mobile', value: '+1' }]);
    assert.equal(ok(patch(user, { op: 'add', path: `${ENTERPRISE}:department`, value: 'R&D' }))[ENTERPRISE].department, 'R&D');
    assert.equal(ok(patch(user, { op: 'replace', value: { [ENTERPRISE]: { employeeNumber: '7' } } }))[ENTERPRISE].employeeNumber, '7');
  });

  it("takes Okta's replace without a path and Entra's capitalised ops, string booleans and dotted keys", () => {
    assert.equal(ok(patch(user, { op: 'replace', value: { active: false } })).active, false);
    assert.equal(ok(patch(user, { op: 'Replace', path: 'active', value: 'False' })).active, false);
    assert.equal(ok(patch(user, { op: 'Add', value: { 'name.familyName': 'King' } })).name.familyName, 'King');
    const group: Doc = { displayName: 'Eng', members: [{ value: 'a' }, { value: 'b' }] };
    assert.deepEqual(ok(patch(group, { op: 'Remove', path: 'members', value: [{ value: 'a' }] })).members, [{ value: 'b' }]);
    assert.deepEqual(ok(patch(group, { op: 'remove', path: 'members[value eq "b"]' })).members, [{ value: 'a' }]);
    assert.deepEqual(ok(patch(group, { op: 'add', path: 'members', value: [{ value: 'b' }, { value: 'c' }] })).members, [{ value: 'a' }, { value: 'b' }, { value: 'c' }]);
    assert.equal(ok(patch(group, { op: 'replace', value: { id: 'ignored', displayName: 'Engineering' } })).displayName, 'Engineering');
  });

  it('refuses what it cannot apply, with a scimType, and leaves the document untouched', () => {
    for (const [body, scimType] of [
      [{ Operations: [] }, 'invalidSyntax'],
      [{ schemas: ['urn:other'], Operations: [{ op: 'add', path: 'title', value: 'x' }] }, 'invalidSyntax'],
      [{ Operations: [{ op: 'copy', path: 'title' }] }, 'invalidSyntax'],
      [{ Operations: [{ op: 'remove' }] }, 'noTarget'],
      [{ Operations: [{ op: 'replace', path: 'id', value: 'x' }] }, 'mutability'],
      [{ Operations: [{ op: 'replace', path: 'emails[type eq', value: 'x' }] }, 'invalidPath'],
      [{ Operations: [{ op: 'replace', path: 'emails[type eq "work"', value: 'x' }] }, 'invalidPath'],
      [{ Operations: [{ op: 'replace', path: 'emails[value sw 3 and]', value: 'x' }] }, 'invalidFilter'],
      [{ Operations: [{ op: 'add', path: 'title' }] }, 'invalidValue'],
      ['nope', 'invalidSyntax'],
    ] as const) {
      const result = applyPatch(user, body);
      assert.equal(result.ok, false, JSON.stringify(body));
      if (!result.ok) assert.equal(result.scimType, scimType, JSON.stringify(body));
    }
    assert.equal((user.name as Doc).givenName, 'Ada');
  });
});

describe('SCIM filters', () => {
  it('reads the operators and attributes it allows, and refuses the rest', () => {
    for (const text of ['userName eq "a"', 'userName Eq "A" and (active eq true or not (displayName pr))', 'emails[type eq "work" and value co "@x"]', 'meta.lastModified ge "2026-01-01T00:00:00Z"', `urn:ietf:params:scim:schemas:core:2.0:User:userName sw "a"`, 'externalId ne null']) {
      assert.doesNotThrow(() => filterToWhere(text, 'User'), text);
    }
    assert.doesNotThrow(() => filterToWhere('members eq "x" and displayName eq "Eng"', 'Group'));
    for (const text of ['password eq "x"', 'userName eq', 'active gt true', 'meta.created gt "yesterday"', 'members eq "x"', 'x'.repeat(3000), `${'not ('.repeat(30)}userName eq "a"${')'.repeat(30)}`]) {
      assert.throws(() => filterToWhere(text, 'User'), FilterError, text.slice(0, 40));
    }
  });

  it('pages from 1 and caps the count', () => {
    assert.deepEqual(pageOf({}, 200), { startIndex: 1, count: 200 });
    assert.deepEqual(pageOf({ startIndex: '0', count: '5000' }, 200), { startIndex: 1, count: 200 });
    assert.deepEqual(pageOf({ startIndex: '3', count: '-1' }, 200), { startIndex: 3, count: 0 });
    assert.deepEqual(pageOf({ startIndex: 'x', count: '1e9' }, 200), { startIndex: 1, count: 200 });
  });
});
