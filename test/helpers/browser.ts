/**
 * A real browser for tests: `playwright-core` driving Debian's Chromium (`/usr/bin/chromium`).
 * Playwright cannot download its own browsers here, so the browser comes from apt: `.ci/run`
 * installs it, and `chromiumAvailability()` installs it as a last resort in CI when running as root.
 *
 * Outside CI a missing Chromium skips browser tests with a printed reason; in CI it is an error,
 * because a CI run must not silently skip them.
 *
 *   const chromium = chromiumAvailability();
 *   describe('sign-in page', { skip: chromium.ok ? false : chromium.reason }, () => {
 *     let browser: Browser;
 *     before(async () => { browser = await launchBrowser(); });
 *     after(() => closeBrowser(browser));
 *     it('signs in', (t) => withPage(t, browser, { baseURL }, async (page) => { ... }));
 *   });
 *
 * Everything is bounded in time: launch, actions, navigation, screenshots and close. Browser traffic
 * is meant for 127.0.0.1 only (the flags below switch off Chromium's own background traffic).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';

export type { Browser, BrowserContext, Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Launch flags known to work on these machines (headless, no sandbox as root, no background traffic). */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const SCREENSHOT_DIR = resolve(REPO_ROOT, 'test-artifacts/screenshots');

const INSTALL_TIMEOUT_MS = 10 * 60_000;
const LAUNCH_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 10_000;
/**
 * Default limits for navigations and page actions (click, fill, waits) in every new page. One
 * budget for both: a click that submits a form waits for the navigation it starts, which a shorter
 * action limit cut short (a clean-clone CI run at load average 8 timed out two refused-password
 * submissions at 10 s while their pages had arrived). Generous, since no test here measures speed.
 */
const PAGE_TIMEOUT_MS = 30_000;
const SCREENSHOT_TIMEOUT_MS = 10_000;

export type ChromiumAvailability = { ok: true } | { ok: false; reason: string };

/** CI is set and not an explicit "off" value. */
function inCI(): boolean {
  const value = process.env.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== 'false' && value !== '0';
}

function chromiumInstalled(): boolean {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function tail(text: string, max = 4000): string {
  return text.length <= max ? text : `…${text.slice(-max)}`;
}

/**
 * Installs Debian's chromium with apt, synchronously and bounded. Test files run in parallel, so
 * installs are serialised with flock and re-check before doing anything. Returns a description of
 * what went wrong, or null on success.
 */
function installChromiumWithApt(): string | null {
  const script = [
    'set -e',
    'exec 9>/tmp/gatehouse-chromium-install.lock',
    `flock -w ${Math.floor(INSTALL_TIMEOUT_MS / 1000)} 9`,
    `[ -x ${CHROMIUM_PATH} ] && exit 0`,
    'apt-get update -qq',
    'apt-get install -y -qq -o DPkg::Lock::Timeout=300 chromium',
  ].join('\n');
  const result = spawnSync('sh', ['-c', script], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: INSTALL_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error === undefined && result.status === 0) return null;
  const how = result.error !== undefined ? result.error.message : `exit status ${result.status ?? result.signal}`;
  return `apt-get install chromium failed (${how}):\n${tail(`${result.stdout ?? ''}\n${result.stderr ?? ''}`.trim())}`;
}

let cachedAvailability: ChromiumAvailability | undefined;

/**
 * Whether browser tests can run. Installed: ok. Missing outside CI: not ok, with a reason to print
 * as the skip message. Missing in CI: installs with apt when root (once per process), and throws
 * if Chromium is still missing, so CI never silently skips browser tests.
 */
export function chromiumAvailability(): ChromiumAvailability {
  if (cachedAvailability !== undefined) return cachedAvailability;
  if (chromiumInstalled()) return (cachedAvailability = { ok: true });
  if (!inCI()) {
    return (cachedAvailability = {
      ok: false,
      reason: `Chromium not installed (${CHROMIUM_PATH}); run: apt-get install chromium`,
    });
  }
  const isRoot = process.getuid?.() === 0;
  let detail = 'not running as root, so it cannot be installed here';
  if (isRoot) detail = installChromiumWithApt() ?? 'apt-get reported success';
  if (chromiumInstalled()) return (cachedAvailability = { ok: true });
  throw new Error(
    `CI is set but Chromium is missing (${CHROMIUM_PATH}); browser tests must not be skipped in CI. ` +
      `Install it with: apt-get install chromium. ${detail}`,
  );
}

/** The skip option for a browser suite: false when Chromium is available, else the reason. */
export function skipUnlessChromium(): false | string {
  const availability = chromiumAvailability();
  return availability.ok ? false : availability.reason;
}

export interface LaunchBrowserOptions {
  /** Registers `closeBrowser` for the end of the test or suite: pass `t.after` bound, or node:test's `after`. */
  cleanup?: (fn: () => unknown) => void;
  timeoutMs?: number;
}

/** Launches headless Debian Chromium with a fresh profile. The caller must close it (`closeBrowser`). */
export async function launchBrowser(options: LaunchBrowserOptions = {}): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_ARGS],
    headless: true,
    timeout: options.timeoutMs ?? LAUNCH_TIMEOUT_MS,
  });
  options.cleanup?.(() => closeBrowser(browser));
  return browser;
}

