import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseUserSearch } from './user-search.ts';

describe('the users search syntax', () => {
  it('is a start by default, anywhere after a leading star, exact between quotes', () => {
    assert.deepEqual(parseUserSearch('ann'), { match: 'prefix', text: 'ann', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('  ann*  '), { match: 'prefix', text: 'ann', scope: 'address-or-name' }, 'a trailing star is the default said out loud');
    assert.deepEqual(parseUserSearch('*ann'), { match: 'contains', text: 'ann', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('**ann**'), { match: 'contains', text: 'ann', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('"ann@example.com"'), { match: 'exact', text: 'ann@example.com', scope: 'address' });
    assert.deepEqual(parseUserSearch('" Ann Lee "'), { match: 'exact', text: 'Ann Lee', scope: 'address-or-name' });
  });

  it('keeps stars, quotes and wildcards inside the text as characters', () => {
    assert.deepEqual(parseUserSearch('a*b'), { match: 'prefix', text: 'a*b', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('*a*b*'), { match: 'contains', text: 'a*b', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('"ann'), { match: 'prefix', text: '"ann', scope: 'address-or-name' }, 'one quote is a character');
    assert.deepEqual(parseUserSearch('*"ann"'), { match: 'contains', text: '"ann"', scope: 'address-or-name' });
    assert.deepEqual(parseUserSearch('100%_'), { match: 'prefix', text: '100%_', scope: 'address-or-name' });
  });

  it('asks the address alone for text with an @, unless it is asked for anywhere', () => {
    assert.equal(parseUserSearch('ann@ex')?.scope, 'address');
    assert.equal(parseUserSearch('ann＠example.com')?.scope, 'address', 'a full-width at sign, an @ once normalised as addresses are');
    assert.equal(parseUserSearch('"ann@example.com"')?.scope, 'address');
    assert.equal(parseUserSearch('*@example.com')?.scope, 'address-or-name', 'anywhere asks the name too');
    assert.equal(parseUserSearch('ann lee')?.scope, 'address-or-name');
  });

  it('asks for nothing when nothing is left', () => {
    for (const input of ['', '   ', '*', '***', '""', '" "', '* *']) assert.equal(parseUserSearch(input), null, JSON.stringify(input));
  });
});
