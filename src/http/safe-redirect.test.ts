import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { callbackFormActions, DEFAULT_CALLBACK_PATH, toCallbackUrl, toSafeLocalPath, toTrustedOriginUrl } from './safe-redirect.ts';

const ORIGIN = 'https://auth.example.com';

describe('toSafeLocalPath', () => {
  const kept: Array<[string, string]> = [
    ['/dashboard', '/dashboard'],
    ['/dashboard?tab=sessions#top', '/dashboard?tab=sessions#top'],
    ['/a/../dashboard', '/dashboard'],
    ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
  ];
  for (const [input, expected] of kept) {
    it(`keeps ${input}`, () => assert.equal(toSafeLocalPath(input, ORIGIN), expected));
  }

  const refused = [
    '',
    'dashboard',
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
    ' /dashboard',
    '/dash\nboard',
    '/\tevil',
    // Regression (review): dot segments collapsing into a protocol-relative URL.
    '/.//evil.example',
    '/..//evil.example',
    '/a/..//evil.example',
    '/%2e//evil.example',
    '/x/..\\/evil.example',
    `/${'a'.repeat(3000)}`,
  ];
  for (const input of refused) {
    it(`refuses ${JSON.stringify(input.slice(0, 40))}`, () => assert.equal(toSafeLocalPath(input, ORIGIN, '/fallback'), '/fallback'));
  }

  it('refuses values that are not strings', () => {
    for (const value of [undefined, null, 42, ['/dashboard'], { path: '/' }]) assert.equal(toSafeLocalPath(value, ORIGIN), '/');
  });
});

// ---------------------------------------------------------------------------------------------
// TRUSTED_ORIGINS: absolute callbacks on an exact origin
// ---------------------------------------------------------------------------------------------

const TRUSTED = ['https://app.example.com', 'http://localhost:5173'];
const POLICY = { authUrl: ORIGIN, trustedOrigins: TRUSTED };