/** Closes the browser, waiting at most a bounded time; never throws. */
export async function closeBrowser(browser: Browser | undefined): Promise<void> {
  if (browser === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout('timeout'), CLOSE_TIMEOUT_MS);
  });
  try {
    const outcome = await Promise.race([browser.close().then(() => 'closed' as const), timedOut]);
    if (outcome === 'timeout') {
      // Playwright also kills the browser when this process exits.
      process.emitWarning(`Chromium did not close within ${CLOSE_TIMEOUT_MS} ms`);
    }
  } catch {
    // already closed or crashed
  } finally {
    clearTimeout(timer);
  }
}

export type PageOptions = BrowserContextOptions;

/**
 * A page in a fresh, isolated context (own cookies and storage). `baseURL` makes `page.goto('/x')`
 * relative to it. Actions and navigations get default time limits. Close it with
 * `page.context().close()`, or use `withPage`, which does that for you.
 */
export async function newPage(browser: Browser, options: PageOptions = {}): Promise<Page> {
  const context = await browser.newContext({
    locale: 'en-US',
    timezoneId: 'UTC',
    viewport: { width: 1280, height: 800 },
    ...options,
  });
  context.setDefaultTimeout(PAGE_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(PAGE_TIMEOUT_MS);
  try {
    return await context.newPage();
  } catch (error) {
    await context.close().catch(() => {});
    throw error;
  }
}

/**
 * Runs `fn` with a fresh page; on failure saves a screenshot named after the test
 * (`test-artifacts/screenshots/failed-<test name>.png`) and rethrows; always closes the context.
 */
export async function withPage<T>(
  t: TestContext,
  browser: Browser,
  options: PageOptions,
  fn: (page: Page) => Promise<T>,
): Promise<T> {
  const page = await newPage(browser, options);
  try {
    return await fn(page);
  } catch (error) {
    try {
      const path = await saveScreenshot(page, `failed-${t.fullName}`);
      t.diagnostic(`screenshot of the failure: ${path}`);
    } catch {
      // the page may be gone; the original error matters more
    }
    throw error;
  } finally {
    await page.context().close().catch(() => {});
  }
}

/** A file-name-safe version of a test or screenshot name. */
function safeName(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|-+$/g, '')
    .slice(0, 150);
  return cleaned === '' ? 'screenshot' : cleaned;
}

/** Saves a full-page PNG to `test-artifacts/screenshots/<name>.png` under the repository root; returns the path. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = resolve(SCREENSHOT_DIR, `${safeName(name)}.png`);
  await page.screenshot({ path, fullPage: true, timeout: SCREENSHOT_TIMEOUT_MS });
  return path;
}

/**
 * Collects what should never happen on our pages: console errors and warnings (CSP violations are
 * reported there), uncaught page errors, and responses of 400 or more. The browser's own
 * /favicon.ico request is left out: there is no icon.
 */
export function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  const isFavicon = (url: string) => new URL(url || 'about:blank').pathname === '/favicon.ico';
  page.on('console', (message) => {
    if (isFavicon(message.location().url)) return;
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('response', (response) => {
    if (response.status() >= 400 && !isFavicon(response.url())) problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  return problems;
}

/**
 * A virtual platform authenticator (resident keys, user verification, always present) for this
 * page, through the DevTools protocol: WebAuthn ceremonies then succeed without a person.
 */
export async function addVirtualAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, authenticatorId };
}
