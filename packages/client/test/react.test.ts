/**
 * The React bindings, rendered by react-dom into a container of a few dozen lines of fake DOM (text
 * nodes only, which is all the component below renders), against a live Gatehouse: the provider
 * settles 'loading', and a component using useSession() re-renders on sign-in and sign-out, those
 * made through the client and through the hook itself. It fails if useSession does not follow the
 * client. Server rendering gives 'loading'.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { createSqliteDatabase } from '../../../test/helpers/databases.ts';
import { createGatehouseClient, memoryStorage } from '../src/index.ts';
import { GatehouseProvider, useSession, type UseSessionResult } from '../src/react.ts';
import { PASSWORD, eventually, startService, type LiveService } from './live.ts';

/** The little of the DOM react-dom touches to mount a root and render text into it. */
class FakeNode {
  readonly nodeType: number;
  readonly nodeName: string;
  readonly tagName: string;
  readonly namespaceURI = null;
  readonly ownerDocument: FakeDocument;
  childNodes: FakeNode[] = [];
  parentNode: FakeNode | null = null;
  nodeValue: string | null = null;
  constructor(nodeType: number, nodeName: string, ownerDocument: FakeDocument) {
    this.nodeType = nodeType;
    this.nodeName = nodeName;
    this.tagName = nodeName;
    this.ownerDocument = ownerDocument;
  }
  get firstChild(): FakeNode | null {
    return this.childNodes[0] ?? null;
  }
  appendChild(child: FakeNode): FakeNode {
    child.parentNode = this;
    this.childNodes.push(child);
    return child;
  }
  insertBefore(child: FakeNode, before: FakeNode): FakeNode {
    child.parentNode = this;
    this.childNodes.splice(this.childNodes.indexOf(before), 0, child);
    return child;
  }
  removeChild(child: FakeNode): FakeNode {
    this.childNodes.splice(this.childNodes.indexOf(child), 1);
    child.parentNode = null;
    return child;
  }
  addEventListener(): void {}
  removeEventListener(): void {}
  get textContent(): string {
    return this.nodeType === 3 ? (this.nodeValue ?? '') : this.childNodes.map((child) => child.textContent).join('');
  }
  set textContent(value: string) {
    this.childNodes = [];
    if (value !== '') this.appendChild(this.ownerDocument.createTextNode(value));
  }
}

class FakeDocument {
  readonly nodeType = 9;
  readonly activeElement = null;
  readonly body = null;
  readonly defaultView = { document: this, HTMLIFrameElement: class {} };
  createTextNode(text: string): FakeNode {
    const node = new FakeNode(3, '#text', this);
    node.nodeValue = text;
    return node;
  }
  addEventListener(): void {}
  removeEventListener(): void {}
}

describe('gatehouse-client/react against a live service', () => {
  let live: LiveService;
  before(async () => {
    live = await startService(await createSqliteDatabase());
  });
  after(() => live?.close());

  it('useSession follows the client: loading, signed-out, signed-in (client or hook), signed-out', async () => {
    const user = await live.user();
    const client = createGatehouseClient({ baseUrl: live.url, storage: memoryStorage() });
    let hook: UseSessionResult | undefined;
    let renders = 0;
    function Status() {
      hook = useSession();
      renders++;
      return `${hook.status}:${hook.session?.user.email ?? ''}`;
    }
    const app = createElement(GatehouseProvider, { client }, createElement(Status));

    assert.equal(renderToString(app), 'loading:', 'server rendering: the state is not known yet');

    const document = new FakeDocument();
    // react-dom reads `window.event` to prioritise updates; this test has no events.
    (globalThis as { window?: unknown }).window = document.defaultView;
    const { createRoot } = await import('react-dom/client');
    const container = new FakeNode(1, 'DIV', document);
    const root = createRoot(container as unknown as Element);
    try {
      root.render(app);
      // The provider asks the client once mounted; with no tokens that is signed-out.
      await eventually(() => container.textContent === 'signed-out:');

      const result = await client.signIn({ email: user.email, password: PASSWORD });
      assert.equal(result.status, 'signed-in');
      await eventually(() => container.textContent === `signed-in:${user.email}`);

      const rendersBefore = renders;
      await client.getSession();
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(renders, rendersBefore, 'the same session again renders nothing');

      assert.deepEqual(await hook!.signOut(), { status: 'signed-out' });
      await eventually(() => container.textContent === 'signed-out:');

      assert.equal((await hook!.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');
      await eventually(() => container.textContent === `signed-in:${user.email}`);
      assert.equal((await hook!.refresh()).status, 'refreshed');
    } finally {
      root.unmount();
      // The unmount is committed in a task of its own, which still reads `window`.
      await new Promise((resolve) => setTimeout(resolve, 20));
      delete (globalThis as { window?: unknown }).window;
    }
  });

  it('useSession outside a provider says what is missing', () => {
    function Orphan() {
      useSession();
      return null;
    }
    assert.throws(() => renderToString(createElement(Orphan)), /GatehouseProvider/);
  });
});
