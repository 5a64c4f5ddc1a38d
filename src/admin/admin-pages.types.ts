/** The admin pages' templates (in `templates/`) and the data each one reads. */
import type { SessionItem } from '../sessions/session-items.ts';
import type { TimeText } from '../web/time-text.ts';
import type { EventFilterText, ReadableEvent } from './admin-events.ts';

/** A message at the top of a page: what a form just did, or why it did not. */
export interface PageAlert {
  isError: boolean;
  /** Shown small for support; null for a code we do not know (a link's code is never shown back). */
  code: string | null;
  message: string;
  /** The form field it is about (the field then points to it). */
  field?: string;
}

/** What every admin page gives `admin-header.eta`. */
interface AdminFrame {
  section: 'overview' | 'users' | 'events';
  alerts: PageAlert[];
}

export interface AdminUserItem {
  id: string;
  href: string;
  name: string;
  email: string;
  roles: string[];
  isDisabled: boolean;
  isEmailVerified: boolean;
  createdAt: TimeText;
}

export interface AdminPages {
  'admin-users': AdminFrame & {
    query: string;
    filter: { role: string; status: string; verified: string; factor: string; org: string; signin: string; sort: string };
    isFiltered: boolean;
    /** The second-factor filter is offered (the mfa module is in the list). */
    canFilterFactor: boolean;
    /** The organizations the filter suggests (by slug: the newest, and the one filtered by); empty: not offered. */
    organizations: Array<{ slug: string; name: string }>;
    /** The last-sign-in filter's choices. */
    signInChoices: Array<{ value: string; label: string }>;
    /** The list's own address (the filters' form goes there). */
    listHref: string;
    newUserHref: string;
    bulkAction: string;
    users: AdminUserItem[];
    nextHref: string | null;
    /** Set on every page but the first. */
    firstHref: string | null;
  };
  'admin-user': AdminFrame & {
    /** The sections other modules add (their own HTML), before the sessions. */
    sections: string[];
    csrfToken: string;
    user: {
      id: string;
      name: string;
      email: string;
      roles: string[];
      isEmailVerified: boolean;
      disabledAt: TimeText | null;
      createdAt: TimeText;
      updatedAt: TimeText;
    };
    /** The admin is looking at their own account. */
    isSelf: boolean;
    sessions: SessionItem[];
    eventsHref: string;
    /** The newest events about the user. */
    events: ReadableEvent[];
    actions: { roles: string; disable: string; enable: string; endSession: string; endAllSessions: string };
  };
  'admin-events': AdminFrame & {
    filter: EventFilterText;
    /** Every declared type, named in words. */
    types: Array<{ value: string; label: string }>;
    isFiltered: boolean;
    events: ReadableEvent[];
    exportCsvHref: string;
    exportJsonHref: string;
    nextHref: string | null;
    firstHref: string | null;
  };
  'admin-user-new': AdminFrame & {
    action: string;
    /** Mail reaches people: the user is invited to choose a password (no password field). */
    canInvite: boolean;
    values: { email: string; name: string; roles: string };
  };
  'admin-bulk-confirm': AdminFrame & {
    action: string;
    bulkAction: 'disable' | 'signOut' | 'delete';
    count: number;
    users: Array<{ id: string; name: string; email: string }>;
    cancelHref: string;
  };
  'admin-overview': AdminFrame & {
    /** Each value as it is shown (a number in the page's language, a share). */
    /** `isText`: the value is a phrase (a share and its counts), shown smaller than a single number. */
    figures: Array<{ label: string; value: string; isText?: boolean }>;
    /** `labelHeading` heads the table's first column (a day, a limiter, a queue); with `emptyText` the chart has nothing to draw and says so instead. */
    charts: Array<{ id: string; title: string; labels: readonly string[]; labelHeading: string; emptyText?: string; series: ReadonlyArray<{ name: string; className: string; values: readonly number[] }>; svg: string }>;
  };
}