describe('toTrustedOriginUrl', () => {
  const kept: Array<[string, string]> = [
    ['https://app.example.com/dashboard?x=1', 'https://app.example.com/dashboard?x=1'],
    ['https://app.example.com', 'https://app.example.com/'],
    ['https://app.example.com/', 'https://app.example.com/'],
    ['https://app.example.com/x#section', 'https://app.example.com/x#section'],
    // As browsers resolve them: case, the default port, dot segments (encoded or not).
    ['HTTPS://APP.Example.COM/Path', 'https://app.example.com/Path'],
    ['https://app.example.com:443/x', 'https://app.example.com/x'],
    ['https://app.example.com:0443/x', 'https://app.example.com/x'],
    ['https://app.example.com:/x', 'https://app.example.com/x'],
    ['https://app.example.com/a/../b', 'https://app.example.com/b'],
    ['https://app.example.com/%2e%2e/x', 'https://app.example.com/x'],
    // What follows the authority is the app's: a fragment or query naming another host goes nowhere else.
    ['https://app.example.com#@evil.example', 'https://app.example.com/#@evil.example'],
    ['https://app.example.com?@evil.example', 'https://app.example.com/?@evil.example'],
    ['https://app.example.com/?next=https://evil.example', 'https://app.example.com/?next=https://evil.example'],
    // Sent percent-encoded, as a browser would send it.
    ['https://app.example.com/ü?q="x"', 'https://app.example.com/%C3%BC?q=%22x%22'],
    ['http://localhost:5173/callback', 'http://localhost:5173/callback'],
    ['http://LOCALHOST:5173/callback', 'http://localhost:5173/callback'],
  ];
  for (const [input, expected] of kept) {
    it(`keeps ${input}`, () => assert.equal(toTrustedOriginUrl(input, TRUSTED), expected));
  }

  const lookalike = new URL('https://аpp.example.com/').hostname; // Cyrillic а: xn--…
  const refused = [
    // Other origins: another host, scheme or port; a trailing dot is another origin too.
    'https://evil.example/',
    'HTTPS://EVIL.EXAMPLE/',
    'https://app.example.com.evil.example/',
    'https://evil.example/https://app.example.com/',
    'https://evil.example#https://app.example.com',
    'https://evil.example?https://app.example.com',
    'https://evil-app.example.com/',
    'https://example.com/',
    'https://sub.app.example.com/',
    'http://app.example.com/',
    'https://app.example.com:8443/',
    'https://app.example.com./',
    'https://app.example.com../',
    'https://APP.EXAMPLE.COM./x',
    'https://auth.example.com/dashboard',
    'http://localhost:5174/',
    'http://localhost/',
    'https://localhost:5173/',
    'http://127.0.0.1:5173/',
    'http://[::1]:5173/',
    'http://localhost.:5173/',
    // Userinfo: the host is what follows the last `@`, and credentials are never sent on.
    'https://app.example.com@evil.example/',
    'https://app.example.com:443@evil.example/',
    'https://app.example.com:pass@evil.example/',
    'https://user@app.example.com/',
    'https://user:pass@app.example.com/',
    'https://@app.example.com/',
    // Backslashes, which browsers read as slashes.
    'https://app.example.com\\@evil.example/',
    'https://app.example.com\\.evil.example/',
    'https:\\\\app.example.com/',
    'https:/\\app.example.com/',
    'https:\\/app.example.com/',
    'https://app.example.com/a\\b',
    // The scheme and `//` not written out: browsers still resolve these to a host.
    'https:app.example.com/dashboard',
    'https:/app.example.com/dashboard',
    'https:///app.example.com/',
    'https:////app.example.com/',
    '//app.example.com/dashboard',
    '///app.example.com/',
    '\\\\app.example.com/',
    'app.example.com/dashboard',
    'https://',
    'https:',
    // Other schemes.
    'javascript:alert(1)//https://app.example.com/',
    'javascript://app.example.com/%0aalert(1)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,https://app.example.com/',
    'ftp://app.example.com/',
    'wss://app.example.com/',
    'blob:https://app.example.com/uuid',
    // Percent-encoding in the authority, even where a browser would decode it to the trusted host.
    'https://app.example.com%2F@evil.example/',
    'https://app.example.com%40evil.example/',
    'https://app.example.com%2eevil.example/',
    'https://app%2Eexample.com/',
    'https://%61pp.example.com/',
    'https://app.example.com%00.evil.example/',
    // Outside ASCII: lookalikes, and characters IDNA maps onto the trusted name.
    'https://аpp.example.com/',
    `https://${lookalike}/`,
    'https://app．example.com/',
    'https://app。example.com/',
    'https://ａｐｐ.example.com/',
    'https://app.exam\u00adple.com/',
    'https://app.example.com\u200b/',
    'https://app.example.com\u2044evil.example/',
    'https://app.example.com\u2215evil.example/',
    // Control characters and whitespace, wherever they are.
    ' https://app.example.com/',
    'https://app.example.com/ ',
    '\thttps://app.example.com/',
    'https://app.example.com\t/',
    'https://app.exa\nmple.com/',
    'https://app.example.com/\r\n',
    'https://app.example.com/\u0000',
    'https://app.example.com/\u007f',
    'https://app.example.com/\u0085',
    '\u0000https://app.example.com/',
    // Ports that do not parse.
    'https://app.example.com:443.evil.example/',
    'https://app.example.com:65536/',
    'https://app.example.com:0x1bb/',
    'https://app.example.com:-443/',
    // Too long, as written or once percent-encoded.
    `https://app.example.com/${'a'.repeat(2048)}`,
    `https://app.example.com/${'"'.repeat(700)}`,
    '',
  ];
  for (const input of refused) {
    it(`refuses ${JSON.stringify(input.slice(0, 60))}`, () => assert.equal(toTrustedOriginUrl(input, TRUSTED), null));
  }

  it('refuses values that are not strings', () => {
    for (const value of [undefined, null, 42, ['https://app.example.com/'], { href: 'https://app.example.com/' }, new URL('https://app.example.com/')]) {
      assert.equal(toTrustedOriginUrl(value, TRUSTED), null);
    }
  });

  it('trusts nothing without TRUSTED_ORIGINS', () => {
    assert.equal(toTrustedOriginUrl('https://app.example.com/', []), null);
  });

  it('whatever the input, keeps only URLs a browser would take to a trusted origin, in their stable serialised form', () => {
    // Pieces of the usual tricks, put together at random with arbitrary text.
    const piece = fc.oneof(
      fc.constantFrom(
        'https:', 'http:', 'HTTPS:', '//', '/', '\\', '@', '.', ':', '443', '5173', '%2F', '%40', '%2E', '%5C', '#', '?', '..',
        'app.example.com', 'APP.example.com', 'evil.example', 'localhost', 'localhost:5173', '127.0.0.1', '[::1]', 'xn--', '．', 'а', '\t', ' ', '\n', 'javascript:',
        'https://app.example.com', 'http://localhost:5173', 'user:pass@',
      ),
      fc.string({ maxLength: 6 }),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
    );
    fc.assert(
      // Half of them start as a trusted URL does, so the tricks come after a trusted-looking start.
      fc.property(fc.constantFrom('', '', '', ...TRUSTED, 'HTTPS://APP.example.com:443'), fc.array(piece, { maxLength: 10 }), (start, pieces) => {
        const input = start + pieces.join('');
        const kept = toTrustedOriginUrl(input, TRUSTED);
        if (kept === null) return;
        const url = new URL(kept);
        assert.ok(TRUSTED.includes(url.origin), `${JSON.stringify(input)} -> ${kept}`);
        assert.equal(url.href, kept, 'what is sent is what a browser reads back');
        assert.equal(url.username + url.password, '');
        assert.ok(kept.length <= 2048);
      }),
      { numRuns: 5_000, seed: 19_02 },
    );
  });

  it('keeps any path, query and fragment on a trusted origin, as a browser would resolve them', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TRUSTED), fc.webPath(), fc.webQueryParameters(), fc.webFragments(), (origin, path, query, fragment) => {
        const input = `${origin}${path.startsWith('/') || path === '' ? path : `/${path}`}${query === '' ? '' : `?${query}`}${fragment === '' ? '' : `#${fragment}`}`;
        fc.pre(!input.includes('\\'));
        assert.equal(toTrustedOriginUrl(input, TRUSTED), new URL(input).href, input);
      }),
      { numRuns: 200, seed: 19_02 },
    );
  });

  it('refuses every URL on an origin not listed', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (input) => {
        fc.pre(!TRUSTED.includes(new URL(input).origin));
        assert.equal(toTrustedOriginUrl(input, TRUSTED), null, input);
      }),
      { numRuns: 1_000, seed: 19_02 },
    );
  });
});

