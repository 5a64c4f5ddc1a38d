/**
 * A hosted form shown again after an error, as the GOV.UK Design System shows one: a summary at the
 * top (`templates/error-summary.eta`: role="alert", "There is a problem", each problem a link to
 * its field), each message beside its field (`templates/field-error.eta`), and each field it
 * concerns marked `aria-invalid` and described by it (`FormView.attributes`). What was typed comes
 * back too (http/form-values.ts), never a password.
 *
 * A page knows which of its fields a code concerns (`FormProblem.fields`, kept beside the page's
 * messages); a problem that concerns no single field (too many attempts, say) is in the summary only.
 * Messages are the catalogs' sentences: a code in the URL is never shown back unless it is known.
 */

/** One thing to fix, in the page's language. */
export interface FormProblem {
  message: string;
  /**
   * The fields it concerns, in the order of the page: the first gets the message and the summary's
   * link; every one is marked invalid and described by that message. Empty: the summary says it.
   */
  fields: readonly string[];
}

export interface FieldError {
  /** The id of the message's element (`<field>-error`), which the field's `aria-describedby` names. */
  id: string;
  message: string;
}

/** What a form's template reads: pass it as `form`, with `include('error-summary', it)` and `include('field-error', { ...it, field })`. */
export interface FormView {
  /**
   * The summary's items: a link to the field (`#<field>`) named by the field's label when the form
   * gave one (its message is beside the field: said once), else the message; a problem of no single
   * field is its message, with no link.
   */
  readonly summary: ReadonlyArray<{ message: string; href: string | null }>;
  /** The error's code, shown small for support; null for none or an unknown one. */
  readonly code: string | null;
  /** What was typed in `field` before (never a password), or ''. */
  value(field: string): string;
  /** The message shown beside `field`, or null (none, or it is shown beside another field it concerns). */
  fieldError(field: string): FieldError | null;
  /**
   * The attributes of `field`'s input, ready to print raw (`<%~ %>`; ids are ours, escaped anyway):
   * `aria-invalid`, `aria-describedby` (its error's message, then `hintIds`) and `autofocus` on the
   * field to fix first. Begins with a space when not empty.
   */
  attributes(field: string, ...hintIds: string[]): string;
}

const escapeAttribute = (text: string) => text.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/**
 * The view of a form with `fieldOrder` (its inputs' ids, in page order) after `problems` (none: a
 * fresh form). Focus goes to the first field with a problem that is still empty (the password
 * after a wrong password, the address kept), else the first with a problem, else the first empty field.
 */
export function formView(options: {
  fieldOrder: readonly string[];
  problems?: readonly FormProblem[];
  code?: string | null;
  values?: Readonly<Record<string, string>>;
  /** The fields' labels, in the page's language: the summary links to a field by its label, not its message again. */
  labels?: Readonly<Record<string, string>>;
}): FormView {
  const { fieldOrder } = options;
  const problems = options.problems ?? [];
  const values = options.values ?? {};
  const value = (field: string) => (Object.hasOwn(values, field) ? values[field]! : '');
  const known = new Set(fieldOrder);
  /** Each field marked invalid, with the id of the message describing it, and whether it is shown there. */
  const invalid = new Map<string, { id: string; message: string; isShownHere: boolean }>();
  const summary: Array<{ message: string; href: string | null }> = [];
  for (const problem of problems) {
    const fields = problem.fields.filter((field) => known.has(field));
    const first = fields[0];
    // The field's label only when this problem's message is the one shown beside it: a second
    // problem of a field already showing another is said in the summary, or nowhere.
    const isShownAtField = first !== undefined && !invalid.has(first);
    const label = isShownAtField && options.labels !== undefined && Object.hasOwn(options.labels, first) ? options.labels[first]! : null;
    summary.push({ message: label ?? problem.message, href: first === undefined ? null : `#${first}` });
    if (first === undefined || invalid.has(first)) continue;
    const id = `${first}-error`;
    for (const field of fields) if (!invalid.has(field)) invalid.set(field, { id, message: problem.message, isShownHere: field === first });
  }
  const firstInvalid = fieldOrder.filter((field) => invalid.has(field));
  const focus = firstInvalid.find((field) => value(field) === '') ?? firstInvalid[0] ?? fieldOrder.find((field) => value(field) === '') ?? fieldOrder[0];
  return {
    summary,
    code: options.code ?? null,
    value,
    fieldError(field) {
      const error = invalid.get(field);
      return error?.isShownHere === true ? { id: error.id, message: error.message } : null;
    },
    attributes(field, ...hintIds) {
      const error = invalid.get(field);
      const describedBy = [...(error === undefined ? [] : [error.id]), ...hintIds];
      let attributes = '';
      if (error !== undefined) attributes += ' aria-invalid="true"';
      if (describedBy.length > 0) attributes += ` aria-describedby="${escapeAttribute(describedBy.join(' '))}"`;
      if (field === focus) attributes += ' autofocus';
      return attributes;
    },
  };
}
