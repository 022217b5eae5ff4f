import { html } from "../html";
import { CONSOLE_PATH } from "../model";
import { errorSummary, type FieldError, layout, notice } from "./layout";

export function signInPage(csrf: string, state: { sent?: boolean; errors?: FieldError[]; email?: string } = {}) {
  return layout(
    "Sign in",
    html`${state.errors ? errorSummary("Check the form", state.errors) : ""}
${state.sent ? notice("If that address is a console user, a sign-in link is on its way. It works once, for 15 minutes.") : ""}
<form method="post" action="${CONSOLE_PATH}/sign-in">
<input type="hidden" name="_csrf" value="${csrf}">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="email" required maxlength="254" value="${state.email ?? ""}"${state.errors ? html` aria-invalid="true" aria-describedby="errors"` : ""}>
<div class="actions"><button type="submit">Email me a sign-in link</button></div>
</form>
<p class="muted">Console users are added by an operator: <code>npm run svc -- console-user add you@example.com --role admin</code>.</p>`,
    null,
  );
}

/** The mailed link opens this page: a button signs in (a mail scanner's GET spends nothing). */
export function confirmSignInPage(token: string, csrf: string) {
  return layout(
    "Sign in",
    html`<form method="post" action="${CONSOLE_PATH}/auth">
<input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="token" value="${token}">
<p>Continue to sign in to the console.</p>
<div class="actions"><button type="submit" data-focus>Sign in</button></div>
</form>`,
    null,
  );
}

export function messagePage(title: string, text: string, session: Parameters<typeof layout>[2]) {
  return layout(
    title,
    html`<div class="errors" role="alert" tabindex="-1" data-focus><p>${text}</p></div>
<p><a href="${CONSOLE_PATH}">Back to the console</a></p>`,
    session,
  );
}