describe('toCallbackUrl', () => {
  it('lands on /dashboard when no callback is given', () => {
    assert.equal(toCallbackUrl(undefined, POLICY), DEFAULT_CALLBACK_PATH);
    assert.equal(toCallbackUrl('', POLICY), DEFAULT_CALLBACK_PATH);
  });

  it('keeps a path of ours and a URL on a trusted origin', () => {
    assert.equal(toCallbackUrl('/dashboard?tab=1', POLICY), '/dashboard?tab=1');
    assert.equal(toCallbackUrl('https://app.example.com/dashboard?x=1', POLICY), 'https://app.example.com/dashboard?x=1');
    assert.equal(toCallbackUrl('http://localhost:5173/', POLICY), 'http://localhost:5173/');
  });

  it('falls back to / for anything else, as before', () => {
    for (const value of ['https://evil.example/', 'https://app.example.com@evil.example/', '//app.example.com/', 'https://app.example.com./', `${ORIGIN}/dashboard`, 'javascript:alert(1)', null, 42]) {
      assert.equal(toCallbackUrl(value, POLICY), '/', String(value));
    }
    assert.equal(toCallbackUrl('https://app.example.com/', { authUrl: ORIGIN, trustedOrigins: [] }), '/', 'nothing is trusted unless listed');
  });

  it('whatever the input, lands on our origin or a trusted one', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.webUrl(), fc.webPath(), fc.constantFrom(...TRUSTED).map((origin) => `${origin}/x`)), (input) => {
        const landing = toCallbackUrl(input, POLICY);
        const url = new URL(landing, ORIGIN);
        if (landing.startsWith('/')) {
          assert.ok(!landing.startsWith('//') && !landing.startsWith('/\\'), landing);
          assert.equal(url.origin, ORIGIN, `${JSON.stringify(input)} -> ${landing}`);
        } else {
          assert.ok(TRUSTED.includes(url.origin), `${JSON.stringify(input)} -> ${landing}`);
        }
      }),
      { numRuns: 2_000, seed: 19_02 },
    );
  });
});

describe('callbackFormActions', () => {
  it('names the one trusted origin a callback goes to, and nothing for a path of ours', () => {
    assert.deepEqual(callbackFormActions('https://app.example.com/dashboard?x=1', POLICY), ['https://app.example.com']);
    assert.deepEqual(callbackFormActions('http://localhost:5173/cb', POLICY), ['http://localhost:5173']);
    assert.deepEqual(callbackFormActions('/dashboard', POLICY), []);
    assert.deepEqual(callbackFormActions(DEFAULT_CALLBACK_PATH, POLICY), []);
  });

  it('never widens the policy for a value that is not trusted', () => {
    for (const value of ['https://evil.example/', 'https://app.example.com@evil.example/', '//evil.example/', 'https://app.example.com./', "https://app.example.com/'unsafe-inline'", 'javascript:x']) {
      const sources = callbackFormActions(value, POLICY);
      assert.ok(sources.every((source) => TRUSTED.includes(source)), `${value}: ${sources.join(' ')}`);
    }
    assert.deepEqual(callbackFormActions('https://app.example.com/', { authUrl: ORIGIN, trustedOrigins: [] }), []);
  });
});
