import { AppError } from "../infra/errors";
import { mailboxOf, type Spend } from "../mail-budget/budgets";

/**
 * What one sign-in link spends of the `sign_in` mail budgets (src/mail-budget): one mail from
 * the recipient's mailbox, the caller's client address and the site (the console's sign-in
 * names the tenant's console as its site). Reader and console links share the mailbox budget.
 */
export function signInSpend(input: { address: string; client: string; site: string }): Spend {
  return [
    ["mailbox", mailboxOf(input.address), 1],
    ["client", input.client, 1],
    ["site", input.site, 1],
  ];
}

export const tooManySignInMails = (retryAfterSeconds: number, rateLimit: Record<string, string> = {}) =>
  new AppError(
    "rate_limited",
    "Too many sign-in links were asked for; try again later.",
    { retryAfterSeconds },
    {
      "retry-after": String(retryAfterSeconds),
      ...rateLimit,
    },
  );
