/** JSON for an inline script: `<` escaped so no value can close the script element. */
const inline = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

/**
 * The page an emailed link opens. It consumes nothing: mail scanners only ever GET it. The
 * reader's click POSTs the token to the consume route, which signs them in.
 */
export function magicLinkPage(input: { prefix: string; site: string; token: string; callbackURL?: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Sign in</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}button{font-size:1.1rem;padding:.6rem 1.2rem}</style>
</head>
<body>
<h1>Sign in</h1>
<p>Press the button to finish signing in.</p>
<button id="go" type="button">Sign in</button>
<p id="status" role="status"></p>
<script>
const input = ${inline(input)};
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
  if (res.ok) { location.href = input.callbackURL || "/"; return; }
  status.textContent = "This link has already been used or has expired. Ask for a new one.";
});
</script>
</body>
</html>`;
}
