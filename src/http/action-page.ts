/** JSON for an inline script: `<` escaped so no value can close the script element. */
export const inlineJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c");

/**
 * A small page a mailed link opens (sign-in, invitation): it changes nothing on GET, so mail
 * scanners that fetch links act on nothing; the reader's click POSTs from the page's script.
 */
export function actionPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}button{font-size:1.1rem;padding:.6rem 1.2rem;margin-right:.5rem}</style>
</head>
<body>
${body}
</body>
</html>`;
}
