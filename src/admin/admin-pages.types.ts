/** The admin pages' templates (in `templates/`) and the data each one reads. */
import type { SessionItem } from '../sessions/session-items.ts';
import type { TimeText } from '../web/time-text.ts';

/** A message at the top of a page: what a form just did, or why it did not. */
export interface PageAlert {
  isError: boolean;
  /** Shown small for support; null for a code we do not know (a link's code is never shown back). */
  code: string | null;
  message: string;
}

/** What every admin page gives `admin-header.eta`. */
interface AdminFrame {
  section: 'users' | 'events';
  alerts: PageAlert[];
}

export interface AdminUserItem {
  href: string;
  name: string;
  email: string;
  roles: string[];
  isDisabled: boolean;
  createdAt: TimeText;
}

export interface AdminEventItem {
  createdAt: TimeText;
  type: string;
  /** The account's id with a link to it; null when the event has none. */
  user: { id: string; href: string } | null;
  actor: { id: string; href: string } | null;
  email: string | null;
  ip: string | null;
  userAgent: string | null;
  reason: string | null;
  /** JSON text. */
  details: string | null;
}

export interface AdminPages {
  'admin-users': AdminFrame & {
    query: string;
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
    actions: { roles: string; disable: string; enable: string; endSession: string; endAllSessions: string };
  };
  'admin-events': AdminFrame & {
    filter: { userId: string; type: string };
    types: readonly string[];
    isFiltered: boolean;
    events: AdminEventItem[];
    nextHref: string | null;
    firstHref: string | null;
  };
}
