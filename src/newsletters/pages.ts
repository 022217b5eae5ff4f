import { actionPage } from "../http/action-page";
import type { LinkOutcome } from "./service";

const escapeHtml = (value: string) =>
  value.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

/** Headers of every page a mailed newsletter link opens. */
export const PAGE_HEADERS = Object.freeze({
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
});

/** A page whose one button POSTs back to the same link: a GET (a mail scanner's) changes nothing. */
function buttonPage(title: string, text: string, action: string, button: string): string {
  return actionPage(
    escapeHtml(title),
    `<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(text)}</p>
<form method="post" action="${escapeHtml(action)}">
<button type="submit">${escapeHtml(button)}</button>
</form>`,
  );
}

export function confirmPage(label: string, action: string): string {
  return buttonPage(
    "Confirm your subscription",
    `Confirm that you want to receive ${label}.`,
    action,
    "Confirm subscription",
  );
}

export function unsubscribePage(label: string, action: string): string {
  return buttonPage("Unsubscribe", `Stop receiving ${label}.`, action, "Unsubscribe");
}

const TEXTS: Record<LinkOutcome["kind"], (label: string) => [string, string]> = {
  confirmed: (l) => ["Subscribed", `You are subscribed to ${l}.`],
  already_subscribed: (l) => ["Subscribed", `You are already subscribed to ${l}.`],
  unsubscribed: (l) => ["Unsubscribed", `You will no longer receive ${l}.`],
  unknown_link: () => ["Link not valid", "This link is not valid. Copy the whole link from the email."],
  expired_link: () => ["Link expired", "This confirmation link has expired. Subscribe again to get a new one."],
  no_longer_pending: (l) => [
    "Nothing to confirm",
    `There is no subscription to ${l} waiting for confirmation. Subscribe again to get a new link.`,
  ],
};

/** The status a link's outcome answers with. */
export function outcomeStatus(kind: LinkOutcome["kind"]): number {
  switch (kind) {
    case "unknown_link":
      return 404;
    case "expired_link":
    case "no_longer_pending":
      return 410;
    default:
      return 200;
  }
}

export function outcomePage(outcome: LinkOutcome): string {
  const [title, text] = TEXTS[outcome.kind](outcome.label ?? "this newsletter");
  return actionPage(escapeHtml(title), `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>`);
}
