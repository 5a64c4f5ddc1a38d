import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseUserSearch } from './user-search.ts';

describe('the users search syntax', () => {
  it('is a start by default, anywhere after a leading star, exact between quotes', () => {
    assert.deepEqual(parseUserSearch('ann'), { match: 'prefix', text: 'ann' });
    assert.deepEqual(parseUserSearch('  ann*  '), { match: 'prefix', text: 'ann' }, 'a trailing star is the default said out loud');
    assert.deepEqual(parseUserSearch('*ann'), { match: 'contains', text: 'ann' });
    assert.deepEqual(parseUserSearch('**ann**'), { match: 'contains', text: 'ann' });
    assert.deepEqual(parseUserSearch('"ann@example.com"'), { match: 'exact', text: 'ann@example.com' });
    assert.deepEqual(parseUserSearch('" Ann Lee "'), { match: 'exact', text: 'Ann Lee' });
  });

  it('keeps stars, quotes and wildcards inside the text as characters', () => {
    assert.deepEqual(parseUserSearch('a*b'), { match: 'prefix', text: 'a*b' });
    assert.deepEqual(parseUserSearch('*a*b*'), { match: 'contains', text: 'a*b' });
    assert.deepEqual(parseUserSearch('"ann'), { match: 'prefix', text: '"ann' }, 'one quote is a character');
    assert.deepEqual(parseUserSearch('*"ann"'), { match: 'contains', text: '"ann"' });
    assert.deepEqual(parseUserSearch('100%_'), { match: 'prefix', text: '100%_' });
  });

  it('asks for nothing when nothing is left', () => {
    for (const input of ['', '   ', '*', '***', '""', '" "', '* *']) assert.equal(parseUserSearch(input), null, JSON.stringify(input));
  });
});
