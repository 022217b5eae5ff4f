import { actionPage, inlineJson } from "../http/action-page";

/**
 * The page an invitation mail opens. It changes nothing: mail scanners only ever GET it. The
 * reader's click POSTs to accept-invitation (or reject-invitation) with their own session cookie.
 */
export function invitationPage(input: { prefix: string; site: string; id: string }): string {
  return actionPage(
    "Invitation",
    `<h1>Invitation</h1>
<p>You were invited to join an organization. Sign in with the invited address, then choose.</p>
<button id="accept" type="button">Accept</button>
<button id="reject" type="button">Decline</button>
<p id="status" role="status"></p>
<script>
const input = ${inlineJson(input)};
const messages = { 401: "Sign in with the invited address first.", 403: "This invitation is for another address, or it has expired.", 404: "This invitation is no longer open." };
async function answer(route, done) {
  const status = document.getElementById("status");
  status.textContent = "…";
  const res = await fetch(input.prefix + "/org/" + route, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-svc-site-id": input.site },
    body: JSON.stringify({ invitationId: input.id }),
  });
  status.textContent = res.ok ? done : (messages[res.status] || "Something went wrong. Try again later.");
}
document.getElementById("accept").addEventListener("click", () => answer("accept-invitation", "Welcome aboard: the invitation is accepted."));
document.getElementById("reject").addEventListener("click", () => answer("reject-invitation", "The invitation is declined."));
</script>`,
  );
}
