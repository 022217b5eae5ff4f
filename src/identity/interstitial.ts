import { actionPage, inlineJson } from "../http/action-page";

/**
 * The page an emailed link opens. It consumes nothing: mail scanners only ever GET it. The
 * reader's click POSTs the token to the consume route, which signs them in.
 */
export function magicLinkPage(input: { prefix: string; site: string; token: string; callbackURL?: string }): string {
  return actionPage(
    "Sign in",
    `<h1>Sign in</h1>
<p>Press the button to finish signing in.</p>
<button id="go" type="button">Sign in</button>
<p id="status" role="status"></p>
<script>
const input = ${inlineJson(input)};
document.getElementById("go").addEventListener("click", async () => {
  const status = document.getElementById("status");
  status.textContent = "Signing in…";
  const body = { token: input.token };
  if (input.callbackURL) body.callbackURL = input.callbackURL;
  const res = await fetch(input.prefix + "/id/magic-link/consume", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-svc-site-id": input.site },
    body: JSON.stringify(body),
  });
  if (res.ok) {
    // Without a callback there is no page of the publisher's to go to: the service's own root is none.
    if (input.callbackURL) location.href = input.callbackURL;
    else status.textContent = "You are signed in. You can close this page and go back to the site.";
    return;
  }
  status.textContent = "This link has already been used or has expired. Ask for a new one.";
});
</script>`,
  );
}
